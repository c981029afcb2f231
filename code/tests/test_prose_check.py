"""The rendered-prose check (code/tools/prose_check.py) fails on each defect it names, and passes what an editor
would pass: the site test runs it on every page of the built book (test_site.py)."""
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "code" / "tools"))
from prose_check import defects


def para(text: str) -> str:
    return f"<html><head><title>x</title></head><body><p>{text}</p></body></html>"


@pytest.mark.parametrize("html, kind", [
    ("in <code>{glue:text}</code> ck_w , {glue:text}`ck_parts` KiB", "markup"),   # a role inside backticks
    ("see {ref}`deep-dive` for more", "markup"),
    ("the busiest worker held 1.1 to 1.1 times what the least busy held", "range"),
    ("c-epoll-workers 9.5 to 9.5)", "range"),
    ("between 1,643 to 1,643 MiB", "range"),
    ("by repeat: 0.00 against 0.00 for rpc-tomcat", "zeros"),
    ("0 % against 0 %", "zeros"),
    ("1 of the 18 of these repeats were flagged noisy", "agreement"),
    ("3 of 18 runs was slow", "agreement"),
])
def test_each_defect_is_found(html, kind):
    assert {k for k, _ in defects(para(html))} == {kind}


@pytest.mark.parametrize("html", [
    "the busiest worker held 1.1 times what the least busy held",
    "from 1.1 to 1.15 times, and 10 to 100 connections",
    "0.01 against 0.00", "none in either", "10 against 0.00",
    "1 of the 18 repeats was flagged noisy", "3 of the 18 repeats were flagged", "11 of 18 were",
    "<pre>glue(\"x\", 1) {glue:text}`x` 1.1 to 1.1 0.00 against 0.00</pre>",  # code and outputs are not prose
])
def test_what_an_editor_passes_is_not_flagged(html):
    assert defects(para(html)) == []
