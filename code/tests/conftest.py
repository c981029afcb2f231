import os
import socketserver
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "code"))


def toc_pages() -> list[str]:
    """The book's pages in the order of _toc.yml (paths without .md, from the repository's root)."""
    from iobench.book.syllabus import toc_files
    return toc_files(ROOT)


def venv_env() -> dict:
    """The environment the Makefile gives its commands: venv first on PATH, kernels in the venv."""
    env = dict(os.environ)
    venv = ROOT / ".venv"
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    env["JUPYTER_DATA_DIR"] = str(venv / "share" / "jupyter")
    return env


def require_link(link_class) -> None:
    """Skip the calling test when this machine cannot make the link (not root, no `ip`, no TUN)."""
    import pytest
    from iobench.run.netlink import LinkUnavailable
    try:
        link_class.check_available()
    except LinkUnavailable as exc:
        pytest.skip(f"no {link_class.__name__} on this machine: {exc}")


def rounds(finished: list[float], work_s: float) -> int:
    """How many rounds of work a set of requests, sent at once, took to finish: answers that
    arrive within half a work time of the previous one finished in its round. Rounds are an
    order of events, not a speed: a slow or stolen host delays every answer, but it cannot
    split one round of overlapped work into the 200 ms steps of serial work, nor merge those."""
    out, last = 0, None
    for t in sorted(finished):
        if last is None or t - last > work_s / 2:
            out += 1
        last = t
    return out


def answered_at(request, n: int) -> list[float]:
    """Send n requests at once (n threads, `request()` each); the monotonic time each answer came."""
    import concurrent.futures
    import time

    def one(_):
        request()
        return time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, range(n)))


def reads_like_the_book(smoke, name: str) -> None:
    """A dataset a test just captured under smoke (`smoke`, read by its kind's reader) summarises
    the way the book's captured `name` does: every column of the replay's summary is in the smoke
    summary, and its caption and description say where it came from. So a harness change that
    breaks what a page reads fails `make test`, which no longer executes the book live."""
    from iobench import registry
    book = registry.obtain(name, "replay")
    assert type(smoke) is type(book), f"{name}: read as {type(smoke).__name__}, the book as {type(book).__name__}"
    missing = sorted(set(book.summary().columns) - set(smoke.summary().columns))
    assert not missing, f"the smoke capture's summary lacks what data/{name}'s has: {missing}"
    assert len(smoke.summary()) > 0
    assert "smoke profile" in smoke.caption() and smoke.describe()


class ThreadedServer(socketserver.ThreadingTCPServer):
    """A test server on 127.0.0.1 and a free port, a thread per connection, serving in the background
    for the length of a `with` block. The load generators under test reset or close what is still
    open when they exit: not an error here."""
    daemon_threads = True
    block_on_close = False

    def __init__(self, handler):
        super().__init__(("127.0.0.1", 0), handler)

    def handle_error(self, request, client_address):
        pass

    def __enter__(self):
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()


def reads_as_prose(values: dict) -> None:
    """Every text a page module glues reads as an editor would pass it: the site's prose check
    (code/tools/prose_check.py), on each value alone."""
    sys.path.insert(0, str(ROOT / "code" / "tools"))
    from prose_check import defects
    from iobench.book.pages import text
    bad = [(name, d) for name, v in values.items() if isinstance(text(v), str) for d in defects(text(v))]
    assert not bad, bad


def glued_in_prose(path) -> set[str]:
    """The names a page's prose pastes that its module must give: less those its visible cells glue (the figures'
    captions, live runs), and the caption its figure of both machines glues (mine.show_beside)."""
    import re
    text = Path(path).read_text()
    pasted = set(re.findall(r"\{glue(?::\w+)?\}`(\w+)", text))
    drawn = set(re.findall(r'glue\("(\w+)"', text)) | {n for n in pasted if n.startswith("fig_mine_")}
    return pasted - drawn


def rows(ds, keep):
    """ds (a captured dataset) with only the rows `keep(df)` selects: a page module's variant of its data."""
    import dataclasses
    return dataclasses.replace(ds, df=ds.df[keep(ds.df)].copy())


def changed(ds, where, **columns):
    """ds with `columns` set to the given values in the rows `where(df)` selects."""
    import dataclasses
    df = ds.df.copy()
    mask = where(df)
    for column, value in columns.items():
        df.loc[mask, column] = value
    return dataclasses.replace(ds, df=df)


@pytest.fixture
def no_waiting(monkeypatch):
    """A run whose test is not about a quiet machine: the runner neither waits for TIME_WAIT sockets to drain nor
    for the machine to go quiet (the test suite itself keeps both busy: up to 5 and 2 s a turn and a point)."""
    from iobench.run import runner
    monkeypatch.setattr(runner, "wait_time_wait_drained", lambda *a, **k: 0.0)
    monkeypatch.setattr(runner, "wait_quiet", lambda *a, **k: 0.0)
