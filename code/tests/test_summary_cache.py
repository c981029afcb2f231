"""A dataset's summary is grouped once per content of its rows: pages quote dozens of values from one dataset, and
each value grouped every row again (side-by-side's table of 23 servers spent 7 s there). What a page or a test does
to the rows, or to the summary it was given, must never be answered from a stale copy."""
import copy

import pytest

from iobench import registry


@pytest.fixture
def ds():
    out = copy.copy(registry.obtain("c-servers", reuse=True))  # its own rows: the tests change them
    out.df = out.df.copy()
    return out


@pytest.fixture
def counted(ds, monkeypatch):
    calls = []
    real = type(ds).summarised.of

    def of(self, df):
        calls.append(len(df))
        return real(df)
    monkeypatch.setattr(type(type(ds).summarised), "of", of)
    return calls


def test_values_of_one_dataset_group_its_rows_once(ds, counted):
    point = ds.summary().iloc[0]
    for _ in range(5):
        assert ds.value("rps", server=point.server, connections=point.connections, tool=point.tool,
                        mode=point["mode"], work_ms=point.work_ms, pipeline=point.pipeline) == point.rps
    assert len(counted) == 1


def test_a_change_to_the_rows_is_seen(ds, counted):
    first = ds.summary()
    ds.df.loc[:, "rps"] = 2 * ds.df.rps  # in place: same object, same shape, same columns
    assert ds.summary().rps.max() == pytest.approx(2 * first.rps.max()) and len(counted) == 2
    ds.df = ds.df[ds.df.server != ds.df.server.iloc[0]]  # replaced
    assert len(ds.summary()) < len(first) and len(counted) == 3
    ds.df = ds.df.assign(extra=1)  # a column added
    ds.summary()
    assert len(counted) == 4


def test_what_a_caller_does_to_its_summary_stays_with_it(ds, counted):
    s = ds.summary()
    s["rps"] = 0.0
    s.loc[s.index[0], "server"] = "changed"
    again = ds.summary()
    assert (again.rps > 0).any() and "changed" not in set(again.server) and len(counted) == 1
