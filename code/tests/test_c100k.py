"""More connections than one process may hold (issue 37): a point a server cannot hold here is skipped for that
server alone, with the limit named; servers of several worker processes (c-epoll-workers, nginx-workers) hold
it, spread over their workers; the kernel's memory is read beside the server's; c-epoll-workers' workers report
what each accepted in every way of sharing the port."""
import dataclasses
import subprocess

import pytest
from conftest import reads_as_prose

from iobench import registry
from iobench.book.pages import many_connections
from iobench.kinds.http import dataset
from iobench.kinds.http import experiment, plans
from iobench.run import kernelmem, limits, runner
from iobench.servers import manifest
from iobench.servers.manifest import CODE

P = plans.Point


def test_a_point_is_unfit_for_a_server_only_where_its_own_limit_says(monkeypatch):
    monkeypatch.setattr(limits, "nofile", lambda: {"soft": 20_000, "hard": 20_000})
    monkeypatch.setattr(limits, "sysctl", lambda name: "32768" if name == "kernel.pid_max" else "")
    one, workers, fork = (manifest.get(s) for s in ("c-epoll", "c-epoll-workers", "c-fork"))
    def at(n):
        return P("wrk", 40, True, idle_conns=n)
    assert experiment.unfit(one, at(19_000), None) == ""
    assert "needs 100,104 file descriptors in one process; the limit here is 20,000" in \
        experiment.unfit(one, at(100_000), None)
    assert experiment.unfit(workers, at(100_000), 8) == ""  # 12,505 each, room for an uneven hash
    assert "in each of 4 processes" in experiment.unfit(workers, at(100_000), 4)
    assert "one" in experiment.unfit(workers, at(100_000), None)  # no pool given: one worker
    assert experiment.unfit(fork, at(19_000), None) == ""  # its children hold one connection each
    assert "kernel.pid_max here is 32,768" in experiment.unfit(fork, at(50_000), None)


def test_the_c100k_plan_asks_every_single_process_model_no_more_than_one_process_may_hold():
    plan = plans.C100K
    levels = [p.idle_conns for p in plan.points]
    assert levels == sorted(levels) and levels[-1] == 100_000 and levels[0] == 0
    nofile = 20_000  # this machine's hard limit, which no session may raise
    under = [n for n in levels if n + 40 + 64 <= nofile]
    assert max(under) == 19_000
    for sid in plan.servers:
        assert manifest.get(sid).spread in ("one", "workers", "per-connection"), sid
    assert {s for s in plan.servers if manifest.get(s).spread == "workers"} == set(dict(plan.pools))
    assert 100_000 / plans.C100K_WORKERS * experiment.UNEVEN + 64 <= nofile


def test_kernel_memory_is_parsed_from_proc_and_read_for_a_live_process():
    text = "sockets: used 9\nTCP: inuse 6009 orphan 0 tw 3 alloc 6010 mem 169\nUDP: inuse 0 mem 0\n"
    assert kernelmem.parse_sockstat(text) == {"k_tcp_inuse": 6009, "k_tcp_mem_kib": 169 * 4}
    slab = ("slabinfo - version: 2.1\n# name <active_objs> <num_objs> <objsize> ...\n"
            "TCP                 6000   6032   2368   13    8 : tunables    0    0    0 : slabdata 464 464 0\n"
            "eventpoll_epi       3000   3040    128   32    1 : tunables    0    0    0 : slabdata 95 95 0\n")
    got = kernelmem.parse_slabinfo(slab)
    assert got["k_tcp_sock_kib"] == 6000 * 2368 // 1024 and got["k_epoll_kib"] == 3000 * 128 // 1024
    assert got["k_sock_inode_kib"] == 0  # a cache this kernel lacks counts nothing
    with pytest.raises(ValueError, match="no TCP line"):
        kernelmem.parse_sockstat("sockets: used 9\n")
    cols, raw = kernelmem.snapshot(subprocess.os.getpid())
    assert cols["k_slab_kib"] > 0 and cols["k_tcp_inuse"] >= 0 and "/net/sockstat" in raw


def test_the_workers_counts_become_columns():
    text = ("WORKER 1 pid=11 accepted=30 wakeups=12 empty=2\nnoise\n"
            "WORKER 0 pid=10 accepted=70 wakeups=20 empty=5\n")
    got = experiment.worker_count_columns(text, "raw/x.txt")
    assert got == {"workers_reported": 2, "accepted_total": 100, "accepted_min": 30, "accepted_max": 70,
                   "listen_wakeups": 32, "listen_empty": 7, "worker_counts_file": "raw/x.txt"}


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "all"], check=True)


def test_workers_hold_what_one_process_may_not_and_the_kernel_s_memory_grows_with_them(built, tmp_path,
                                                                                      monkeypatch):
    """The plan's decision, with a limit of 1,200 descriptors per process (the servers themselves run with
    the real one): c-epoll cannot hold 1,500 idle connections and is not asked to; three workers can."""
    real = limits.nofile
    monkeypatch.setattr(experiment.limits, "nofile", lambda: {**real(), "soft": 1_200})
    plan = dataclasses.replace(
        plans.C100K.only(("c-epoll-workers", "nginx-workers", "c-epoll")), dataset="tiny-c100k",
        pools=(("c-epoll-workers", 3), ("nginx-workers", 3)),
        smoke_points=tuple(P("wrk", 40, True, idle_conns=n) for n in (0, 1_500)))
    said = []
    path = runner.run(registry.experiment(plan), "smoke", dest=tmp_path / "tiny-c100k", progress=said.append)
    ds = dataset.load(path, "smoke")
    df = ds.df.set_index(["server", "idle_conns"])
    assert ("c-epoll", 1_500) not in df.index and df.loc[("c-epoll", 0), "ok"]
    (skip,) = ds.meta["skipped_points"]
    assert skip["server"] == "c-epoll" and skip["idle_conns"] == 1_500
    assert "file descriptors in one process; the limit here is 1,200" in skip["why"]
    for sid in ("c-epoll-workers", "nginx-workers"):
        none, held = df.loc[(sid, 0)], df.loc[(sid, 1_500)]
        assert held["ok"] and held["idle_open"] == held["idle_answered"] == 1_500, said
        assert held["workers_holding"] == 3 and held["worker_conns_max"] < 1_200
        assert sum(map(int, held["worker_conns"].split())) == 1_500
        # both ends of every held connection are TCP sockets of this machine
        assert held["k_tcp_inuse"] - none["k_tcp_inuse"] >= 2 * 1_500
        assert held["k_tcp_sock_kib"] > none["k_tcp_sock_kib"]
        assert (path / held["kernel_memory_file"]).read_text().count("TCP") >= 2
    reads_as_prose(many_connections.c100k(ds))  # the page's sentences, from a smoke capture


def test_each_sharing_mode_runs_its_own_server_and_its_workers_report_what_they_accepted(built, tmp_path):
    plan = dataclasses.replace(plans.ACCEPT_SPREAD, dataset="tiny-accept", pools=(("c-epoll-workers", 3),),
                               smoke_points=tuple(P("wrk", 40, True, idle_conns=300, share=m)
                                                  for m in plans.SHARES))
    path = runner.run(registry.experiment(plan), "smoke", dest=tmp_path / "tiny-accept", progress=lambda m: None)
    ds = dataset.load(path, "smoke")
    assert sorted(ds.df["share"]) == sorted(plans.SHARES)
    argv = {s["share"]: " ".join(s["argv"]) for s in ds.meta["stops"]}
    for _, row in ds.df.iterrows():
        assert row["ok"] and row["workers_reported"] == 3 and row["workers_holding"] == 3
        assert f"--share {row['share']}" in argv[row["share"]] and "--pool 3" in argv[row["share"]]
        # every idle and busy connection, and the warm-up's, was accepted by some worker
        assert row["accepted_total"] >= 300 + 40
        assert row["listen_empty"] <= row["listen_wakeups"] and row["raise_vcsw"] > 0
        assert "accepted=" in (path / row["worker_counts_file"]).read_text()
    reads_as_prose(many_connections.accept_spread(ds))  # the page's sentences, from a smoke capture
