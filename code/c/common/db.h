/*
 * db.h: what the C servers that wait on a real database share (c-db-threadpool; libpq, PostgreSQL).
 *
 * The routes are TechEmpower's database tests, over the throwaway PostgreSQL the harness makes
 * (iobench.run.postgres: table world, 10,000 rows of id and randomnumber):
 *   GET /db                  one random row, as {"id":N,"randomNumber":M}
 *   GET /queries?queries=N   N random rows, each its own query, as a JSON array; N below 1 or not a
 *                            number counts as 1, above 500 as 500 (TechEmpower's rule); the last queries=
 *                            of the query string counts, read as sent (not percent-decoded), as in every
 *                            database server of the book (iom.db.Db in Java)
 * Routes are matched on the path, before any '?'.
 *   GET /db-stats            {"requests":R,"query_ns":Q}: since the start, the requests that asked the
 *                            database and the time from their first query sent to their last row back
 *                            (no "wait_ns": a request here never waits for a connection of its own: a
 *                            worker holds one, a loop's pipes take every query at once); the harness
 *                            reads it before and after each point, as from the Java servers
 *   any other target         the book's body (http.h), so the contract battery runs as on every server
 * A query that fails, or has no answer within DB_TIMEOUT_MS, is answered 503 and the connection to
 * the client closes; the server's own connection to the database is made again for the next request.
 */
#ifndef IOM_DB_H
#define IOM_DB_H

#include <libpq-fe.h>
#include <stddef.h>

#define DB_WORLD_ROWS 10000
#define DB_MAX_QUERIES 500
#define DB_TIMEOUT_MS 2000
#define DB_STR_(x) #x
#define DB_STR(x) DB_STR_(x)
#define DB_TIMEOUT_SAID DB_STR(DB_TIMEOUT_MS) " ms" /* as messages say it */
/* The longest answer: 500 rows of at most 33 bytes and a comma, the brackets and the head. */
#define DB_MAX_RESPONSE (DB_MAX_QUERIES * 34 + 256)

enum db_route { DB_ROUTE_CONTRACT, DB_ROUTE_DB, DB_ROUTE_QUERIES, DB_ROUTE_STATS };

/* Which route a request target asks for; *queries is how many rows it wants (1 for /db). */
enum db_route db_route(const char *target, size_t len, int *queries);

/* One worker's connection: its string, its statement prepared, its own random sequence. */
struct db {
    const char *dsn;
    PGconn *conn;
    unsigned seed;
};

/* Connect (again) and prepare the statement; 0, or -1 after saying why on stderr (once per outage). */
int db_connect(struct db *db);

/* The randomnumber of row id, waiting at most DB_TIMEOUT_MS; 0, or -1 after saying why on stderr (once per
 * outage): the connection is dropped, and the next call connects again. */
int db_world(struct db *db, int id, int *random_number);

/* One request's rows asked at asked_ms (clock_ms) and all back, or failed, now: counted for GET /db-stats. */
void db_stats_add(double asked_ms);
/* The answer to GET /db-stats: its length in out (at most cap; 256 is enough). */
size_t db_stats_response(int keep_alive, char *out, size_t cap);

/* A random id, 1 to DB_WORLD_ROWS. */
int db_random_id(struct db *db);

/* The whole response to a request of route r with n rows, blocking in db; its length in out (at most
 * cap, DB_MAX_RESPONSE is enough), *close set when the connection must close after it (a 503). */
size_t db_answer(struct db *db, enum db_route r, int n, int keep_alive, char *out, size_t cap, int *close);

/* The JSON of one row, at out (at most cap bytes); its length. */
size_t db_json_row(char *out, size_t cap, int id, int random_number);

/* A 200 with a JSON body, or the 503 (Connection: close): the response's length in out. */
size_t db_json_response(char *out, size_t cap, const char *body, size_t body_len, int keep_alive);
const char *db_unavailable(size_t *len);

/* ---- an event loop's connections (c-db-epoll): non-blocking, in pipeline mode ------------------------------------
 * A loop sends each row's query on one of its pipes without waiting (a Sync after each, as TechEmpower allows), and
 * the answers come back in the order sent; a request is answered when all its rows are. Nothing here blocks: a pipe
 * connects and prepares its statement step by step as its socket becomes ready (db_pipe_step), and a pipe whose
 * oldest query has waited DB_TIMEOUT_MS with no answer to any query meanwhile fails every query it holds
 * (db_pipe_fail): a database that is silent, not one that is slow under a deep pipeline. */

/* The rows a request asks of the database; the loop embeds one in each connection. */
struct db_ask {
    int want, got, failed; /* rows asked; answered; failed (then the answer is a 503) */
    int inflight;          /* queries sent and not yet answered or failed: the ask must outlive them */
    double asked_ms;       /* when its first query went out (clock_ms), for db_stats_add */
    int ids[DB_MAX_QUERIES], values[DB_MAX_QUERIES];
};

enum db_pipe_state { PIPE_DOWN, PIPE_CONNECTING, PIPE_PREPARING, PIPE_READY };

struct db_sent { /* one query in flight: whose, which row, when sent */
    struct db_ask *ask;
    int row;
    double sent_ms;
};

struct db_pipe {
    struct db db;
    enum db_pipe_state state;
    int fd;                  /* libpq's socket while not DOWN, else -1 */
    int want_write;          /* libpq has bytes to send that the socket did not take yet */
    PostgresPollingStatusType polling; /* while CONNECTING: what PQconnectPoll waits for */
    struct db_sent *fifo;    /* queries in flight, oldest first (a ring that grows) */
    size_t head, count, cap;
    double since_ms;         /* when the current step (connecting, preparing) began */
    double answered_ms;      /* when it last answered a query: a deep pipeline that is slow, not silent, goes on */
    double retry_ms;         /* DOWN: connect again no sooner than this (once a second) */
    int watched_fd, watched_mask; /* the event loop's: what its reactor watches (-1: nothing) */
};

/* Called for each ask whose last query was answered or failed. */
typedef void (*db_done_fn)(struct db_ask *ask, void *ctx);

/* Connect now (blocking, within DB_TIMEOUT_MS) and enter pipeline mode: a loop's pipes before READY. 0 or -1. */
int db_pipe_open(struct db_pipe *p);
/* Begin connecting without blocking (a pipe that is DOWN); 0, or -1 if it failed at once. */
int db_pipe_connect(struct db_pipe *p);
/* Go on connecting or preparing as the socket allows (CONNECTING, PREPARING); -1 when that failed. */
int db_pipe_step(struct db_pipe *p);
/* Send the query for row `row` of ask on a READY pipe: 0 once it is queued (answered or failed later, through done;
 * a flush that fails at once fails it, and everything else the pipe held, before this returns), -1 if it could not
 * even be queued (the pipe failed: everything it held failed too, but not this row: the caller counts it). */
int db_pipe_send(struct db_pipe *p, struct db_ask *ask, int row, db_done_fn done, void *ctx);
/* Send what libpq still holds; -1 when the pipe failed. */
int db_pipe_flush(struct db_pipe *p, db_done_fn done, void *ctx);
/* Read what came and hand each answer to its ask (done for each ask complete); -1 when the pipe failed. */
int db_pipe_read(struct db_pipe *p, db_done_fn done, void *ctx);
/* Fail every query in flight (their asks get a failed row each) and drop the connection: DOWN. */
void db_pipe_fail(struct db_pipe *p, const char *why, db_done_fn done, void *ctx);
/* When the pipe's oldest wait (a query, or connecting) runs out; 0 when nothing waits. */
double db_pipe_deadline(const struct db_pipe *p);
/* The mask of reactor.h the pipe's socket should be watched for (R_READABLE = 1, R_WRITABLE = 2). */
int db_pipe_mask(const struct db_pipe *p);
/* Make the response to a complete ask at out (a 503 if a row failed): its length; *close as db_answer's. */
size_t db_ask_response(const struct db_ask *ask, int queries, int keep_alive, char *out, size_t cap, int *close);

#endif
