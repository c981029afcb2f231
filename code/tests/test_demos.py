"""The book's demonstrations of classic mistakes behave as the book says."""
import subprocess
import sys

from iobench.load import drivers
from iobench.run import sampler
from iobench.run.lifecycle import ServerProcess
from iobench.servers.manifest import CODE, Server


def no_read_server() -> Server:
    script = CODE / "iobench" / "servers" / "demos" / "no_read_server.py"
    return Server(id="demo-no-read", model="answers without reading the request", lang="Python",
                  summary="demo",
                  argv=lambda o, w: [sys.executable, str(script), "--port", str(o.port), "--host", o.host])


def test_ab_stops_on_a_reset_from_a_server_that_does_not_read():
    before = sampler.tcp_counters()
    with ServerProcess(no_read_server(), cpus=None) as srv:
        ab = drivers.get("ab")
        spec = drivers.LoadSpec("ab", 1, keepalive=False, requests=1000)
        run = subprocess.run(ab.argv(spec, srv.url), capture_output=True, text=True, timeout=60)
    result = ab.parse(run.stdout + run.stderr, run.returncode)
    assert not result.ok
    assert "Connection reset by peer" in result.failure
    # the kernel's own count of closes with unread data: the evidence the book quotes
    assert sampler.tcp_counters()["TCPAbortOnClose"] > before["TCPAbortOnClose"]
