"""The database plans: HTTP points that name the route they load and the size of the server's pool of database
connections; closed-loop (wrk), or open-loop (the book's generator) at a fraction of the rate the closed loop answered.

A point's pool (db_pool) is what the server holds open to the database: c-db-threadpool's workers, each with one
connection (--pool), c-db-epoll's pipelined connections (--db-conns), or a Java server's pool (--db-pool: HikariCP's,
r2dbc-pool's, Vert.x's pipelined client's); 0 is the plan's size for that server (pools), else the server's default.
The database runs on the server's core (ServerProcess: db_cpus), so the generator's core
is the generator's alone, and the two compete for one core as a server and its database on one small machine do; the
metadata says so.
"""
from __future__ import annotations

from dataclasses import dataclass

from iobench.kinds.http.plans import HttpPlan, Point
from iobench.kinds.openloop.plans import FRACTIONS

ROUTES = ("/db", "/queries?queries=20")  # one row per request; twenty, each its own query (waiting dominates)


@dataclass(frozen=True)
class DbPoint(Point):
    path: str = "/db"   # the route it loads: /db, or /queries?queries=N
    db_pool: int = 0    # the server's database connections (0: the plan's size for it, or the server's default)
    loop: str = "closed"  # "open": requests at a constant rate (tool openloop), `fraction` of the capacity
    fraction: float = 0.0  # open: this share of the 200s per second its closed point (same route, pool and
    #                       connections, measured before it in the same server process and repeat) answered

    def __post_init__(self):
        if (self.loop == "open") != (self.fraction > 0) or self.loop not in ("closed", "open"):
            raise ValueError(f"a database point is closed, or open at a fraction of capacity: {self}")
        if self.loop == "open" and self.tool != "openloop":
            raise ValueError(f"an open point's generator is openloop (the only one that keeps a schedule): {self}")

    def label(self) -> str:
        pool = f" pool={self.db_pool}" if self.db_pool else ""
        level = f" open at {100 * self.fraction:g}% of capacity" if self.loop == "open" else ""
        return f"{super().label()} {self.path}{pool}{level}"


# How each database server takes its pool's size.
POOL_FLAGS = {"c-db-threadpool": "pool", "c-db-epoll": "--db-conns",
              **{s: "--db-pool" for s in ("java-db-tomcat", "java-db-tomcat-vt", "java-db-webflux", "java-db-vertx",
                                          "java-db-tomcat-vt-21", "java-db-tomcat-vt-21-pg425",
                                          "java-db-tomcat-vt-pg425")}}


# The servers whose pool the harness resizes in place between points (GET /db-pool?size=N: a new pool opened, the old
# closed), so that a sweep of the pool's size runs in one process whose JIT stays warm; the C servers need no warm-up
# and are started again with each size.
IN_PLACE = frozenset(s for s, flag in POOL_FLAGS.items() if flag == "--db-pool")


def pool_options(server_id: str, size: int) -> dict:
    """ServerOptions' fields that give `server_id` a pool of `size` database connections ({} for its default)."""
    if not size:
        return {}
    flag = POOL_FLAGS[server_id]
    return {"pool": size} if flag == "pool" else {"extra": (flag, str(size))}


@dataclass(frozen=True, kw_only=True)
class DbPlan(HttpPlan):
    """Database servers x points of closed-loop HTTP load on a route each; every server with its own database. A Java
    server's JVM warms up under its first point's load for jvm_warmup_s (the profile caps it) before it is measured:
    Spring on the one core it shares with its database compiles for well over the 2 s of a point's own warm-up
    (WebFlux with R2DBC, tried at 64 connections on /queries?queries=20: 86 requests/s in its first 5 s, a steady
    some 870/s only after some 100 s, within 3 % of it at 90 s, the full profile's cap; Spring MVC on Tomcat steady
    after 35 to 45 s, on virtual and on platform threads)."""
    battery: bool = True
    jvm_warmup_s: float = 90.0


DB_MODELS = DbPlan(
    dataset="db-models",
    description="The models with a real wait: c-db-threadpool (16 workers, a PostgreSQL connection each), Spring MVC "
                "on Tomcat with HikariCP (platform, then virtual threads) and WebFlux with R2DBC (16 pooled "
                "connections each), against c-db-epoll and Vert.x (2 pipelined connections each), on TechEmpower's "
                "/db and /queries?queries=20, 16 to 1,024 keep-alive connections, with the database's CPU per request "
                "beside the server's; then each pool from 2 to 256 connections at 256 clients",
    servers=("c-db-threadpool", "java-db-tomcat", "java-db-tomcat-vt", "java-db-webflux", "c-db-epoll",
             "java-db-vertx"),
    points=(tuple(DbPoint("wrk", c, True, path=path) for path in ROUTES for c in (16, 64, 256, 1024))
            + tuple(DbPoint("wrk", 256, True, path=path, db_pool=n) for path in ROUTES
                    for n in (2, 4, 8, 16, 64, 256))),
    # a pool of 4 too: each server's default and one other size (a Java server resized in place, a C server anew)
    smoke_points=(DbPoint("wrk", 16, True, path="/db"), DbPoint("wrk", 16, True, path="/queries?queries=20"),
                  DbPoint("wrk", 16, True, path="/queries?queries=20", db_pool=4)),
    pools=(("c-db-threadpool", 16), ("java-db-tomcat", 16), ("java-db-tomcat-vt", 16), ("java-db-webflux", 16),
           ("c-db-epoll", 2), ("java-db-vertx", 2)),
)

PINNING = ("java-db-tomcat-vt", "java-db-tomcat-vt-21", "java-db-tomcat-vt-21-pg425", "java-db-tomcat-vt-pg425")
DB_PINNING = DbPlan(
    dataset="db-pinning",
    description="Virtual threads pinned: Spring MVC on Tomcat with a virtual thread per request and HikariCP's 16 "
                "connections, on JDK 21 and JDK 25, with pgjdbc 42.7 (its query waits on a ReentrantLock) and 42.5 "
                "(inside synchronized), on /db and /queries?queries=20 at 16, 64 and 256 connections: on one core "
                "only JDK 21 with pgjdbc 42.5 keeps its one carrier while a query waits",
    servers=PINNING,
    points=tuple(DbPoint("wrk", c, True, path=path) for path in ROUTES for c in (16, 64, 256)),
    smoke_points=(DbPoint("wrk", 16, True, path="/db"),),
    pools=tuple((s, 16) for s in PINNING),
)


def _open_sweep(path: str, connections: int, fractions: tuple[float, ...]) -> tuple[DbPoint, ...]:
    """A route's capacity at `connections` (the closed loop, as db-models measures it), then the open loop at each
    fraction of it, on as many connections."""
    return ((DbPoint("wrk", connections, True, path=path),)
            + tuple(DbPoint("openloop", connections, True, path=path, loop="open", fraction=f) for f in fractions))


DB_OPENLOOP = DbPlan(
    dataset="db-openloop",
    description="The models with a real wait, in an open loop: each server's capacity on /queries?queries=20 at 256 "
                "keep-alive connections (wrk, as in db-models), then requests at a constant rate of 10 % to 150 % of "
                "it on as many connections (the book's generator: latency from each request's intended start, a "
                "request past the in-flight cap dropped), with db-models' pools and the database's CPU per request",
    servers=DB_MODELS.servers,
    points=_open_sweep(ROUTES[1], 256, FRACTIONS),
    smoke_points=_open_sweep(ROUTES[1], 16, (0.5, 1.5)),
    pools=DB_MODELS.pools,
    battery=False,  # its servers are db-models', whose battery runs them
)

PLANS = {p.dataset: p for p in (DB_MODELS, DB_PINNING, DB_OPENLOOP)}
