/*
 * iom-delaylink: a slow network link in user space, between two TUN devices.
 *
 * The source measured its sequential server over the internet, where every round trip
 * costs tens of milliseconds, and over 127.0.0.1, where it costs microseconds. This
 * kernel has no netem, so the round trip is made here: every IP packet the kernel
 * routes into one TUN device is read by this program, held for --delay-ms, and written
 * into the other device, in order. Each direction is delayed, so the RTT is twice that.
 * With --rate-mbit the link also has a bandwidth: a packet leaves no earlier than the
 * one before it plus its own serialisation time (size / rate), and a packet that finds
 * --limit packets already held is dropped, as on a real link with a full queue.
 *
 * Usage: iom-delaylink --delay-ms D [--rate-mbit R] [--limit N] DEV_A DEV_B
 * Prints READY once both devices exist; on SIGTERM/SIGINT prints one line of counters
 * to stderr and exits 0. The harness (code/iobench/netlink.py) moves DEV_B into a
 * network namespace and gives both ends an address; the devices vanish when it exits.
 * Build: make -C code/c build/iom-delaylink      Chapter: book/c/source-reproduction.md
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define SLOT 2048        /* one packet; the harness sets MTU 1500, a full slot means larger */
#define BATCH 64         /* packets read from one device per wakeup, so neither starves */
#define EXIT_UNSUPPORTED 77

struct packet {
    int64_t due_ns;      /* when it leaves (CLOCK_MONOTONIC) */
    size_t len;
    unsigned char data[SLOT];
};

/* One direction: packets read from `in`, held in a ring, written to `out` when due. */
struct pipe {
    int in, out;
    const char *from;
    struct packet *ring;
    size_t head, count;
    int64_t last_due_ns; /* departure of the packet before: the rate model's clock */
    long forwarded, dropped_full, dropped_size, dropped_write;
};

static struct {
    int64_t delay_ns;
    double ns_per_byte;  /* 0: unlimited rate */
    size_t limit;
} cfg = {.limit = 1000};

static volatile sig_atomic_t stop_requested;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static _Noreturn void die(const char *what, const char *dev)
{
    fprintf(stderr, "iom-delaylink: %s%s%s: %s\n", what, dev ? " " : "", dev ? dev : "", strerror(errno));
    exit(1);
}

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

// BEGIN open-tun
/* A TUN device named `name` (IP packets, no extra header), non-blocking. It lives as
 * long as this descriptor: when the program exits, the kernel deletes it. */
static int open_tun(const char *name)
{
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENODEV) {
            fprintf(stderr, "iom-delaylink: open /dev/net/tun: %s: no TUN support here\n", strerror(errno));
            exit(EXIT_UNSUPPORTED);
        }
        die("open /dev/net/tun", NULL);
    }
    struct ifreq ifr = {.ifr_flags = IFF_TUN | IFF_NO_PI};
    memcpy(ifr.ifr_name, name, strlen(name) + 1); /* length checked in main */
    if (ioctl(fd, TUNSETIFF, &ifr) != 0)
        die("TUNSETIFF", name);
    return fd;
}
// END open-tun

// BEGIN enqueue
/* Every packet waiting in the kernel on p->in joins the line, or is dropped. */
static void read_packets(struct pipe *p)
{
    for (int i = 0; i < BATCH; i++) {
        struct packet scratch;
        struct packet *pkt = p->count < cfg.limit ? &p->ring[(p->head + p->count) % cfg.limit] : &scratch;
        ssize_t n = read(p->in, pkt->data, SLOT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return;
            die("read", p->from);
        }
        if (pkt == &scratch) {
            p->dropped_full++; /* the queue is full: a real link drops it too */
            continue;
        }
        if (n == SLOT) {
            p->dropped_size++; /* may have been cut short: never forward a truncated packet */
            continue;
        }
        int64_t due = now_ns() + cfg.delay_ns;
        int64_t after_previous = p->last_due_ns + (int64_t)(cfg.ns_per_byte * (double)n);
        if (due < after_previous)
            due = after_previous; /* behind the packets before it: in order, at the link's rate */
        pkt->due_ns = p->last_due_ns = due;
        pkt->len = (size_t)n;
        p->count++;
    }
}
// END enqueue

/* Every packet whose time has come leaves; returns when the next one is due (or -1). */
static int64_t write_due(struct pipe *p, int64_t now)
{
    while (p->count > 0) {
        struct packet *pkt = &p->ring[p->head];
        if (pkt->due_ns > now)
            return pkt->due_ns;
        if (write(p->out, pkt->data, pkt->len) == (ssize_t)pkt->len)
            p->forwarded++;
        else
            p->dropped_write++; /* e.g. the device is down: the kernel refuses the packet */
        p->head = (p->head + 1) % cfg.limit;
        p->count--;
    }
    return -1;
}

static int parse_number(const char *s, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return errno == 0 && end != s && *end == '\0' && *out >= 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"delay-ms", required_argument, NULL, 'd'},
                                         {"rate-mbit", required_argument, NULL, 'r'},
                                         {"limit", required_argument, NULL, 'l'},
                                         {NULL, 0, NULL, 0}};
    double delay_ms = -1, rate_mbit = 0, limit = (double)cfg.limit;
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'd': if (!parse_number(optarg, &delay_ms)) goto usage; break;
        case 'r': if (!parse_number(optarg, &rate_mbit)) goto usage; break;
        case 'l': if (!parse_number(optarg, &limit) || limit < 1 || limit > 1e6) goto usage; break;
        default: goto usage;
        }
    }
    if (optind != argc - 2 || delay_ms < 0 || delay_ms > 60000)
        goto usage;
    const char *names[2] = {argv[optind], argv[optind + 1]};
    for (int i = 0; i < 2; i++) {
        if (names[i][0] == '\0' || strlen(names[i]) >= IFNAMSIZ)
            goto usage;
    }
    if (strcmp(names[0], names[1]) == 0)
        goto usage;
    cfg.delay_ns = (int64_t)(delay_ms * 1e6);
    cfg.ns_per_byte = rate_mbit > 0 ? 8e3 / rate_mbit : 0; /* 8 bits / (R * 1e6 bit/s), in ns */
    cfg.limit = (size_t)limit;

    /* SIGTERM and SIGINT are blocked except inside ppoll: no wakeup is ever missed. */
    sigset_t block, during_poll;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    if (sigprocmask(SIG_BLOCK, &block, &during_poll) != 0)
        die("sigprocmask", NULL);
    sigdelset(&during_poll, SIGTERM);
    sigdelset(&during_poll, SIGINT);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
        die("sigaction", NULL);

    int fds[2] = {open_tun(names[0]), open_tun(names[1])};
    struct pipe pipes[2];
    for (int i = 0; i < 2; i++) {
        pipes[i] = (struct pipe){.in = fds[i], .out = fds[1 - i], .from = names[i]};
        if ((pipes[i].ring = calloc(cfg.limit, sizeof(struct packet))) == NULL)
            die("calloc", NULL);
    }
    printf("READY\n");
    if (fflush(stdout) != 0)
        die("write stdout", NULL);

    // BEGIN loop
    struct pollfd pfd[2] = {{.fd = fds[0], .events = POLLIN}, {.fd = fds[1], .events = POLLIN}};
    while (!stop_requested) {
        int64_t now = now_ns(), next = -1;
        for (int i = 0; i < 2; i++) {
            int64_t due = write_due(&pipes[i], now);
            if (due >= 0 && (next < 0 || due < next))
                next = due;
        }
        struct timespec timeout, *t = NULL; /* nothing held: sleep until a packet comes */
        if (next >= 0) {
            int64_t wait = next - now;
            timeout = (struct timespec){.tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000};
            t = &timeout;
        }
        int n = ppoll(pfd, 2, t, &during_poll);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("ppoll", NULL);
        }
        for (int i = 0; i < 2; i++) {
            if (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL)) {
                errno = EIO;
                die("poll", names[i]);
            }
            if (pfd[i].revents & POLLIN)
                read_packets(&pipes[i]);
        }
    }
    // END loop

    fprintf(stderr, "iom-delaylink: %s->%s forwarded %ld dropped %ld, %s->%s forwarded %ld dropped %ld "
                    "(queue full %ld, oversize %ld, write failed %ld)\n",
            names[0], names[1], pipes[0].forwarded,
            pipes[0].dropped_full + pipes[0].dropped_size + pipes[0].dropped_write, names[1], names[0],
            pipes[1].forwarded, pipes[1].dropped_full + pipes[1].dropped_size + pipes[1].dropped_write,
            pipes[0].dropped_full + pipes[1].dropped_full, pipes[0].dropped_size + pipes[1].dropped_size,
            pipes[0].dropped_write + pipes[1].dropped_write);
    for (int i = 0; i < 2; i++) {
        close(fds[i]);
        free(pipes[i].ring);
    }
    return 0;
usage:
    fprintf(stderr, "usage: %s --delay-ms D [--rate-mbit R] [--limit N] DEV_A DEV_B\n"
                    "  forwards IP packets between two new TUN devices, D ms late each way (RTT = 2D);\n"
                    "  R Mbit/s serialisation (0 = unlimited); at most N packets held per direction\n",
            argv[0]);
    return 1;
}
