"""The student edition (`make book-student`, code/tools/student_book.py): every solution gone from its
pages and from their downloadable notebooks, every exercise still there.

The first tests check the stripping on small notebooks; the site test compares the student site
(STUDENT_SITE) with the full one built from the same run (BOOK_SITE): each solution's prose is
in the full site, so its absence from the student site is a real check."""

from __future__ import annotations

import html
import os
import re
import sys
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "code" / "tools"))
import student_book


def md(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def code(text: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": text, "outputs": [], "execution_count": 1}


def test_a_solution_and_its_code_cells_go_and_the_rest_stays():
    cells = [md("Intro.\n\n```{exercise}\n:label: e1\n\nWhy?\n```\n\n"
                "```{solution-start} e1\n:class: dropdown\n```\n\nSecret prose.\n"),
             code("secret = 42"),
             md("More secret.\n\n```{solution-end}\n```\n\nAfter the solution.\n"),
             code("shown = 1"),
             md("```{solution-start} e2\n```\nOnly secret.\n```{solution-end}\n```\n")]
    kept, removed = student_book.strip_solutions(cells, "page")
    text = "".join(c["source"] for c in kept)
    assert removed == 2
    assert "Secret" not in text and "secret" not in text and "{solution" not in text
    assert "{exercise}" in text and "Why?" in text and "After the solution." in text and "shown = 1" in text
    assert [c["cell_type"] for c in kept] == ["markdown", "markdown", "code"]   # the empty last cell is dropped


@pytest.mark.parametrize("cells, message", [
    ([md("```{solution} e1\nA\n```\n")], "solution-start/end"),
    ([md("```{solution-start} e1\n```\nA\n")], "never closed"),
    ([md("```{solution-start} e1\n```\n```{solution-start} e2\n```\n")], "inside another"),
])
def test_a_solution_that_cannot_be_stripped_is_an_error(cells, message):
    with pytest.raises(ValueError, match=message):
        student_book.strip_solutions(cells, "page")


def _text(path: Path) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", path.read_text(), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def _solutions_and_exercises() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per page: sentences of prose from its solutions (plain words, no markup), and its exercise labels."""
    solutions, exercises = {}, {}
    for page in student_book.pages(ROOT):
        source = (ROOT / f"{page}.md").read_text()
        exercises[page] = re.findall(r"^```\{exercise\}[^\n]*\n:label: (\S+)", source, re.M)
        bodies = re.findall(r"^```\{solution-start\}.*?^```\{solution-end\}", source, re.M | re.S)
        prose = [re.sub(r"^```\{code-cell\}.*?^```$", " ", b, flags=re.M | re.S) for b in bodies]
        # runs of plain words between any markup, which the page renders verbatim
        rest = re.sub(r"^```\{solution-start\}.*?^```\{solution-end\}", " ", source, flags=re.M | re.S)
        solutions[page] = [run.strip() for b in prose for line in b.splitlines() if not line.startswith(("```", ":"))
                           for run in re.split(r"[^A-Za-z ,;]+", line)
                           if len(run.strip()) >= 30 and run.strip() not in rest]    # not also said outside it
    return solutions, exercises


@pytest.mark.site
def test_the_student_site_has_every_exercise_and_no_solution():
    full = Path(os.environ.get("BOOK_SITE", ROOT / "_build" / "html"))
    student = Path(os.environ.get("STUDENT_SITE", ROOT / "_build" / "student" / "_build" / "html"))
    if not (student / "index.html").exists():
        pytest.fail(f"no student site at {student}: run `make book-student` first")
    solutions, exercises = _solutions_and_exercises()
    assert sum(map(len, exercises.values())) >= 40 and sum(map(len, solutions.values())) >= 20
    for page in exercises:
        full_text, student_html = _text(full / f"{page}.html"), (student / f"{page}.html").read_text()
        student_text = _text(student / f"{page}.html")
        for label in exercises[page]:
            assert f'id="{label}"' in student_html, f"{page}: exercise {label} is missing from the student site"
        if solutions[page]:
            assert 'class="solution' in (full / f"{page}.html").read_text(), f"{page}: no solution in the full site"
        assert 'class="solution' not in student_html, f"{page}: a solution is rendered in the student site"
        for sentence in solutions[page]:
            assert sentence in full_text, f"{page}: the check reads the full site wrong ({sentence!r})"
            assert sentence not in student_text, f"{page}: solution text reaches the student site: {sentence!r}"
        notebook = student / "_sources" / f"{page}.ipynb"
        assert notebook.exists() and "solution-start" not in notebook.read_text(), \
            f"{page}: its downloadable notebook is missing or holds a solution"
    assert "(student edition)" in (student / "book" / "intro.html").read_text()
    # every file the full site offers for download (a flame graph in data/, say), the student site offers too
    offered = {p.name for p in (full / "_downloads").rglob("*") if p.is_file()}
    assert offered and offered <= {p.name for p in (student / "_downloads").rglob("*") if p.is_file()}
