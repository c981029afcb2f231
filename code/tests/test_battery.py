"""The conformance battery: nginx passes every case; python's http.server fails exactly the
cases its design predicts; a server that answers the wrong body fails them all."""
import pytest

from iobench.battery import CASES, run_battery
from iobench.lifecycle import ServerProcess
from iobench.manifest import get
from test_lifecycle import contract_server

ALL = {name for name, _ in CASES}


def verdicts(server) -> dict:
    with ServerProcess(server, cpus=None) as srv:
        return {v.case: v for v in run_battery("127.0.0.1", srv.port)}


def test_nginx_passes_every_case():
    v = verdicts(get("nginx"))
    assert set(v) == ALL
    failed = {k: x.detail for k, x in v.items() if not x.passed}
    assert failed == {}
    assert v["malformed_request_line"].detail.startswith("malformed request line: 400")


def test_python_http_server_fails_what_http10_and_a_backlog_of_5_predict():
    v = verdicts(get("python-http-server"))
    failed = {k for k, x in v.items() if not x.passed}
    # HTTP/1.0 only: no keep-alive, so no second request on a connection and no pipelining.
    # listen(5): 500 clients overflow the accept queue; the unlucky ones wait past the timeout.
    assert failed == {"keepalive_100", "pipelined_10", "concurrent_500"}
    assert "request 2 of 100" in v["keepalive_100"].detail
    assert "of 500 concurrent clients failed" in v["concurrent_500"].detail
    assert all(x.alive_after for x in v.values())  # slow or limited, but it never crashed


def test_a_wrong_body_fails_every_case_that_reads_a_body():
    v = verdicts(contract_server("wrong-body"))
    assert not any(x.passed for x in v.values())
    assert all("stopped answering" in x.detail or "Goodbye" in x.detail or "body" in x.detail
               for x in v.values()), {k: x.detail for k, x in v.items()}


def test_battery_runs_inside_a_running_event_loop():
    """Notebook kernels run cells inside an event loop; the battery must work there too."""
    import asyncio

    async def from_a_notebook_cell():
        return verdicts(get("nginx"))

    v = asyncio.run(from_a_notebook_cell())
    assert v["concurrent_500"].passed, v["concurrent_500"].detail
