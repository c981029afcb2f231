"""What the HTTP clients' datasets measure: five Java clients (and the C reference) at their points."""
from dataclasses import dataclass
from typing import ClassVar


from iobench.load.clientload import IDS
from iobench.run.plan import Plan

SERVER = "c-epoll"

# The connections each client allows one server when left as shipped (research notes, checked in
# the libraries' sources): Apache HttpClient 5 per route, OkHttp's dispatcher 5 requests per host,
# Jetty 64 connections per destination; async-http-client and the JDK client have no bound.
SHIPPED_CONNECTIONS = {"ahc": None, "apache-hc5": 5, "jdk": None, "jetty": 64, "okhttp": 5}


@dataclass(frozen=True)
class ClientPoint:
    client: str               # clientload.IDS
    experiment: str           # equal, shipped, cpu, burst, park
    delay_ms: float           # the server's delay per request (a timer)
    link_rtt_ms: float = 0.0  # > 0: the server behind an iom-delaylink of this round trip
    connections: int = 0      # N for every client; 0: the client's pool as shipped
    fraction: float = 0.0     # open: offered rate as this share of N / delay
    rate: float = 0.0         # open: or this fixed rate
    mode: str = "open"        # open, burst, park
    requests: int = 0         # burst: this many at once
    park_us: int = 0          # park: this pause before each submit
    warmup_rate: float = 0.0  # open: the warm-up's rate, when the measured one would leave a queue behind
    io_threads: int = 1       # where the client has IO threads (not OkHttp, whose calls each take a thread)
    timeout_s: float = 5.0
    setting: str = ""         # a named change to the client's JVM or library: SETTINGS (empty: as the chapter runs it)

    @property
    def jvm_flags(self) -> tuple[str, ...]:
        return SETTINGS[self.setting]

    @property
    def offered_rps(self) -> float:
        return self.rate or (self.fraction * self.connections * 1000.0 / self.wait_ms if self.wait_ms else 0.0)

    @property
    def wait_ms(self) -> float:
        """What each request waits for at the least: the server's delay and the link's round trip."""
        return self.delay_ms + self.link_rtt_ms

    @property
    def max_in_flight(self) -> int:
        return 4 * self.connections if self.connections else 100_000

    def label(self) -> str:
        how = {"open": f"{self.offered_rps:,.0f}/s", "burst": f"{self.requests:,} at once",
               "park": f"park {self.park_us} us"}[self.mode]
        pool = f"N={self.connections}" if self.connections else "shipped pool"
        link = f", link {self.link_rtt_ms:g} ms" if self.link_rtt_ms else ""
        setting = f", {self.setting}" if self.setting else ""
        return f"{self.client} {self.experiment}: {how}, {pool}, delay {self.delay_ms:g} ms{link}{setting}"


# Changes to one run's client, each testing one candidate cause of Apache HttpClient's collapse in the
# burst (30,000 requests at once on a pool of 10,000): its pool's lock (LAX: a lock per route instead of
# one over the pool), its reactor's timeout sweep (every 10 ms over every connection here; 1 s as
# shipped), and its collector (a young generation of 6 GiB, larger than everything the burst allocates:
# no collection during the run, checked in its log). The pool's size is the points' own `connections`.
SETTINGS: dict[str, tuple[str, ...]] = {
    "": (),
    "pool-lax": ("-Diom.apache.poolPolicy=LAX",),
    "select-1s": ("-Diom.apache.selectIntervalMs=1000",),
    "no-gc": ("-Xms8g", "-Xmx8g", "-Xmn6g"),
}


# The reference: the book's C open-loop generator (iom-openloop) offering the same load through the same
# number of connections, one request on each at a time: what the server, the kernel and the link take,
# with no Java client in the way. Each client's latency and CPU beyond it are the client's own.
REFERENCE = "iom-openloop"


def _each(reference: bool = False, **kw) -> tuple[ClientPoint, ...]:
    return tuple(ClientPoint(client, **kw) for client in IDS + ((REFERENCE,) if reference else ()))


# Offered rates as shares of N / delay, from 10 % to 150 %: light, half, near and beyond the ceiling
# (N = 16: 1,600/s; N = 64: 6,400/s, where one core of client is itself a limit).
FRACTIONS = {16: (0.1, 0.5, 0.9, 1.2, 1.5), 64: (0.1, 0.5, 0.9, 1.2, 1.5)}
LINK_RTT_MS = 10.0
POINTS = (
    *(p for n, fs in FRACTIONS.items() for f in fs
      for p in _each(True, experiment="equal", delay_ms=10, connections=n, fraction=f)),
    # above the ceiling of the smallest shipped pools (5 connections: 500/s), below Jetty's (6,400/s); warmed up
    # below every ceiling (at 2,000/s, 10 s of warm-up left those two 15,000 requests behind: none measured was
    # answered within its window)
    *_each(experiment="shipped", delay_ms=10, rate=2000, warmup_rate=400),
    *_each(True, experiment="cpu", delay_ms=0, connections=16, rate=2000),
    # the write-up's manual loop: 30,000 requests at once, pools as wide as it set them
    *_each(experiment="burst", delay_ms=10, connections=10_000, mode="burst", requests=30_000),
    # the write-up's JMH shape: park, submit, never wait
    *(p for us in (100, 800) for p in _each(experiment="park", delay_ms=10, connections=64, mode="park",
                                            park_us=us)),
    # equal pools again behind the link: its round trip alone, then with the server's 10 ms timer too
    *(p for d in (0, 10) for f in (0.5, 0.9) for p in _each(True, experiment="link", delay_ms=d,
                                                            link_rtt_ms=LINK_RTT_MS, connections=16, fraction=f)),
)
# smoke (the book's test build): every client where the chapter compares all five, two elsewhere
_TWO = ("apache-hc5", "jetty")
_TWO_AND_REFERENCE = (*_TWO, REFERENCE)
SMOKE_POINTS = (
    *_each(True, experiment="equal", delay_ms=10, connections=16, fraction=0.5),
    *(ClientPoint(c, "equal", 10, connections=16, fraction=0.1) for c in _TWO_AND_REFERENCE),
    *_each(experiment="shipped", delay_ms=10, rate=1000, warmup_rate=400),
    *(ClientPoint(c, "cpu", 0, connections=16, rate=1000) for c in _TWO_AND_REFERENCE),
    *(ClientPoint(c, "burst", 10, connections=1000, mode="burst", requests=2000) for c in _TWO),
    *(ClientPoint(c, "park", 10, connections=64, mode="park", park_us=800) for c in _TWO),
    *(ClientPoint(c, "link", d, LINK_RTT_MS, connections=16, fraction=0.5) for d in (0, 10)
      for c in _TWO_AND_REFERENCE),
)


@dataclass(frozen=True, kw_only=True)
class ClientPlan(Plan):
    """Client points against one server held fixed; `only` keeps clients. The client's JVM warms up for the
    profile's jvm_warmup_s before each point, at the same load."""
    server: str = SERVER
    measured_s: float = 4.0

    member: ClassVar[str] = "client"


HTTP_CLIENTS = ClientPlan(
    dataset="http-clients",
    description="five Java HTTP clients (async-http-client, Apache HttpClient 5, the JDK's, Jetty, OkHttp) "
                "against c-epoll answering after a timer: equal pools at fractions of N / delay, shipped "
                "pools, CPU per request, and source 003's two methods (burst, park)",
    points=POINTS,
    smoke_points=SMOKE_POINTS,
)
# The burst again, to find why Apache HttpClient collapses in it: every client with the chapter's pool of
# 10,000 and with the write-up's other, 1,000, each run's timeline and count of connections opened kept;
# then Apache at 10,000 with each candidate cause taken away in turn (SETTINGS).
BURST = dict(experiment="burst", delay_ms=10, mode="burst", requests=30_000)
CLIENT_BURST = ClientPlan(
    dataset="client-burst",
    description="the write-up's burst (30,000 requests at once) for every client with pools of 10,000 and 1,000, "
                "then Apache HttpClient 5 at 10,000 without each candidate cause of its collapse in turn: a lock "
                "per route instead of one pool lock, the shipped 1 s reactor tick, no collection; every run's "
                "timeline (100 ms) kept",
    points=(
        *(p for n in (10_000, 1_000) for p in _each(connections=n, **BURST)),
        *(ClientPoint("apache-hc5", connections=10_000, setting=s, **BURST) for s in SETTINGS if s),
    ),
    smoke_points=tuple(ClientPoint("apache-hc5", "burst", 10, connections=500, mode="burst", requests=1000, setting=s)
                       for s in ("", "pool-lax")),
)
PLANS = {p.dataset: p for p in (HTTP_CLIENTS, CLIENT_BURST)}

def ceiling(point: ClientPoint) -> float | None:
    """Little's law: at most `connections` requests in flight, each taking the delay (and the
    link's round trip), allow connections / wait per second; None where the pool has no bound
    (or there is no wait)."""
    n = point.connections or SHIPPED_CONNECTIONS[point.client]
    return n * 1000.0 / point.wait_ms if n and point.wait_ms else None


