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


def test_good_cells_build_in_every_kernel(tmp_path):
    """One book, a page in each kernel (one build: each is as long as a page's kernel start, not a book's)."""
    book = make_book(tmp_path, "python3", *GOOD["python3"])
    for kernel in ("bash", "java"):
        language, cell = GOOD[kernel]
        (book / "book" / f"{kernel}.md").write_text(HEADER.format(kernel=kernel, language=language)
                                                   + f"```{{code-cell}} {language}\n{cell}\n```\n")
    (book / "_toc.yml").write_text("format: jb-book\nroot: book/index\nchapters:\n"
                                   + "".join(f"  - file: book/{p}\n" for p in ("page", "bash", "java")))
    result = build(book)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for page in ("page", "bash", "java"):
        assert "fine" in (book / f"out/_build/jupyter_execute/book/{page}.ipynb").read_text(), page
    # Java prints as a listing, on the page and once in the notebook a reader downloads
    import json
    html = (book / "out/_build/html/book/java.html").read_text()
    assert "fine 1 x listing" in html
    outputs = json.loads((book / "out/_build/jupyter_execute/book/java.ipynb").read_text())["cells"][-1]["outputs"]
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


def executed(result: subprocess.CompletedProcess) -> set[str]:
    """The pages a build executed, by file name without .md."""
    return {Path(line.split(": Executing notebook")[0]).stem
            for line in (result.stdout + result.stderr).splitlines() if ": Executing notebook" in line}


PAGES = {  # page -> (kernel, language, cell): each reads one input of its own, or none
    "reads": ("python3", "python", 'print(open("../data/a/results.csv").read())'),
    "imports": ("python3", "python", 'import sys\nsys.path.insert(0, "../lib")\nimport helper\nprint(helper.X)'),
    "shell": ("bash", "bash", "cat ../data/b/results.csv"),
    "plain": ("python3", "python", 'print("fine")'),
}


def make_tracked_book(tmp: Path) -> Path:
    """A git work tree with four pages, two datasets and one module of analysis; the build's own tools copied in
    (not linked: a page's inputs are read under the book's root)."""
    book = tmp / "book"
    (book / "book").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", book / "_config.yml")
    shutil.copy(ROOT / "book" / "references.bib", book / "book" / "references.bib")
    shutil.copytree(ROOT / "book" / "images", book / "book" / "images")
    shutil.copytree(ROOT / "code" / "tools", book / "code" / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    toc = "".join(f"  - file: book/{name}\n" for name in PAGES)
    (book / "_toc.yml").write_text(f"format: jb-book\nroot: book/index\nchapters:\n{toc}")
    (book / "book" / "index.md").write_text("# Index\n\nA test book.\n")
    for name, (kernel, language, cell) in PAGES.items():
        page = HEADER.format(kernel=kernel, language=language) + f"```{{code-cell}} {language}\n{cell}\n```\n"
        (book / "book" / f"{name}.md").write_text(page)
    for name in ("a", "b"):
        (book / "data" / name).mkdir(parents=True)
        (book / "data" / name / "results.csv").write_text(f"{name},b\n1,2\n")
    (book / "lib").mkdir()
    (book / "lib" / "helper.py").write_text("X = 1\n")
    (book / ".gitignore").write_text("_build/\n.pytest_cache/\n__pycache__/\n")
    git = ["git", "-C", str(book), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "book"], check=True)
    return book


def test_a_rebuild_executes_exactly_the_pages_whose_inputs_changed(tmp_path):
    """`make book` again: nothing runs; a dataset changed runs the page that reads it, a module changed the page
    that imports it, a file a bash cell names the bash page; the same bytes written again (a restore from git)
    run nothing; a fresh output folder, or ALL=1, runs every page."""
    book = make_tracked_book(tmp_path)

    def rebuild(**env) -> set[str]:
        result = build(book, out=book, **env)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        return executed(result)

    assert rebuild() == set(PAGES)
    for path in ("data/a/results.csv", "lib/helper.py", "book/plain.md"):  # same bytes, newer file time
        (book / path).write_bytes((book / path).read_bytes())
    (book / "data" / ".pytest_cache").mkdir()
    (book / "data" / ".pytest_cache" / "lastfailed").write_text("{}")
    assert rebuild() == set()  # nothing changed: what a test leaves in data/ and newer file times are no change
    (book / "data" / "a" / "results.csv").write_text("a,b\n1,3\n")
    assert rebuild() == {"reads"}
    (book / "lib" / "helper.py").write_text("X = 2\n")
    assert rebuild() == {"imports"}
    (book / "data" / "b" / "results.csv").write_text("b,b\n1,3\n")
    assert rebuild() == {"shell"}
    assert rebuild(BOOK_ALL="1") == set(PAGES)
    fresh = build(book, out=tmp_path / "fresh")
    assert fresh.returncode == 0 and executed(fresh) == set(PAGES)


@pytest.mark.live  # three builds of a scratch book: make test-live
def test_a_reader_s_runs_count_as_an_input(tmp_path):
    """A reader's own runs (IOBENCH_MINE) are drawn beside the book's: pointing at them re-executes the pages,
    and so does a new run in that folder; the same folder again executes nothing."""
    book = make_book(tmp_path, "python3", "python",
                     'import os\nprint(open(os.environ["IOBENCH_MINE"] + "/c-servers/results.csv").read())')
    mine = tmp_path / "mine"
    (mine / "c-servers").mkdir(parents=True)
    (mine / "c-servers" / "results.csv").write_text("a\n1\n")
    assert executed_pages(build(book, out=book, IOBENCH_MINE=str(mine))) == 1
    assert executed_pages(build(book, out=book, IOBENCH_MINE=str(mine))) == 0
    (mine / "c-servers" / "results.csv").write_text("a\n2\n")
    assert executed_pages(build(book, out=book, IOBENCH_MINE=str(mine))) == 1


def _claim_cell(doctor: str) -> str:
    """The open-loop page's own check of its exercise's premise (pages/open_loop.exercise4, which the page glues),
    run on the captured cross-check as the page reads it, after `doctor` changed its summary X."""
    return (f"import sys\nsys.path.insert(0, {str(ROOT / 'code')!r})\n"
            "from iobench import registry\nfrom iobench.book.pages import open_loop\n"
            'xc = registry.obtain("open-loop-crosscheck", "replay")\nX = xc.summary()\n'
            f"{doctor}\n"
            "xc.summary = lambda: X\n"
            "print(sorted(open_loop.exercise4(xc)))")


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
