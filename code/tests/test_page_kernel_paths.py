"""Where a request's CPU goes (book/synthesis/side-by-side.md, many-connections.md): the kernel-paths analysis on the
published run, and on the same run cut as a smoke or one-repeat run would leave it."""
import copy

import pytest

from iobench import registry
from iobench.book.claims import recording
from iobench.book.pages import kernel_paths as kp
from iobench.book.phrases import NA


@pytest.fixture(scope="module")
def published():
    return registry.obtain("kernel-paths", reuse=True)


def cut(ds, servers=None, repeats=None):
    """The dataset as a smaller run would have left it: only `servers`, only `repeats`."""
    out = copy.copy(ds)
    df = ds.df
    if servers is not None:
        df = df[df.server.isin(servers)]
    if repeats is not None:
        df = df[df.repeat.isin(repeats)]
    out.df = df.reset_index(drop=True)
    return out


def test_every_claim_holds_on_the_published_run(published):
    with recording() as checked:
        values = kp.values(published)
        values |= kp.loopback(published)
    assert checked and all(c.holds for c in checked), [c.sentence for c in checked if not c.holds]
    assert NA not in (values["kp_kernel_share"], values["kp_net_us"], values["kp_overhead_native"])
    assert int(values["kp_frequency"].replace(",", "")) > 0


def test_the_table_adds_up_to_the_bar(published):
    t = kp.table(published).set_index("server")
    assert ((t[list(kp.GROUPS)].sum(axis=1) - t.total).abs() < 1e-9).all()
    assert len(kp.GROUPS) <= 6  # the site's check: at most six series on one axes


def test_every_group_is_a_path_once_and_every_path_in_a_group():
    from iobench.run import kpaths
    named = [p for paths in kp.GROUPS.values() for p in paths]
    assert sorted(named) == sorted(kpaths.PATHS)


def test_the_groups_add_up_to_the_sampled_cpu(published):
    m = kp.by_path(published, 1)
    assert ((m[list(kp.GROUPS)].sum(axis=1) - (m.kernel + m.user)).abs() < 1e-9).all()  # what the text says, the bar
    # the groups' medians against the median of each run's whole sample: within 3 % (medians of three repeats)
    whole = kp.sampled(published, 1).assign(t=lambda d: d.kernel + d.user).groupby("server").t.median()
    assert ((m.kernel + m.user) / whole.reindex(m.index) - 1).abs().max() < 0.03
    assert list(m.index) == [s for s in kp.order(published) if s in m.index]


@pytest.mark.parametrize("servers, repeats", [
    (("nginx", "c-epoll", "java-nio"), None),   # a smoke run's servers
    (None, (1,)),                               # one repeat
    (("c-epoll",), (1,)),                       # one server, one repeat: no range, nothing to compare
])
def test_sentences_read_on_a_smaller_run(published, servers, repeats):
    small = cut(published, servers, repeats)
    with recording():
        values = kp.values(small)
        values |= kp.loopback(small)
    for name, text in values.items():
        text = getattr(text, "data", text)  # a Markdown value: its text
        assert "nan" not in str(text).lower() and "None" not in str(text), (name, text)
        assert " to " not in str(text) or str(text).split(" to ")[0] != str(text).split(" to ")[1], (name, text)
    if servers == ("c-epoll",):
        assert values["kp_handoff"].data == NA and values["kp_sched_handoff"] == NA
        assert values["kp_servers"] == "one"


def test_the_cost_of_sampling_pairs_the_runs_of_one_repeat(published):
    cost = kp.overhead(published)
    assert set(cost.columns) == {"median", "min", "max", "repeats"}
    assert (kp.pairs(published).change.abs() < 100).all()
    assert (cost["repeats"] == published.df.repeat.nunique()).all()
    # a repeat whose unsampled run is missing is left out, never paired with another repeat's
    df = published.df
    first = df[(df.server == "c-epoll") & ~df.profiled & (df.repeat == 1)].index
    fewer = kp.overhead(cut(published)).loc["c-epoll", "repeats"]
    short = copy.copy(published)
    short.df = df.drop(first).reset_index(drop=True)
    assert kp.overhead(short).loc["c-epoll", "repeats"] == fewer - 1


def test_what_pipelining_saved_is_said_as_kernel_time_with_one_server_s_numbers(published):
    with recording() as checked:
        values = kp.values(published)
    assert any("pipelining saved" in c.sentence for c in checked)
    assert values["kp_p16_saved_kernel"] != NA and "%" in values["kp_p16_saved_kernel"]
    said = values["kp_p16_example"].data
    assert said.startswith("`java-netty`'s CPU per request fell from ") and " its kernel time from " in said
    # a run without java-netty says the same of a server it has; a run with nothing pipelined says nothing false
    other = kp.values(cut(published, ("nginx", "c-epoll", "java-nio"))).get("kp_p16_example").data
    assert other.startswith("`c-epoll`'s CPU per request fell from ")
    none = cut(published)
    none.df = none.df[none.df.pipeline == 1].reset_index(drop=True)
    with recording():
        empty = kp.values(none)
    assert empty["kp_p16_saved_kernel"] == NA and empty["kp_p16_example"].data == NA
