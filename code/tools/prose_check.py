"""What an editor would not pass in a page's rendered prose, found in its HTML (the site test runs it on every page).

    markup    MyST markup that was not rendered: a role or directive left as text ({glue:text}`x`, {ref}, {doc}),
              as happens to a role written inside backticks
    range     a range whose two ends read the same ("1.1 to 1.1 times"): phrases.span says one number
    zeros     a comparison whose two sides are both zero ("0.00 against 0.00"): phrases.against says "none in either"
    agreement a count and its verb that disagree ("1 of the 18 repeats were", "3 of 18 runs was"): phrases.tally

Code blocks and cell outputs (<pre>) are not prose and are not read; inline code is (a role in backticks shows there).
"""
from __future__ import annotations

import html
import re
import sys
from pathlib import Path

NUM = r"\d[\d,]*(?:\.\d+)?"
CHECKS = {
    "markup": re.compile(r"\{(?:glue(?::\w+)?|ref|doc|numref|eq|term|cite(?::\w+)?|download|prf:ref)\}`?"),
    "range": re.compile(rf"(?<![\d.,])({NUM}) to \1(?![\d.,]|\d)"),
    "zeros": re.compile(r"(?<![\d.,])0(?:\.0+)?(?![\d.])(?: ?[%\w]{0,3})? against 0(?:\.0+)?(?![\d.,]*[1-9])"),
    "agreement": re.compile(rf"(?<![\d.,])(?:1 of (?:the )?{NUM} (?:[\w-]+ ){{0,3}}?were\b"
                            rf"|(?!1 )(?:\d[\d,]*) of (?:the )?{NUM} (?:[\w-]+ ){{0,3}}?was\b)"),
}
DROP = re.compile(r"<(pre|script|style|head)\b.*?</\1>", re.S | re.I)
TAG = re.compile(r"<[^>]+>")


def prose(page_html: str) -> str:
    """The text a reader reads as prose: tags gone, code blocks and outputs gone, entities decoded, spaces folded."""
    text = TAG.sub(" ", DROP.sub(" ", page_html))
    return re.sub(r"\s+", " ", html.unescape(text))


def defects(page_html: str) -> list[tuple[str, str]]:
    """(check, the words around it) for every defect in a page's prose."""
    text = prose(page_html)
    found = []
    for name, pattern in CHECKS.items():
        for m in pattern.finditer(text):
            found.append((name, text[max(0, m.start() - 60):m.end() + 40].strip()))
    return found


if __name__ == "__main__":  # python code/tools/prose_check.py _build/html/book/x.html ...
    bad = 0
    for arg in sys.argv[1:]:
        for name, around in defects(Path(arg).read_text()):
            bad += 1
            print(f"{arg}: {name}: ...{around}...")
    sys.exit(1 if bad else 0)
