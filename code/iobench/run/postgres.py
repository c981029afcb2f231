"""A throwaway PostgreSQL for the servers that wait on a real database: made, started and always removed here.

    with Postgres(cpus="0") as db:
        db.dsn                        # "host=127.0.0.1 port=… dbname=bench user=bench"
        db.query("SELECT count(*) FROM world")   # "10000"
        db.usage_s()                  # its CPU seconds (every backend), as a server's are counted
    # here every process of it is gone, and so is its folder

Never the system's cluster (Debian's `postgresql@15-main`): `initdb` makes a cluster in a temporary folder, the
postmaster listens on a Unix socket in that folder and on loopback (a port that was free a moment ago), and leaving
the block stops it (a fast shutdown, SIGINT; then SIGKILL to what is left) and removes the folder. That happens on
success, on exceptions and on Ctrl-C; the postmaster also dies with the harness (PR_SET_PDEATHSIG), and its backends
exit when it does. A folder left by a harness that was killed outright is removed by the next start (`sweep`).

PostgreSQL refuses to run as root: as root, the cluster belongs to, and runs as, an unprivileged user (Debian's
`postgres`, which its packages create); otherwise as the calling user.

The tables are TechEmpower's: `World` (10,000 rows of id and randomNumber, 1 to 10,000) and `Fortune` (the twelve
messages its Fortunes test specifies), in database `bench`. The random numbers are drawn from a fixed seed, so two
runs hold the same rows. The settings (SETTINGS, recorded by `metadata()`) suit a database thrown away after the run:
nothing is flushed to disk (fsync, synchronous_commit and full_page_writes off); everything it reads is in memory.
"""
from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from iobench.run import procs
from iobench.run.cgroup import CpuGroup

PREFIX = "iobench-pg-"
DATABASE = "bench"
USER = "bench"
WORLD_ROWS = 10_000
# The settings every run of the book uses, recorded beside its data. max_connections: twice the largest pool a study
# sweeps (256), since a Java server resized in place opens its new pool before it closes the old, and a spare;
# shared_buffers holds both tables many times over.
SETTINGS = {
    "max_connections": "600",
    "shared_buffers": "128MB",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "logging_collector": "off",
    "log_min_messages": "warning",
}
FORTUNES = (  # TechEmpower's Fortunes test: its twelve rows, as its setup scripts insert them
    "fortune: No such file or directory",
    "A computer scientist is someone who fixes things that aren't broken.",
    "After enough decimal places, nobody gives a damn.",
    "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1",
    "A computer program does what you tell it to do, not what you want it to do.",
    "Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen",
    "Any program that runs right is obsolete.",
    "A list is only as strong as its weakest link. — Donald Knuth",
    "Feature: A bug with seniority.",
    "Computers make very fast, very accurate mistakes.",
    '<script>alert("This should not be displayed in a browser alert box.");</script>',
    "フレームワークのベンチマーク",
)
INSTALL = "apt-get install postgresql-15 (the README's first command installs it)"


class DatabaseError(Exception):
    """The database could not be made, did not start, or did not stop: the message says which, in its words."""


def bindir() -> Path:
    """Where the server's programs are: Debian keeps them off PATH, in /usr/lib/postgresql/<major>/bin (the newest
    major installed); elsewhere, wherever `initdb` is on PATH."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    raise DatabaseError(f"PostgreSQL's server is not installed (no initdb): {INSTALL}")


def run_as() -> pwd.struct_passwd | None:
    """The user the cluster runs as: None (the caller) unless the caller is root, which PostgreSQL refuses."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        raise DatabaseError("PostgreSQL refuses to run as root, and there is no unprivileged 'postgres' user to run "
                            f"it as: {INSTALL}, which creates it") from None


def describe() -> str:
    """The server's version as it says it ("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)")."""
    out = subprocess.run([str(bindir() / "postgres"), "--version"], capture_output=True, text=True)
    return out.stdout.strip() or out.stderr.strip()


def sweep(root: Path | None = None) -> list[Path]:
    """Remove the folders of clusters whose harness was killed outright (no postmaster runs in them any more)."""
    removed = []
    for folder in Path(root or tempfile.gettempdir()).glob(PREFIX + "*"):
        pid_file = folder / "data" / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().split()[0])
            if procs.stat_fields(pid)[0] != b"Z":
                continue  # still running: someone else's (a zombie is dead, only not yet reaped)
        except (OSError, ValueError, IndexError):
            pass
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


class Postgres(procs.Started):
    """One throwaway cluster with the book's tables. A context manager: leaving the block always removes it."""

    def __init__(self, cpus: str | None = None, start_timeout: float = 60.0, stop_timeout: float = 10.0,
                 settings: dict[str, str] | None = None, account_cpu: bool = True):
        self.cpus = cpus
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.settings = {**SETTINGS, **(settings or {})}
        self.account_cpu = account_cpu
        self.bin = bindir()
        self.user = run_as()
        self.folder: Path | None = None
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.cpu_group: CpuGroup | None = None
        self.version = ""
        self.exit_code: int | None = None

    # -- where -------------------------------------------------------------------------------
    @property
    def data_dir(self) -> Path:
        assert self.folder
        return self.folder / "data"

    @property
    def socket_dir(self) -> Path:
        assert self.folder
        return self.folder / "socket"

    @property
    def log_path(self) -> Path:
        assert self.folder
        return self.folder / "postgres.log"

    @property
    def dsn(self) -> str:
        """libpq's connection string on loopback: what every database server of the book is given. Loopback, not the
        Unix socket, because the Java drivers (pgjdbc, R2DBC, Vert.x) reach PostgreSQL only over TCP without native
        libraries, and the C servers must take the same path for their database's costs to compare."""
        return f"host=127.0.0.1 port={self.port} dbname={DATABASE} user={USER}"

    @property
    def socket_dsn(self) -> str:
        """The same database over its Unix socket (the harness's own psql and pg_isready use it)."""
        return f"host={self.socket_dir} port={self.port} dbname={DATABASE} user={USER}"

    # -- lifecycle ---------------------------------------------------------------------------
    def _as_user(self) -> None:
        """In the child, before exec: drop to the cluster's user (as root), then die with the harness again (a
        change of user clears PR_SET_PDEATHSIG)."""
        if self.user is not None:
            os.setgroups([])
            os.setgid(self.user.pw_gid)
            os.setuid(self.user.pw_uid)
            procs._die_with_parent()

    def _run(self, argv: list[str], what: str, timeout: float = 120.0) -> str:
        env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=self.folder,
                             preexec_fn=self._as_user if self.user is not None else None)
        if out.returncode != 0:
            raise DatabaseError(f"{what} failed ({procs.exit_status(out.returncode)}): "
                                f"{(out.stderr or out.stdout).strip()[-1500:]}")
        return out.stdout

    def start(self) -> None:
        sweep()
        self.folder = Path(tempfile.mkdtemp(prefix=PREFIX))
        self.socket_dir.mkdir()
        if self.user is not None:
            for path in (self.folder, self.socket_dir):
                os.chown(path, self.user.pw_uid, self.user.pw_gid)
        self.version = self._run([str(self.bin / "postgres"), "--version"], "postgres --version").strip()
        self._run([str(self.bin / "initdb"), "-D", str(self.data_dir), "-U", USER, "-A", "trust", "-E", "UTF8",
                   "--locale=C.UTF-8", "--no-sync", "--no-instructions"], "initdb")
        last = ""
        for _ in range(3):  # a port free a moment ago can be taken before the postmaster binds it
            self.port = procs.free_port()
            try:
                self._start_postmaster()
                break
            except DatabaseError as exc:
                last = str(exc)
                if "could not bind" not in last and "Address already in use" not in last:
                    raise
        else:
            raise DatabaseError(last)
        self._load_tables()

    def _start_postmaster(self) -> None:
        argv = [str(self.bin / "postgres"), "-D", str(self.data_dir), "-k", str(self.socket_dir),
                "-h", "127.0.0.1", "-p", str(self.port)]
        for name, value in self.settings.items():
            argv += ["-c", f"{name}={value}"]
        if self.cpus is not None:
            argv = ["taskset", "-c", self.cpus] + argv
        self.cpu_group = CpuGroup.create("postgres") if self.account_cpu else None
        group = self.cpu_group

        def in_child() -> None:
            if group is not None:
                group.join()  # as root, before the user changes: the group's file is root's
            self._as_user()

        log = open(self.log_path, "ab")
        try:
            self.proc = procs.spawn(argv, cwd=self.folder, stdout=log, stderr=log, in_child=in_child)
        finally:
            log.close()
        deadline = time.monotonic() + self.start_timeout
        socket_file = self.socket_dir / f".s.PGSQL.{self.port}"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self._forget_proc()
                raise DatabaseError(f"postgres exited before it was ready ({procs.exit_status(code)}): "
                                    f"{self.log_tail()}")
            if socket_file.exists() and self._ready():
                return
            time.sleep(0.05)
        raise DatabaseError(f"postgres not ready within {self.start_timeout:g} s: {self.log_tail()}")

    def _ready(self) -> bool:
        out = subprocess.run([str(self.bin / "pg_isready"), "-q", "-h", str(self.socket_dir), "-p", str(self.port),
                              "-d", "postgres", "-U", USER], capture_output=True)
        return out.returncode == 0

    def _forget_proc(self) -> None:
        self.proc = None
        if self.cpu_group is not None:
            self.cpu_group.remove()
            self.cpu_group = None

    def _load_tables(self) -> None:
        self.psql(f"CREATE DATABASE {DATABASE}", database="postgres")
        fortunes = ",\n".join(f"({i}, '{m.replace(chr(39), chr(39) * 2)}')" for i, m in enumerate(FORTUNES, 1))
        self.psql(f"""
            SELECT setseed(0.5);
            CREATE TABLE world (id integer PRIMARY KEY, randomnumber integer NOT NULL DEFAULT 0);
            INSERT INTO world SELECT x, 1 + floor(random() * {WORLD_ROWS})::integer
                FROM generate_series(1, {WORLD_ROWS}) AS x;
            CREATE TABLE fortune (id integer PRIMARY KEY, message varchar(2048) NOT NULL);
            INSERT INTO fortune VALUES {fortunes};
            VACUUM ANALYZE world;
            VACUUM ANALYZE fortune;
        """)

    def psql(self, sql: str, database: str = DATABASE) -> str:
        """Run SQL (several statements) through psql over the socket; its unaligned, tuples-only output."""
        out = subprocess.run([str(self.bin / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                              "-h", str(self.socket_dir), "-p", str(self.port), "-U", USER, "-d", database],
                             input=sql, capture_output=True, text=True, env={**os.environ, "LC_ALL": "C.UTF-8"})
        if out.returncode != 0:
            raise DatabaseError(f"psql failed ({procs.exit_status(out.returncode)}): {out.stderr.strip()[-1500:]}")
        return out.stdout

    def query(self, sql: str) -> str:
        """One query's result as psql prints it (unaligned, no headers), without the last newline."""
        return self.psql(sql).rstrip("\n")

    # -- accounts ----------------------------------------------------------------------------
    def pids(self) -> list[int]:
        """The postmaster and every backend and helper it forked."""
        if self.cpu_group is not None:
            return self.cpu_group.pids()
        return procs.process_group_pids(self.proc.pid) if self.proc else []

    def usage_s(self) -> float | None:
        """Its CPU seconds so far (None where cgroups are not writable)."""
        return self.cpu_group.usage_s() if self.cpu_group is not None else None

    def metadata(self) -> dict:
        """What a dataset records about the database beside its rows."""
        return {"version": self.version, "settings": dict(self.settings), "cpus": self.cpus,
                "user": self.user.pw_name if self.user else pwd.getpwuid(os.geteuid()).pw_name,
                "tables": {"world": WORLD_ROWS, "fortune": len(FORTUNES)},
                "cpu_account": self.cpu_group.source if self.cpu_group else "none"}

    def log_tail(self, limit: int = 1500) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-limit:].strip()
        except (OSError, AssertionError):
            return ""

    def stop(self) -> None:
        """A fast shutdown (SIGINT: clients are disconnected), SIGKILL to what is left after stop_timeout; then the
        folder goes. A process that will not die is named after the folder is removed."""
        left: dict[int, str] = {}
        proc = self.proc
        try:
            if proc is not None:
                left = procs.stop_group(proc, self.stop_timeout, first=signal.SIGINT)
                self.exit_code = proc.returncode
                if self.cpu_group is not None:
                    for pid in self.cpu_group.pids():  # a helper that left the group is still in the cgroup
                        procs.kill(pid)
                    self.cpu_group.remove()
                    self.cpu_group = None
                self.proc = None
        finally:
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)
                self.folder = None
        if left:
            raise DatabaseError(f"postgres processes {left} still alive {self.stop_timeout:g} s after SIGKILL")

