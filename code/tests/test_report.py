"""The helpers chapters quote numbers with (iobench/report.py)."""
import math

import pandas as pd
import pytest

from iobench.data.report import battery_counts, number, table, value_in

S = pd.DataFrame({"server": ["c-epoll", "c-epoll", "nginx"], "connections": [40, 1000, 40],
                  "rps": [100.0, 90.0, 120.0]})


def test_value_in_picks_the_one_matching_row():
    assert value_in(S, "rps", server="c-epoll", connections=1000) == 90.0
    assert value_in(S, "rps", server="nginx") == 120.0


def test_value_in_a_missing_point_is_an_error_unless_a_default_is_given():
    with pytest.raises(KeyError, match="0 rows match"):
        value_in(S, "rps", server="c-uring")
    assert math.isnan(value_in(S, "rps", default=float("nan"), server="c-uring"))


def test_value_in_never_picks_one_of_several_rows():
    with pytest.raises(KeyError, match="2 rows match"):
        value_in(S, "rps", default=float("nan"), server="c-epoll")


def test_value_in_matches_the_index_for_a_name_that_is_not_a_column():
    pivot = S.pivot(index="server", columns="connections", values="rps")
    assert value_in(pivot, 1000, server="c-epoll") == 90.0
    assert math.isnan(value_in(pivot, 40, default=float("nan"), server="c-uring"))
    assert math.isnan(value_in(pivot, 400, default=float("nan"), server="c-epoll"))  # not measured
    with pytest.raises(KeyError):
        value_in(pivot, 400, server="c-epoll")




def test_number_says_n_a_where_a_run_has_no_value():
    # a smoke run where a server failed leaves NaN where the page quotes a count (CI died on int(NaN))
    assert number(12345.6) == "12,346" and number(146.4, ".0f") == "146" and number(10_000) == "10,000"
    assert number(float("nan")) == number(None) == number(pd.Series([], dtype=float).median()) == "n/a"


def test_a_value_that_rounds_to_zero_reads_without_a_sign():
    # PSS per idle connection of c-uring-multishot in a smoke run: -0.029 KiB, read "-0.0"
    assert number(-0.029, ".1f") == "0.0" and number(-0.4) == "0" and number(-0.0, ".2f") == "0.00"
    assert number(-0.3, ".1f") == "-0.3" and number(-1234.5) == "-1,234" and number(-0.06, ".1f") == "-0.1"




def test_battery_counts_are_read_from_the_verdict_and_from_a_captured_sentence():
    now = {"case": "concurrent_500", "passed": False, "detail": "anything",
           "counts": {"clients": 500, "failed": 7, "first_failed_client": 3, "first_failure": "x"}}
    assert battery_counts(now) == now["counts"]
    captured = {"case": "concurrent_500", "passed": False,  # data/baselines/battery.json, before counts
                "detail": "159 of 500 concurrent clients failed, e.g. client 58: TimeoutError during read"}
    assert battery_counts(captured) == {"clients": 500, "failed": 159, "first_failed_client": 58,
                                        "first_failure": "TimeoutError during read"}
    assert battery_counts({"case": "http11_get", "passed": True, "detail": "200"}) == {}


def _cells(styler) -> list[list[str]]:
    """The text of a styled table's body rows, and whether any row has a header cell (an index)."""
    import re
    html = styler.to_html()
    body = html.split("<tbody>")[1]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    assert not any("<th" in r for r in rows), "a row header: the index is shown"
    return [re.findall(r"<td[^>]*>(.*?)</td>", r, re.S) for r in rows]


def test_table_drops_row_numbers_and_formats_each_column_to_what_it_needs():
    f = pd.DataFrame({"server": ["c-epoll", "nginx"], "rps": [61900.0, 1234.5], "p99_ms": [0.12, float("nan")],
                      "repeats": [3, 3], "bound": [True, False]})
    rows = _cells(table(f[f.server != "x"]))   # a filtered frame keeps integer labels: still row numbers
    assert rows == [["c-epoll", "61,900.0", "0.12", "3", "True"], ["nginx", "1,234.5", "–", "3", "False"]]
    assert _cells(table(f[["rps"]].iloc[:1], decimals=0)) == [["61,900"]]


def test_table_keeps_an_index_that_means_something_as_columns():
    pivot = S.pivot(index="server", columns="connections", values="rps")
    styled = table(pivot)
    assert _cells(styled) == [["c-epoll", "100", "90"], ["nginx", "120", "–"]]
    html = styled.to_html()
    # the columns say what their numbers count: with no index there is no corner for the axis name
    assert "server" in html and "connections 40" in html and "connections 1000" in html
    grid = S.assign(requested=5000).pivot_table(index="server", columns=["requested", "connections"], values="rps")
    assert "requested 5000" in table(grid).to_html() and "connections 40" in table(grid).to_html()
    named = S.pivot(index="connections", columns="server", values="rps")   # string labels stay as they are
    assert ">c-epoll<" in table(named).to_html().replace(" ", "")
    two = S.set_index(["server", "connections"])["rps"]
    assert _cells(table(two)) == [["c-epoll", "40", "100"], ["c-epoll", "1,000", "90"], ["nginx", "40", "120"]]
    labelled = pd.Series([1.5, 2.0], index=["c-epoll", "nginx"], name="ratio")
    assert _cells(table(labelled)) == [["c-epoll", "1.5"], ["nginx", "2.0"]]


def test_table_marks_a_first_column_of_short_keys_so_the_page_keeps_them_on_one_line():
    import pandas as pd

    from iobench.data.report import KEYED, table
    ids = table(pd.DataFrame({"server": ["netty-4.2.20", "mina-2.0.7"], "tps": [1.0, 2.0]})).to_html()
    titles = table(pd.DataFrame({"chapter": ["Many connections: what an idle one costs"], "min": [20]})).to_html()
    assert f'class="{KEYED}"' in ids and KEYED not in titles
