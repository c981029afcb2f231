"""The Mina vs Netty echo benchmarks: the four servers (two of them from 2013) start,
echo byte-exact, stop cleanly and write their read statistics; the statistics and the
generator's output are read correctly; a run captures what the chapter needs."""
import json
import subprocess
from pathlib import Path

import pytest
from conftest import reads_as_prose, reads_like_the_book

from iobench.book.pages import mina_netty_results
from iobench.kinds.echo import dataset as echo_dataset
from iobench.kinds.echo import experiment as echo_experiment
from iobench.kinds.echo import plans as echo_plans
from iobench.kinds.echo.dataset import ECHO_SERVERS, read_stats, stats_summary
from iobench.kinds.echo.plans import EchoPoint
from iobench.kinds.echo.experiment import server_entry, verify_echo
from iobench.load import drivers
from iobench.run.lifecycle import ServerError, ServerProcess
from iobench.servers.manifest import CODE, ServerOptions

FIXTURES = Path(__file__).parent / "fixtures"


# ---- pure functions -------------------------------------------------------------------------

def test_read_stats_skips_comments_and_header():
    text = "# framework=mina-core 2.0.7\nchunk_bytes,buffer_bytes,events\n1024,4096,3\n4096,4096,2\n"
    assert read_stats(text) == [(1024, 4096, 3), (4096, 4096, 2)]


def test_stats_summary_counts_capacity_splits():
    # 10 messages of 5120: 8 read whole, 2 split by a full 4096-byte buffer into 4096 + 1024
    rows = [(5120, 8192, 8), (4096, 4096, 2), (1024, 8192, 2)]
    s = stats_summary(rows, 5120)
    assert s["reads"] == 12
    assert s["reads_per_msg"] == pytest.approx(1.2)
    assert s["short_reads_pct"] == pytest.approx(100 * 4 / 12)
    assert s["full_buffer_reads_pct"] == pytest.approx(100 * 2 / 12)


def test_stats_summary_of_nothing():
    assert stats_summary([], 5120)["reads_per_msg"] is None


def test_echo_driver_argv_and_parse_of_a_real_run():
    spec = drivers.LoadSpec(tool="echo", connections=32, duration_s=5, size=5120, split=(10, 1448, 200))
    argv = drivers.get("echo").argv(spec, "tcp://10.78.0.2:41234")
    assert argv[:5] == [drivers.ECHOLOAD, "--host", "10.78.0.2", "--port", "41234"]
    assert argv[argv.index("--split-every") + 1] == "10" and "--nodelay" not in argv
    out = (FIXTURES / "echoload-mina-5120.txt").read_text()
    r = drivers.get("echo").parse(out, 0)
    d = json.loads(next(ln for ln in out.splitlines() if ln.startswith("ECHOLOAD "))[9:])
    assert r.ok and r.requests == d["messages"] and r.rps == d["tps"]
    assert r.p50_ms <= r.p99_ms <= r.max_ms
    assert r.extra["stalls_35ms"] == d["stalls_35ms"]


def test_echo_driver_parse_failures():
    bad = drivers.get("echo").parse("iom-echoload: connect 127.0.0.1:1: Connection refused\n", 1)
    assert not bad.ok and "Connection refused" in bad.failure
    with pytest.raises(ValueError):
        drivers.get("echo").argv(drivers.LoadSpec(tool="echo", connections=1), "tcp://127.0.0.1:1")


def test_prune_series_keeps_one_compressed_series_per_chapter_experiment_and_notes_it(tmp_path):
    import gzip
    raw = tmp_path / "raw"
    for exp_name in ("sweep", "partial"):
        for r in (1, 2):
            d = raw / exp_name / "mina-2.0.7"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"x-r{r}.reads.csv").write_text("chunk_bytes,buffer_bytes,events\n5120,8192,1\n")
            (d / f"x-r{r}.reads.csv.series.csv").write_text("t_us,conn,chunk_bytes,buffer_bytes\n1,1,5120,8192\n")
    (tmp_path / "meta.json").write_text("{}")
    assert echo_experiment.prune_series(tmp_path) == 4
    assert not list(raw.rglob("*.series.csv"))
    kept = list(raw.rglob("*.series.csv.gz"))
    assert [k.relative_to(raw).as_posix() for k in kept] == ["partial/mina-2.0.7/x-r1.reads.csv.series.csv.gz"]
    assert gzip.decompress(kept[0].read_bytes()).startswith(b"t_us,")
    assert len(list(raw.rglob("*.reads.csv"))) == 4  # the histograms always stay
    assert "removed" in json.loads((tmp_path / "meta.json").read_text())["series_pruned"]
    assert echo_experiment.prune_series(tmp_path) == 0


def test_wire_limit_counts_segments():
    assert echo_dataset.wire_limit(1024) == pytest.approx(1e9 / 8 / (1024 + 90))
    assert echo_dataset.wire_limit(5120) == pytest.approx(1e9 / 8 / (5120 + 4 * 90))


def test_sweep_plan_interleaves_the_four_versions():
    sizes = [p.size for p in echo_plans.SWEEP.points if p.link == "lo"]
    assert sorted(set(sizes)) == list(echo_plans.SIZES)
    first = [p.server for p in echo_plans.SWEEP.points[:4]]
    assert first == list(echo_dataset.VERSIONS)  # every size runs all four before the next size
    assert len({p.stem(1) for p in echo_plans.EXPERIMENTS.points}) == len(echo_plans.EXPERIMENTS.points)


# ---- the servers ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", str(CODE), "java"], check=True)
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "build/iom-echoload"], check=True)


@pytest.mark.parametrize("server_id", list(ECHO_SERVERS))
def test_each_version_echoes_stops_cleanly_and_writes_its_read_statistics(built, server_id, tmp_path):
    stats = tmp_path / "reads.csv"
    srv = ServerProcess(server_entry(ECHO_SERVERS[server_id], (), stats, None), ServerOptions(), cpus=None)
    with srv:
        for size in (1024, 5120, 102400):
            verify_echo([], "127.0.0.1", srv.port, size)
        argv = drivers.get("echo").argv(drivers.LoadSpec(tool="echo", connections=4, duration_s=0.5, size=5120),
                                        f"tcp://127.0.0.1:{srv.port}")
        out = subprocess.run(argv, cwd=CODE.parent, capture_output=True, text=True, timeout=30)
        result = drivers.get("echo").parse(out.stdout, out.returncode)
        assert result.ok and result.errors == 0 and result.requests > 100
    assert srv.exit_code == 0
    text = stats.read_text()
    rows = read_stats(text)
    # every byte the generator sent came through a counted read
    echoed = sum(c * n for c, _, n in rows)
    assert echoed >= result.requests * 5120
    framework = text.splitlines()[0]
    version = ECHO_SERVERS[server_id].version.removesuffix(".Final")
    assert framework.startswith("#") and version in framework, framework


def test_mina_2_0_7_really_runs_the_2013_jar(built, tmp_path):
    argv = server_entry(ECHO_SERVERS["mina-2.0.7"], (), tmp_path / "s.csv", None).argv(ServerOptions(), tmp_path)
    cp = argv[argv.index("-cp") + 1].split(":")
    assert any(p.endswith("mina-core-2.0.7.jar") for p in cp)
    assert not any("mina-core-2.2" in p for p in cp)


def test_a_bad_server_flag_fails_the_start_with_its_message(built, tmp_path):
    entry = server_entry(ECHO_SERVERS["netty-4.2.20"], ("--nodelay", "perhaps"), tmp_path / "s.csv", None)
    with pytest.raises(ServerError, match="nodelay"):
        with ServerProcess(entry, ServerOptions(), cpus=None):
            pass


def test_forced_split_shows_in_the_statistics(built, tmp_path):
    # Mina's read buffer pinned at 4096: every 5120-byte message takes two reads, 4096 + 1024
    stats = tmp_path / "reads.csv"
    flags = ("--min-read-buffer", "4096", "--max-read-buffer", "4096", "--read-buffer", "4096")
    with ServerProcess(server_entry(ECHO_SERVERS["mina-2.0.7"], flags, stats, None), ServerOptions(), cpus=None) as srv:
        verify_echo([], "127.0.0.1", srv.port, 5120)
    rows = read_stats(stats.read_text())
    assert {(c, b) for c, b, _ in rows} == {(4096, 4096), (1024, 4096)}
    assert stats_summary(rows, 5120)["reads_per_msg"] == pytest.approx(2.0)


def test_smoke_run_of_the_experiments_captures_a_trace_and_an_allocation_profile(built, tmp_path):
    from iobench.run.netlink import LinkUnavailable, VethLink
    try:
        VethLink.check_available()
    except LinkUnavailable as exc:
        pytest.skip(f"no veth link here: {exc}")
    import dataclasses
    forced = echo_plans._pinned(4096)
    plan = dataclasses.replace(echo_plans.EXPERIMENTS, points=(
        EchoPoint("mina-2.0.7", 5120, "veth", flags=forced, experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 5120, "veth", connections=1, flags=forced, capture="tcpdump", experiment="trace"),
        EchoPoint("netty-4.2.20", 5120, "lo", capture="jfr", experiment="alloc")))
    path = echo_experiment.run_echo_plan(plan, "smoke", dest=tmp_path / "echo-experiments", progress=lambda m: None)
    ds = echo_dataset.load(path, "smoke")
    assert len(ds.df) == 3 and ds.df["ok"].all()
    reads_like_the_book(ds, "echo-experiments")
    reads_as_prose(mina_netty_results.experiments(ds))  # the chapter's sentences, from a smoke capture
    assert (ds.df["errors"] == 0).all()
    trace = ds.df[ds.df["capture"] == "tcpdump"].iloc[0]
    pcap = next((path / "raw").rglob("*.pcap.gz"))
    assert " > " in echo_dataset.pcap_text(pcap)
    assert trace["connections"] == 1
    assert list((path / "raw").rglob("*.jfr-allocation-by-class.txt"))
    assert not list((path / "raw").rglob("*.jfr"))  # the recording itself is not kept
    forced = ds.df[ds.df["experiment"] == "split-nagle"].iloc[0]
    assert forced["reads_per_msg"] == pytest.approx(2.0, rel=0.01)
    meta = json.loads((path / "meta.json").read_text())
    assert "tbf" in meta["links"]["veth"]["server_qdisc"]
    # the read-event series is kept only where the chapter reads it (the partial experiment)
    assert not list((path / "raw").rglob("*.series.csv*"))


def test_packets_and_stalls_from_a_real_trace():
    # tcpdump's lines around the first stall of the forced 5 KiB split (data/echo-experiments)
    pk = echo_dataset.packets((FIXTURES / "tcpdump-mina-5120-split.txt").read_text())
    assert len(pk) >= 20
    found = echo_dataset.stalls(pk, "10.78.0.2")
    assert found, "the fixture holds one stall"
    i = found[-1]
    # the held segment is the second write (1024 bytes) and went out right after the client's ACK
    assert pk[i]["length"] == 1024 and pk[i - 1]["src"].startswith("10.78.0.1:") and pk[i - 1]["length"] == 0
    assert 38 <= 1e3 * (pk[i - 1]["t"] - pk[i - 2]["t"]) <= 50  # the client's delayed ACK
    assert pk[i - 2]["length"] == 1200  # the lone tail of the 4096-byte first write
    # the gaps between two requests are the client's, not stalls inside a response
    assert echo_dataset.stalls(pk, "10.78.0.1") == []


def test_jfr_table_reads_a_real_view():
    rows = echo_dataset.jfr_table((FIXTURES / "jfr-view-allocation-by-class.txt").read_text())
    assert rows[0][0] == "io.netty.channel.DefaultChannelPromise" and rows[0][1].endswith("%")
    assert all(len(r) == 2 for r in rows)
    assert sum(float(r[1].rstrip("%")) for r in rows) == pytest.approx(100, abs=1)


def test_without_root_the_veth_points_are_skipped_and_said_so(built, tmp_path, monkeypatch):
    import dataclasses
    from iobench.run.netlink import LinkUnavailable, VethLink

    def unavailable():
        raise LinkUnavailable("network namespaces and veth devices need root (euid is not 0)")

    monkeypatch.setattr(VethLink, "check_available", staticmethod(unavailable))
    plan = dataclasses.replace(echo_plans.SWEEP, points=(EchoPoint("netty-4.2.20", 1024, "lo"),
                                                   EchoPoint("netty-4.2.20", 1024, "veth")), smoke_points=())
    said = []
    path = echo_experiment.run_echo_plan(plan, "smoke", dest=tmp_path / "echo-sweep", progress=said.append)
    ds = echo_dataset.load(path, "smoke")
    assert list(ds.df["link"]) == ["lo"]
    assert "need root" in ds.meta["skipped"]["veth"]
    assert any(m.startswith("skip: 1 points on the veth link") for m in said)
