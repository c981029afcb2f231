"""The book build is strict: a failing cell or a missing kernel fails it.

Each test builds a two-page book with the project's real _config.yml and the real
build script (code/tools/build-book), in a temporary folder.
"""
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, venv_env

pytestmark = pytest.mark.book

HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: {kernel}
  language: {language}
  name: {kernel}
---
# A page

"""


def make_book(tmp: Path, kernel: str, language: str, cell: str) -> Path:
    book = tmp / "book"
    (book / "book").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", book / "_config.yml")
    shutil.copy(ROOT / "book" / "references.bib", book / "book" / "references.bib")
    shutil.copytree(ROOT / "book" / "images", book / "book" / "images")  # the favicon
    (book / "code").symlink_to(ROOT / "code")  # for the config's local extension
    (book / "_toc.yml").write_text("format: jb-book\nroot: book/index\nchapters:\n  - file: book/page\n")
    (book / "book" / "index.md").write_text("# Index\n\nA test book.\n")
    page = HEADER.format(kernel=kernel, language=language)
    page += f"```{{code-cell}} {language}\n{cell}\n```\n"
    (book / "book" / "page.md").write_text(page)
    return book


def build(book: Path, out: Path | None = None, **extra_env) -> subprocess.CompletedProcess:
    env = venv_env() | extra_env
    out = book / "out" if out is None else out
    return subprocess.run([str(ROOT / "code/tools/build-book"), str(book), str(out)],
                          env=env, capture_output=True, text=True, timeout=600)


GOOD = {
    "python3": ("python", 'print("fine")'),
    "bash": ("bash", "echo fine"),
    # JJava sends each printf argument as a stream piece of its own: the page shows the line as printed
    "java": ("java", 'for (int i = 1; i <= 1; i++) System.out.printf("%s %d x %s%n", "fine", i, "listing");'),
}
BAD = {
    "python3": ("python", "1 / 0", "ZeroDivisionError"),
    "bash": ("bash", "false", "false"),
    "java": ("java", 'throw new IllegalStateException("boom");', "IllegalStateException"),
}


@pytest.mark.parametrize("kernel", ["python3", "bash", "java"])
def test_good_cell_builds(tmp_path, kernel):
    language, cell = GOOD[kernel]
    book = make_book(tmp_path, kernel, language, cell)
    result = build(book)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    executed = (book / "out/_build/jupyter_execute/book/page.ipynb").read_text()
    assert "fine" in executed
    if kernel == "java":  # printed as a listing, on the page and once in the notebook a reader downloads
        import json
        html = (book / "out/_build/html/book/page.html").read_text()
        assert "fine 1 x listing" in html
        outputs = json.loads(executed)["cells"][-1]["outputs"]
        assert "".join(o["text"] if isinstance(o["text"], str) else "".join(o["text"]) for o in outputs
                       if o["output_type"] == "stream") == "fine 1 x listing\n"


@pytest.mark.parametrize("kernel", ["python3", "bash", "java"])
def test_failing_cell_fails_build(tmp_path, kernel):
    language, cell, marker = BAD[kernel]
    book = make_book(tmp_path, kernel, language, cell)
    result = build(book)
    assert result.returncode != 0
    assert marker in result.stdout + result.stderr
    assert "the book build failed" in result.stderr


def test_missing_kernel_fails_before_building(tmp_path):
    book = make_book(tmp_path, "no-such-kernel", "python", 'print("never")')
    result = build(book)
    assert result.returncode != 0
    assert "book/page.md needs kernel 'no-such-kernel'" in result.stderr
    assert not (book / "out/_build/html").exists()


def test_missing_kernel_fails_jupyter_book_itself(tmp_path):
    book = make_book(tmp_path, "no-such-kernel", "python", 'print("never")')
    result = build(book, BOOK_SKIP_KERNEL_CHECK="1")
    assert result.returncode != 0
    assert "No such kernel named no-such-kernel" in result.stdout + result.stderr


def executed_pages(result: subprocess.CompletedProcess) -> int:
    return (result.stdout + result.stderr).count("Executing notebook")


@pytest.mark.live  # four builds of a scratch book (36 s): make test-live, beside the book's own smoke build
def test_second_build_executes_nothing_until_an_input_changes(tmp_path):
    """`make book` twice: the second run executes no cell and rewrites no page; a change
    in data/ re-executes every page, and ignored files (test caches) do not."""
    book = make_book(tmp_path, "python3", "python", 'print("fine")')
    (book / "data").mkdir()
    (book / "data" / "results.csv").write_text("a,b\n1,2\n")
    (book / ".gitignore").write_text("_build/\n.pytest_cache/\n")
    git = ["git", "-C", str(book), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "book"], check=True)

    # Built in place, as `make book` does (the output lands in the excluded _build/).
    first = build(book, out=book)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert executed_pages(first) == 1
    page = book / "_build/html/book/page.html"
    before = (page.stat().st_mtime_ns, page.read_bytes())

    again = build(book, out=book)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert executed_pages(again) == 0, again.stdout[-2000:]
    assert (page.stat().st_mtime_ns, page.read_bytes()) == before

    (book / "data" / ".pytest_cache").mkdir()
    (book / "data" / ".pytest_cache" / "lastfailed").write_text("{}")
    ignored = build(book, out=book)
    assert executed_pages(ignored) == 0, "a git-ignored cache file forced a rebuild"

    (book / "data" / "results.csv").write_text("a,b\n1,3\n")
    changed = build(book, out=book)
    assert changed.returncode == 0
    assert executed_pages(changed) == 1, "a changed data file did not re-execute the pages"

    # A reader's own runs (IOBENCH_MINE) are drawn beside the book's: pointing at them re-executes the pages,
    # and so does a new run in that folder; the same folder again executes nothing.
    mine = tmp_path / "mine"
    (mine / "c-servers").mkdir(parents=True)
    (mine / "c-servers" / "results.csv").write_text("a\n1\n")
    assert executed_pages(build(book, out=book, IOBENCH_MINE=str(mine))) == 1
    assert executed_pages(build(book, out=book, IOBENCH_MINE=str(mine))) == 0
    (mine / "c-servers" / "results.csv").write_text("a\n2\n")
    assert executed_pages(build(book, out=book, IOBENCH_MINE=str(mine))) == 1


def _claim_cell(doctor: str) -> str:
    """The open-loop page's own check of its exercise's premise, run on the captured cross-check as the page reads
    it, after `doctor` changed those numbers."""
    page = (ROOT / "book" / "method" / "open-loop.md").read_text()
    check = page[page.index("# the exercise's premise"):]
    check = check[:check.index("```")]
    return (f"import sys\nsys.path.insert(0, {str(ROOT / 'code')!r})\n"
            "from iobench import registry\nfrom iobench.book.claims import claim\nfrom myst_nb import glue\n"
            'xc = registry.obtain("open-loop-crosscheck", "replay")\nX = xc.summary()\n'
            f"{doctor}\n{check}")


def test_a_page_whose_data_contradict_its_claim_fails_the_build(tmp_path):
    """The premise of open-loop's exercise 4 (the generator costs more per request at low rates) holds on the data
    and the page builds; with the highest rate's CPU per request made ten times the lowest's, the same cell stops
    the build, naming the sentence it can no longer say."""
    holds = build(make_book(tmp_path / "holds", "python3", "python", _claim_cell("")))
    assert holds.returncode == 0, holds.stdout[-3000:] + holds.stderr[-3000:]
    doctored = _claim_cell('top = X.rate == X[(X.loop == "open") & (X.tool == "openloop")].rate.max()\n'
                           'X.loc[top, "client_cpu_us_per_req"] = 10 * X.client_cpu_us_per_req.max()')
    broken = build(make_book(tmp_path / "broken", "python3", "python", doctored))
    assert broken.returncode != 0
    out = broken.stdout + broken.stderr
    assert "ClaimBroken" in out and "the generator's CPU per request is higher at low rates" in out
