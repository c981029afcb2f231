/*
 * db.c: see db.h.
 */
#define _GNU_SOURCE
#include "db.h"

#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STR_(x) #x
#define STR(x) STR_(x)
#define STATEMENT "world"
#define SQL "SELECT randomnumber FROM world WHERE id = $1"

static const char RESPONSE_503[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
                                   "Content-Length: 21\r\nConnection: close\r\n\r\nDatabase Unavailable\n";

const char *db_unavailable(size_t *len)
{
    *len = sizeof RESPONSE_503 - 1;
    return RESPONSE_503;
}

enum db_route db_route(const char *target, size_t len, int *queries)
{
    *queries = 1;
    if (len == 3 && memcmp(target, "/db", 3) == 0)
        return DB_ROUTE_DB;
    static const char path[] = "/queries";
    size_t plen = sizeof path - 1;
    if (len < plen || memcmp(target, path, plen) != 0 || (len > plen && target[plen] != '?'))
        return DB_ROUTE_CONTRACT;
    /* the parameter queries=N anywhere in the query string; N as TechEmpower reads it */
    const char *q = target + plen, *end = target + len;
    while (q < end) {
        q++; /* past '?' or '&' */
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *stop = amp ? amp : end;
        if (stop - q > 8 && memcmp(q, "queries=", 8) == 0) {
            long n = 0;
            const char *d = q + 8;
            for (; d < stop && *d >= '0' && *d <= '9' && n <= DB_MAX_QUERIES; d++)
                n = n * 10 + (*d - '0');
            if (d == q + 8 || (d < stop && (*d < '0' || *d > '9')))
                n = 1; /* not a number */
            *queries = n < 1 ? 1 : n > DB_MAX_QUERIES ? DB_MAX_QUERIES : (int)n;
        }
        q = stop;
    }
    return DB_ROUTE_QUERIES;
}

/* Say what went wrong, once per outage; the connection is dropped. */
static void lost(struct db *db, const char *what)
{
    if (!db->said) {
        const char *why = db->conn ? PQerrorMessage(db->conn) : "";
        int n = (int)strlen(why);
        while (n > 0 && why[n - 1] == '\n')
            n--;
        fprintf(stderr, "database: %s%s%.*s\n", what, n ? ": " : "", n, why);
    }
    db->said = 1;
    PQfinish(db->conn);
    db->conn = NULL;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Wait until libpq's socket is ready for `events` or the deadline passes: 1 ready, 0 the deadline, -1 an error. */
static int wait_socket(PGconn *conn, short events, double deadline)
{
    for (;;) {
        struct pollfd p = {.fd = PQsocket(conn), .events = events};
        int left = (int)(deadline - now_ms());
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
            lost(db, "no answer within " STR(DB_TIMEOUT_MS) " ms");
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
    double deadline = now_ms() + DB_TIMEOUT_MS;
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
            lost(db, ready == 0 ? "connect: no answer within " STR(DB_TIMEOUT_MS) " ms" : "connect");
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
    db->said = 0;
    return 0;
}

int db_random_id(struct db *db)
{
    return 1 + (int)(rand_r(&db->seed) % DB_WORLD_ROWS);
}

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
    if (await_answer(db, now_ms() + DB_TIMEOUT_MS) != 0)
        return -1;
    if (!took(db->conn, PGRES_TUPLES_OK, random_number)) {
        lost(db, "query"); /* a connection that answered something else is not reused */
        return -1;
    }
    return 0;
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

size_t db_answer(struct db *db, enum db_route r, int n, int keep_alive, char *out, size_t cap, int *close)
{
    *close = 0;
    if (r == DB_ROUTE_CONTRACT) {
        size_t len;
        const char *resp = http_response(keep_alive, &len);
        memcpy(out, resp, len);
        return len;
    }
    char body[DB_MAX_RESPONSE];
    size_t len = 0;
    if (r == DB_ROUTE_QUERIES)
        body[len++] = '[';
    for (int i = 0; i < n; i++) {
        int id = db_random_id(db), rn;
        if (db_world(db, id, &rn) != 0) {
            *close = 1;
            const char *resp = db_unavailable(&len);
            memcpy(out, resp, len);
            return len;
        }
        if (i > 0)
            body[len++] = ',';
        len += db_json_row(body + len, sizeof body - len, id, rn);
    }
    if (r == DB_ROUTE_QUERIES)
        body[len++] = ']';
    return db_json_response(out, cap, body, len, keep_alive);
}
