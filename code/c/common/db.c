/*
 * db.c: see db.h.
 */
#define _GNU_SOURCE
#include "db.h"

#include "http.h"
#include "timers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STATEMENT "world"
#define SQL "SELECT randomnumber FROM world WHERE id = $1"

static const char RESPONSE_503[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
                                   "Content-Length: 21\r\nConnection: close\r\n\r\nDatabase Unavailable\n";

const char *db_unavailable(size_t *len)
{
    *len = sizeof RESPONSE_503 - 1;
    return RESPONSE_503;
}

/* One value of queries=: all digits, else 1; then within 1 to DB_MAX_QUERIES (TechEmpower's rule). */
static int db_count(const char *d, const char *stop)
{
    if (d == stop)
        return 1;
    long n = 0;
    for (; d < stop; d++) {
        if (*d < '0' || *d > '9')
            return 1; /* not a number, however long the digits before */
        if (n <= DB_MAX_QUERIES)
            n = n * 10 + (*d - '0');
    }
    return n < 1 ? 1 : n > DB_MAX_QUERIES ? DB_MAX_QUERIES : (int)n;
}

enum db_route db_route(const char *target, size_t len, int *queries)
{
    *queries = 1;
    const char *mark = memchr(target, '?', len);
    size_t path = mark ? (size_t)(mark - target) : len; /* routed on the path; the query string is read raw */
    if (path == 3 && memcmp(target, "/db", 3) == 0)
        return DB_ROUTE_DB;
    if (path == 9 && memcmp(target, "/db-stats", 9) == 0)
        return DB_ROUTE_STATS;
    if (path != 8 || memcmp(target, "/queries", 8) != 0)
        return DB_ROUTE_CONTRACT;
    /* the last queries= parameter counts, as the query string has it (not percent-decoded), even an empty one */
    const char *end = target + len;
    for (const char *q = mark; q != NULL && q < end;) {
        q++; /* past '?' or '&' */
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *stop = amp ? amp : end;
        if (stop - q >= 8 && memcmp(q, "queries=", 8) == 0)
            *queries = db_count(q + 8, stop);
        q = amp;
    }
    return DB_ROUTE_QUERIES;
}

/* An outage is said once for the whole process, however many workers or pipes meet it; a connection that is made
 * and prepared again ends it (the next failure is a new outage, said again). */
static int outage_said;

/* Say what went wrong, once per outage; the connection is dropped. */
static void lost(struct db *db, const char *what)
{
    if (!__atomic_exchange_n(&outage_said, 1, __ATOMIC_RELAXED)) {
        const char *why = db->conn ? PQerrorMessage(db->conn) : "";
        int n = (int)strlen(why);
        while (n > 0 && why[n - 1] == '\n')
            n--;
        fprintf(stderr, "database: %s%s%.*s\n", what, n ? ": " : "", n, why);
    }
    PQfinish(db->conn);
    db->conn = NULL;
}

/* Wait until libpq's socket is ready for `events` or the deadline passes: 1 ready, 0 the deadline, -1 an error. */
static int wait_socket(PGconn *conn, short events, double deadline)
{
    for (;;) {
        struct pollfd p = {.fd = PQsocket(conn), .events = events};
        int left = (int)(deadline - clock_ms());
        int n = left > 0 ? poll(&p, 1, left) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 ? -1 : n > 0;
    }
}

/* Read until the command sent is answered in full (its results can be taken without blocking), by the deadline:
 * 0, or -1 after lost() said which. */
static int await_answer(struct db *db, double deadline)
{
    while (PQisBusy(db->conn)) {
        int ready = wait_socket(db->conn, POLLIN, deadline);
        if (ready == 0) {
            lost(db, "no answer within " DB_TIMEOUT_SAID);
            return -1;
        }
        if (ready < 0 || !PQconsumeInput(db->conn)) {
            lost(db, "receive");
            return -1;
        }
    }
    return 0;
}

/* Every result of the command answered; 1 if one of them had status `want` (and, for rows, exactly one row). */
static int took(PGconn *conn, ExecStatusType want, int *random_number)
{
    int ok = 0;
    for (PGresult *r; (r = PQgetResult(conn)) != NULL; PQclear(r)) {
        if (PQresultStatus(r) != want)
            continue;
        if (want != PGRES_TUPLES_OK)
            ok = 1;
        else if (PQntuples(r) == 1 && PQgetlength(r, 0, 0) == 4) {
            uint32_t v;
            memcpy(&v, PQgetvalue(r, 0, 0), 4);
            *random_number = (int)ntohl(v);
            ok = 1;
        }
    }
    return ok;
}

/* Connecting and preparing the statement share one deadline: a database that is down fails at once (its socket is
 * gone), one that does not answer after DB_TIMEOUT_MS, never later. */
int db_connect(struct db *db)
{
    if (db->conn != NULL)
        PQfinish(db->conn);
    double deadline = clock_ms() + DB_TIMEOUT_MS;
    db->conn = PQconnectStart(db->dsn);
    if (db->conn == NULL) {
        lost(db, "connect: out of memory");
        return -1;
    }
    for (PostgresPollingStatusType st = PGRES_POLLING_WRITING; st != PGRES_POLLING_OK;) {
        if (st == PGRES_POLLING_FAILED || PQstatus(db->conn) == CONNECTION_BAD) {
            lost(db, "connect");
            return -1;
        }
        int ready = wait_socket(db->conn, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
        if (ready <= 0) {
            lost(db, ready == 0 ? "connect: no answer within " DB_TIMEOUT_SAID : "connect");
            return -1;
        }
        st = PQconnectPoll(db->conn);
    }
    if (!PQsendPrepare(db->conn, STATEMENT, SQL, 1, NULL)) {
        lost(db, "prepare");
        return -1;
    }
    if (await_answer(db, deadline) != 0)
        return -1;
    if (!took(db->conn, PGRES_COMMAND_OK, NULL)) {
        lost(db, "prepare");
        return -1;
    }
    __atomic_store_n(&outage_said, 0, __ATOMIC_RELAXED);
    return 0;
}

int db_random_id(struct db *db)
{
    return 1 + (int)(rand_r(&db->seed) % DB_WORLD_ROWS);
}

// BEGIN db-world
/* The query sent, then its answer awaited on libpq's socket up to the deadline: a database that does not answer is a
 * 503 after DB_TIMEOUT_MS, never a worker stuck for good. */
int db_world(struct db *db, int id, int *random_number)
{
    if (db->conn == NULL && db_connect(db) != 0)
        return -1;
    uint32_t be = htonl((uint32_t)id);
    const char *values[1] = {(const char *)&be};
    int lengths[1] = {sizeof be}, formats[1] = {1};
    if (!PQsendQueryPrepared(db->conn, STATEMENT, 1, values, lengths, formats, 1)) {
        lost(db, "send");
        return -1;
    }
    if (await_answer(db, clock_ms() + DB_TIMEOUT_MS) != 0)
        return -1;
    if (!took(db->conn, PGRES_TUPLES_OK, random_number)) {
        lost(db, "query"); /* a connection that answered something else is not reused */
        return -1;
    }
    return 0;
}
// END db-world

/* Since the start, across every thread: relaxed atomics (a reader wants totals, not an order). */
static unsigned long long stats_requests, stats_query_ns;

void db_stats_add(double asked_ms)
{
    double ns = (clock_ms() - asked_ms) * 1e6;
    __atomic_fetch_add(&stats_requests, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&stats_query_ns, (unsigned long long)(ns > 0 ? ns : 0), __ATOMIC_RELAXED);
}

size_t db_stats_response(int keep_alive, char *out, size_t cap)
{
    char body[128];
    int n = snprintf(body, sizeof body, "{\"requests\":%llu,\"query_ns\":%llu}",
                     __atomic_load_n(&stats_requests, __ATOMIC_RELAXED),
                     __atomic_load_n(&stats_query_ns, __ATOMIC_RELAXED));
    return n < 0 || (size_t)n >= sizeof body ? 0 : db_json_response(out, cap, body, (size_t)n, keep_alive);
}

size_t db_json_row(char *out, size_t cap, int id, int random_number)
{
    int n = snprintf(out, cap, "{\"id\":%d,\"randomNumber\":%d}", id, random_number);
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

size_t db_json_response(char *out, size_t cap, const char *body, size_t body_len, int keep_alive)
{
    int n = snprintf(out, cap,
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: %s\r\n\r\n",
                     body_len, keep_alive ? "keep-alive" : "close");
    if (n < 0 || (size_t)n + body_len > cap)
        return 0;
    memcpy(out + n, body, body_len);
    return (size_t)n + body_len;
}

size_t db_ask_response(const struct db_ask *ask, int queries, int keep_alive, char *out, size_t cap, int *close)
{
    *close = ask->failed > 0;
    if (*close) {
        size_t len;
        const char *resp = db_unavailable(&len);
        memcpy(out, resp, len);
        return len;
    }
    char body[DB_MAX_RESPONSE];
    size_t len = 0;
    if (queries)
        body[len++] = '[';
    for (int i = 0; i < ask->want; i++) {
        if (i > 0)
            body[len++] = ',';
        len += db_json_row(body + len, sizeof body - len, ask->ids[i], ask->values[i]);
    }
    if (queries)
        body[len++] = ']';
    return db_json_response(out, cap, body, len, keep_alive);
}

size_t db_answer(struct db *db, enum db_route r, int n, int keep_alive, char *out, size_t cap, int *close)
{
    *close = 0;
    if (r == DB_ROUTE_CONTRACT) {
        size_t len;
        const char *resp = http_response(keep_alive, &len);
        memcpy(out, resp, len);
        return len;
    }
    if (r == DB_ROUTE_STATS)
        return db_stats_response(keep_alive, out, cap);
    static __thread struct db_ask ask;
    ask = (struct db_ask){.want = n, .asked_ms = clock_ms()};
    for (int i = 0; i < n && !ask.failed; i++) {
        ask.ids[i] = db_random_id(db);
        if (db_world(db, ask.ids[i], &ask.values[i]) != 0)
            ask.failed++;
    }
    db_stats_add(ask.asked_ms);
    return db_ask_response(&ask, r == DB_ROUTE_QUERIES, keep_alive, out, cap, close);
}

/* ---- pipes ---------------------------------------------------------------------------------------------------- */

static void pipe_drop(struct db_pipe *p)
{
    PQfinish(p->db.conn);
    p->db.conn = NULL;
    p->retry_ms = clock_ms() + 1000;
    p->state = PIPE_DOWN;
    p->fd = -1;
    p->want_write = 0;
}

int db_pipe_open(struct db_pipe *p)
{
    p->fd = -1;
    if (db_connect(&p->db) != 0)
        return -1;
    if (PQsetnonblocking(p->db.conn, 1) != 0 || !PQenterPipelineMode(p->db.conn)) {
        lost(&p->db, "pipeline mode");
        return -1;
    }
    p->state = PIPE_READY;
    p->fd = PQsocket(p->db.conn);
    return 0;
}

int db_pipe_connect(struct db_pipe *p)
{
    p->since_ms = clock_ms();
    p->db.conn = PQconnectStart(p->db.dsn);
    if (p->db.conn == NULL || PQstatus(p->db.conn) == CONNECTION_BAD || PQsetnonblocking(p->db.conn, 1) != 0) {
        lost(&p->db, "connect");
        pipe_drop(p);
        return -1;
    }
    p->state = PIPE_CONNECTING;
    p->polling = PGRES_POLLING_WRITING;
    p->fd = PQsocket(p->db.conn);
    return 0;
}

int db_pipe_step(struct db_pipe *p)
{
    if (p->state == PIPE_CONNECTING) {
        p->polling = PQconnectPoll(p->db.conn);
        p->fd = PQsocket(p->db.conn); /* the caller watches the socket it has now */
        if (p->polling == PGRES_POLLING_FAILED) {
            lost(&p->db, "connect");
            pipe_drop(p);
            return -1;
        }
        if (p->polling != PGRES_POLLING_OK)
            return 0;
        if (!PQsendPrepare(p->db.conn, STATEMENT, SQL, 1, NULL)) {
            lost(&p->db, "prepare");
            pipe_drop(p);
            return -1;
        }
        p->state = PIPE_PREPARING;
        p->since_ms = clock_ms();
        p->want_write = PQflush(p->db.conn) == 1;
        return 0;
    }
    if (p->state != PIPE_PREPARING)
        return 0;
    if (p->want_write && (p->want_write = PQflush(p->db.conn)) < 0) {
        lost(&p->db, "prepare");
        pipe_drop(p);
        return -1;
    }
    if (!PQconsumeInput(p->db.conn)) {
        lost(&p->db, "prepare");
        pipe_drop(p);
        return -1;
    }
    if (PQisBusy(p->db.conn))
        return 0;
    if (!took(p->db.conn, PGRES_COMMAND_OK, NULL) || !PQenterPipelineMode(p->db.conn)) {
        lost(&p->db, "prepare");
        pipe_drop(p);
        return -1;
    }
    p->state = PIPE_READY;
    __atomic_store_n(&outage_said, 0, __ATOMIC_RELAXED);
    return 0;
}

/* One query answered (value != NULL) or failed: the oldest in flight. */
static void settle(struct db_pipe *p, const int *value, db_done_fn done, void *ctx)
{
    struct db_sent q = p->fifo[p->head];
    p->head = (p->head + 1) % p->cap;
    p->count--;
    if (value != NULL)
        p->answered_ms = clock_ms();
    struct db_ask *ask = q.ask;
    if (value != NULL) {
        ask->values[q.row] = *value;
        ask->got++;
    } else
        ask->failed++;
    ask->inflight--;
    if (ask->got + ask->failed == ask->want)
        done(ask, ctx);
}

void db_pipe_fail(struct db_pipe *p, const char *why, db_done_fn done, void *ctx)
{
    lost(&p->db, why);
    pipe_drop(p);
    while (p->count > 0)
        settle(p, NULL, done, ctx);
}

int db_pipe_send(struct db_pipe *p, struct db_ask *ask, int row, db_done_fn done, void *ctx)
{
    if (p->count == p->cap) { /* grow the ring, oldest first */
        size_t cap = p->cap ? 2 * p->cap : 64;
        struct db_sent *fifo = malloc(cap * sizeof *fifo);
        if (fifo == NULL) {
            db_pipe_fail(p, "out of memory", done, ctx);
            return -1;
        }
        for (size_t i = 0; i < p->count; i++)
            fifo[i] = p->fifo[(p->head + i) % p->cap];
        free(p->fifo);
        p->fifo = fifo;
        p->head = 0;
        p->cap = cap;
    }
    uint32_t be = htonl((uint32_t)ask->ids[row]);
    const char *values[1] = {(const char *)&be};
    int lengths[1] = {sizeof be}, formats[1] = {1};
    if (!PQsendQueryPrepared(p->db.conn, STATEMENT, 1, values, lengths, formats, 1) || !PQpipelineSync(p->db.conn)) {
        db_pipe_fail(p, "send", done, ctx);
        return -1;
    }
    p->fifo[(p->head + p->count++) % p->cap] = (struct db_sent){ask, row, clock_ms()};
    ask->inflight++;
    /* Queued: from here the row is settled by the pipe, answered or failed (a flush that fails settles it through
     * db_pipe_fail, done included), so the caller must not count it again. */
    (void)db_pipe_flush(p, done, ctx);
    return 0;
}

int db_pipe_flush(struct db_pipe *p, db_done_fn done, void *ctx)
{
    int f = PQflush(p->db.conn);
    if (f < 0) {
        db_pipe_fail(p, "send", done, ctx);
        return -1;
    }
    p->want_write = f;
    return 0;
}

int db_pipe_read(struct db_pipe *p, db_done_fn done, void *ctx)
{
    if (!PQconsumeInput(p->db.conn)) {
        db_pipe_fail(p, "receive", done, ctx);
        return -1;
    }
    int value = 0, have = 0, bad = 0, ends = 0; /* the oldest query's row, until its Sync comes */
    while (p->count > 0 && !PQisBusy(p->db.conn)) {
        PGresult *r = PQgetResult(p->db.conn);
        if (r == NULL) {
            if (++ends > 1)
                break; /* nothing more until more comes in */
            continue;  /* the end of one query's results; its Sync follows */
        }
        ends = 0;
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_PIPELINE_SYNC) {
            settle(p, have && !bad ? &value : NULL, done, ctx);
            have = bad = 0;
        } else if (st == PGRES_TUPLES_OK && PQntuples(r) == 1 && PQgetlength(r, 0, 0) == 4) {
            uint32_t v;
            memcpy(&v, PQgetvalue(r, 0, 0), 4);
            value = (int)ntohl(v);
            have = 1;
        } else
            bad = 1; /* an error, an aborted query, no such row */
        PQclear(r);
    }
    if (PQstatus(p->db.conn) == CONNECTION_BAD) {
        db_pipe_fail(p, "connection", done, ctx);
        return -1;
    }
    return 0;
}

double db_pipe_deadline(const struct db_pipe *p)
{
    if (p->state == PIPE_CONNECTING || p->state == PIPE_PREPARING)
        return p->since_ms + DB_TIMEOUT_MS;
    if (p->state == PIPE_READY && p->count > 0) { /* silent for DB_TIMEOUT_MS since its oldest query or last answer */
        double since = p->fifo[p->head].sent_ms;
        return (p->answered_ms > since ? p->answered_ms : since) + DB_TIMEOUT_MS;
    }
    return 0;
}

int db_pipe_mask(const struct db_pipe *p)
{
    if (p->state == PIPE_CONNECTING)
        return p->polling == PGRES_POLLING_READING ? 1 : 2;
    return 1 | (p->want_write ? 2 : 0);
}
