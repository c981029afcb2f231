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


def build(book: Path, **extra_env) -> subprocess.CompletedProcess:
    env = venv_env() | extra_env
    return subprocess.run([str(ROOT / "code/tools/build-book"), str(book), str(book / "out")],
                          env=env, capture_output=True, text=True, timeout=600)


GOOD = {
    "python3": ("python", 'print("fine")'),
    "bash": ("bash", "echo fine"),
    "java": ("java", 'System.out.println("fine");'),
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
