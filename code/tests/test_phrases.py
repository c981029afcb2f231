"""The book's vocabulary for prose from data (iobench/book/phrases.py), in every case a capture can produce: equal
ends, zeros, one repeat, one server, a smoke run's missing values."""

import pandas as pd
import pytest

from iobench.book.phrases import (against, battery_verdict, each, listing, pairs_by_second, sentence, span, span_of,
                                   tally, words)

NAN = float("nan")


def test_words_listing_and_sentence():
    assert [words(n) for n in (0, 1, 12, 13)] == ["no", "one", "twelve", "13"]
    assert listing([]) == "" and listing(["a"]) == "a" and listing(["a", "b", "c"]) == "a, b and c"
    assert sentence(["one clause", "`two` clauses"]) == "One clause; `two` clauses."
    assert sentence([], empty="None.") == "None." and sentence([""]) == ""


@pytest.mark.parametrize("lo, hi, spec, unit, said", [
    (1.12, 1.14, ".1f", " times", "1.1 times"),          # equal ends: one number, never "1.1 to 1.1"
    (1.0, 2.5, ".1f", " times", "1.0 to 2.5 times"),
    (2.5, 1.0, ".1f", "", "2.5 to 1.0"),                  # the ends as given: a fall reads "from 10 to 5"
    (0.0, 0.0, ".2f", " ms", "0.00 ms"),                  # zeros
    (1_500, 25_000, ",.0f", "", "1,500 to 25,000"),
    (NAN, 3.0, ".1f", "", "n/a"),                         # a smoke run's missing value
    (None, None, ".1f", "", "n/a"),
])
def test_span(lo, hi, spec, unit, said):
    assert span(lo, hi, spec, unit) == said


def test_span_of_reads_the_finite_values_of_a_column_or_list():
    assert span_of(pd.Series([1.04, NAN, 1.01]), ".1f", " times") == "1.0 times"  # one repeat's worth
    assert span_of([3, 1, 2], ".0f") == "1 to 3"
    assert span_of([5.0]) == "5.0"                               # a single repeat
    assert span_of([], na="none") == "none" and span_of([NAN, None]) == "n/a"
    with pytest.raises(TypeError):  # a frame where a column was meant: its column names, not missing values
        span_of(pd.DataFrame({"x": [1.0, 2.0]}))


@pytest.mark.parametrize("k, n, said", [
    (1, 18, "1 of the 18 repeats was flagged noisy"),
    (3, 18, "3 of the 18 repeats were flagged noisy"),
    (0, 18, "none of the 18 repeats was flagged noisy"),
    (18, 18, "all 18 repeats were flagged noisy"),
    (2, 2, "both repeats were flagged noisy"),
    (0, 2, "neither of the 2 repeats was flagged noisy"),
    (1, 1, "the one repeat was flagged noisy"),           # one repeat (a smoke run)
    (0, 1, "the one repeat was not flagged noisy"),
    (0, 0, "no repeats were flagged noisy"),
])
def test_tally_agrees_in_number(k, n, said):
    assert tally(k, n, "repeat", "flagged noisy") == said


def test_tally_spells_small_counts_and_takes_other_verbs():
    assert tally(3, 9, "case", "failed", verbs=("has", "have"), spell=True) == "three of the nine cases have failed"
    assert tally(1, 2, "run", "", plural="runs") == "1 of the 2 runs was"
    with pytest.raises(ValueError):
        tally(3, 2, "run")
    assert [tally(k, n, "pair", verbs=None) for k, n in ((2, 3), (0, 3), (3, 3), (2, 2), (0, 2), (1, 1), (0, 1))] == [
        "2 of the 3 pairs", "none of the 3 pairs", "all 3 pairs", "both pairs", "neither of the 2 pairs",
        "the one pair", "no pair"]


def test_each_says_a_value_shared_once():
    four = {"c-threadpool": 120, "c-epoll": 120, "java-vthread": 120, "java-netty": 120}
    assert each(four, ".0f", " %") == "all four at 120 %"
    assert each({"a": 120, "b": 120.2}, ".0f", " %") == "both at 120 %"
    assert each({"a": 120}, ".0f", " %") == "a at 120 %"                      # one server
    assert each({"a": 120, "b": 100}, ".0f", " %") == "a at 120 % and b at 100 %"
    assert each({"a": 1, "b": 1, "c": 2}, ".0f") == "a and b at 1; c at 2"
    assert each({"a": NAN, "b": 1}, ".0f") == "a at n/a and b at 1"


@pytest.mark.parametrize("a, b, said", [
    (0.001, 0.0, "none in either"),                       # all zero as shown: never "0.00 against 0.00"
    (0.0, 0.0, "none in either"),
    (0.5, 0.25, "0.50 against 0.25"),
    (0.251, 0.249, "0.25 in both"),
    (NAN, 0.2, "n/a"),
])
def test_against(a, b, said):
    assert against(a, b, ".2f") == said


def test_pairs_are_said_once_per_second_member():
    three = [("rpc-netty", "rpc-tomcat"), ("rpc-tomcat-vt", "rpc-tomcat"), ("rpc-webflux", "rpc-tomcat")]
    assert pairs_by_second(three) == "`rpc-netty`, `rpc-tomcat-vt` and `rpc-webflux` below `rpc-tomcat`"
    assert pairs_by_second([("a", "b")], code=False) == "a below b"
    assert pairs_by_second([("a", "b"), ("c", "d")], code=False) == "a below b and c below d"
    assert pairs_by_second([("a", "c"), ("b", "c"), ("d", "e")], code=False) == "a and b below c; d below e"
    assert pairs_by_second(three[:2], "{second}'s repeats overlapped those of {firsts}") == (
        "`rpc-tomcat`'s repeats overlapped those of `rpc-netty` and `rpc-tomcat-vt`")
    assert pairs_by_second([]) == ""


def test_battery_verdict():
    ok = {"case": "a", "passed": True}
    bad = {"case": "b", "passed": False}
    assert battery_verdict([]) == ("was not checked by the battery", [])
    assert battery_verdict([ok, ok]) == ("passes all two cases", [])
    assert battery_verdict([ok, bad]) == ("fails one of the two cases (b)", ["b"])


def test_no_page_writes_a_range_helper_of_its_own():
    """The six copies of "lo to hi" the pages had (span, span_of, between, rng) are this module's span now."""
    import re

    from conftest import ROOT
    found = {p.relative_to(ROOT).as_posix(): m for p in (ROOT / "book").rglob("*.md")
             for m in re.findall(r"^def (span\w*|between|rng)\(", p.read_text(), re.M)}
    assert found == {}


def test_grouped_names_every_item_and_says_each_value_once():
    from iobench.book.phrases import grouped
    assert grouped({"a": 1, "b": 1, "c": 64, "d": 70}) == "a and b at 1; c at 64; d at 70"
    assert grouped({"a": 1, "b": 64}, ",.0f", at=" ") == "a 1 and b 64"
    assert grouped({"a": 64, "b": 64.2}) == "a and b at 64"  # each() would say "both at 64", naming neither
    assert grouped({"a": NAN, "b": 5000}, ",.0f", " µs") == "a at n/a and b at 5,000 µs"
    assert grouped({}) == ""


def test_repeats_says_what_the_repeats_measured_in_every_case():
    from iobench.book.phrases import repeats
    assert repeats(9800, 10500, 3) == "repeats from 9,800 to 10,500"
    assert repeats(10279.2, 10279.4, 3) == "all three repeats at 10,279"
    assert repeats(5, 5, 2) == "both repeats at 5"
    assert repeats(5, 5, 1) == "one repeat"
    assert repeats(float("nan"), 5, 3) == "n/a"


def test_ids_lists_names_in_code_type():
    from iobench.book.phrases import ids
    assert ids(["a", "b", "c"]) == "`a`, `b` and `c`" and ids(["a"]) == "`a`" and ids([], "none") == "none"


def test_flagged_names_what_was_flagged_at_none_one_and_many():
    from iobench.book.phrases import flagged
    assert flagged([]) == "No repeat was flagged as an outlier."
    assert flagged(["a, b"]) == "One repeat was flagged as an outlier: a, b."
    assert flagged(["a", "b"], "run") == "2 runs were flagged as outliers: a; b."
