/*
 * sysinfo: what this machine's kernel offers a network server.
 *
 * Prints the kernel release, the cores online, the listen backlog cap
 * (somaxconn), the ephemeral port range, the open-file limit, and whether an
 * epoll instance and an io_uring ring can be created here.
 *
 * Build: make -C code/c build/sysinfo      Run: code/c/build/sysinfo
 * Chapter: book/getting-started/setup-c.md
 *
 * Exit status: 0 when every probe ran (a missing feature is reported, not an
 * error); 1 when a probe itself failed, naming the failing call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Print the first line of a /proc file, or why it could not be read. */
static void print_proc_line(const char *label, const char *path)
{
    char line[256];
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        printf("%-22s unreadable (%s: %s)\n", label, path, strerror(errno));
        return;
    }
    if (fgets(line, sizeof line, f) == NULL)
        line[0] = '\0';
    line[strcspn(line, "\n")] = '\0';
    printf("%-22s %s\n", label, line);
    fclose(f);
}

static void probe_epoll(void)
{
    int fd = epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) {
        printf("%-22s no (epoll_create1: %s)\n", "epoll", strerror(errno));
        return;
    }
    printf("%-22s yes\n", "epoll");
    close(fd);
}

static void probe_io_uring(void)
{
#ifdef __NR_io_uring_setup
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    long fd = syscall(__NR_io_uring_setup, 4, &p);
    if (fd < 0) {
        printf("%-22s no (io_uring_setup: %s)\n", "io_uring", strerror(errno));
        return;
    }
    printf("%-22s yes (features 0x%x)\n", "io_uring", p.features);
    close((int)fd);
#else
    printf("%-22s no (not in these kernel headers)\n", "io_uring");
#endif
}

int main(void)
{
    struct utsname u;
    struct rlimit nofile;

    if (uname(&u) != 0) {
        perror("uname");
        return 1;
    }
    if (getrlimit(RLIMIT_NOFILE, &nofile) != 0) {
        perror("getrlimit");
        return 1;
    }
    printf("%-22s %s %s (%s)\n", "kernel", u.sysname, u.release, u.machine);
    printf("%-22s %ld\n", "cores online", sysconf(_SC_NPROCESSORS_ONLN));
    print_proc_line("somaxconn", "/proc/sys/net/core/somaxconn");
    print_proc_line("ephemeral ports", "/proc/sys/net/ipv4/ip_local_port_range");
    print_proc_line("tcp_tw_reuse", "/proc/sys/net/ipv4/tcp_tw_reuse");
    printf("%-22s soft %llu, hard %llu\n", "open files",
           (unsigned long long)nofile.rlim_cur, (unsigned long long)nofile.rlim_max);
    probe_epoll();
    probe_io_uring();
    return 0;
}
