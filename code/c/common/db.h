/*
 * db.h: what the C servers that wait on a real database share (c-db-threadpool; libpq, PostgreSQL).
 *
 * The routes are TechEmpower's database tests, over the throwaway PostgreSQL the harness makes
 * (iobench.run.postgres: table world, 10,000 rows of id and randomnumber):
 *   GET /db                  one random row, as {"id":N,"randomNumber":M}
 *   GET /queries?queries=N   N random rows, each its own query, as a JSON array; N below 1 or not a
 *                            number counts as 1, above 500 as 500 (TechEmpower's rule)
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
/* The longest answer: 500 rows of at most 33 bytes and a comma, the brackets and the head. */
#define DB_MAX_RESPONSE (DB_MAX_QUERIES * 34 + 256)

enum db_route { DB_ROUTE_CONTRACT, DB_ROUTE_DB, DB_ROUTE_QUERIES };

/* Which route a request target asks for; *queries is how many rows it wants (1 for /db). */
enum db_route db_route(const char *target, size_t len, int *queries);

/* One worker's connection: its string, its statement prepared, its own random sequence. */
struct db {
    const char *dsn;
    PGconn *conn;
    unsigned seed;
    int said; /* an outage is said on stderr once, not once per request */
};

/* Connect (again) and prepare the statement; 0, or -1 after saying why on stderr (once per outage). */
int db_connect(struct db *db);

/* The randomnumber of row id, waiting at most DB_TIMEOUT_MS; 0, or -1 after saying why on stderr (once per
 * outage): the connection is dropped, and the next call connects again. */
int db_world(struct db *db, int id, int *random_number);

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

#endif
