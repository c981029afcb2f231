"""A page's inputs, by content (code/tools/page_inputs.py) and as its processes note them (code/tools/inputs/):
what the rebuild of one page, and not of the others, rests on. The whole loop runs in test_book_build.py."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "code" / "tools"))
import page_inputs

HOOK = ROOT / "code" / "tools" / "inputs"


def page(kernel: str, *cells: str) -> str:
    head = f"---\nkernelspec:\n  display_name: x\n  language: x\n  name: {kernel}\n---\n# A page\n\n"
    return head + "".join(f"```{{code-cell}} x\n{c}\n```\n\nprose naming data/b and code/\n\n" for c in cells)


@pytest.fixture
def checkout(tmp_path):
    root = tmp_path / "root"
    for rel, text in {"data/a/results.csv": "a\n1\n", "data/b/results.csv": "b\n", "code/c/x.c": "int x;\n",
                      "code/c/build/c-x": "binary\n", "code/bin/iobench": "#!/bin/sh\n", "book/p.md": "",
                      ".gitignore": "build/\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    subprocess.run(["git", "-C", str(root), "init", "-q"], check=True)
    return root


def test_a_page_names_the_files_and_folders_its_code_cells_name_not_its_prose(checkout):
    source = page("bash", "cd ../.. && code/c/build/c-x --port 0 &\ncat ../../data/a/results.csv",
                  'for id in x; do code/c/build/$id; done')
    found = {(kind, p.relative_to(checkout).as_posix()) for kind, p in
             page_inputs.named_paths(source, checkout / "book", checkout)}
    assert found == {("file", "code/c/build/c-x"), ("file", "data/a/results.csv"), ("tree", "code/c/build")}


def test_the_kernel_is_read_from_the_front_matter():
    assert page_inputs.kernel_of(page("java", "1")) == "java"
    assert page_inputs.kernel_of("# no front matter\n") == ""


def test_a_folder_s_digest_is_its_files_git_does_not_ignore_or_all_of_a_build_folder(checkout):
    d = page_inputs.Digests(checkout)
    tree = d.digest(d.key("tree", "code/c"))
    (checkout / "code/c/build/c-x").write_text("rebuilt\n")  # ignored: not an input of code/c
    assert page_inputs.Digests(checkout).digest(d.key("tree", "code/c")) == tree
    build = d.digest(d.key("tree", "code/c/build"))  # but the build folder named itself is
    (checkout / "code/c/build/c-x").write_text("rebuilt again\n")
    assert page_inputs.Digests(checkout).digest(d.key("tree", "code/c/build")) != build
    (checkout / "code/c/y.c").write_text("int y;\n")
    assert page_inputs.Digests(checkout).digest(d.key("tree", "code/c")) != tree


def test_a_record_changes_only_with_content_and_names_what_changed(checkout):
    d = page_inputs.Digests(checkout)
    src = checkout / "book" / "p.md"
    src.write_text(page("python3", "print(1)"))
    notes = [f"file {checkout}/data/a/results.csv", f"dir {checkout}/data", f"file {checkout}/_build/x.txt",
             f"file {checkout}/.venv/lib/pandas/__init__.py", "file /home/reader/runs/c-servers/results.csv"]
    rec = page_inputs.record(d, src, notes, [])  # the build's own files are no input; a reader's runs are
    assert set(rec["inputs"]) == {"file book/p.md", "file data/a/results.csv", "dir data",
                                  "file /home/reader/runs/c-servers/results.csv"}
    assert not rec["untraced"] and page_inputs.changed(page_inputs.Digests(checkout), rec) == []
    a = checkout / "data/a/results.csv"
    a.write_text(a.read_text())  # the same bytes again: a restore
    os.utime(a, ns=(1, 1))
    assert page_inputs.changed(page_inputs.Digests(checkout), rec) == []
    a.write_text("a\n2\n")
    (checkout / "data/c").mkdir()  # a new dataset
    (checkout / "data/c/results.csv").write_text("c\n")
    assert page_inputs.changed(page_inputs.Digests(checkout), rec) == ["dir data", "file data/a/results.csv"]


def test_a_folder_s_listing_changes_with_what_is_in_it_not_with_caches(checkout):
    """Python's import system lists each folder it imports from: a __pycache__ (or a build output git ignores) that
    appears there must not re-execute every page; a new module must."""
    d = page_inputs.Digests(checkout)
    key = d.key("dir", "code/c")
    before = d.digest(key)
    (checkout / "code/c/__pycache__").mkdir()
    (checkout / "code/c/build/new-binary").write_text("x")
    assert page_inputs.Digests(checkout).digest(key) == before
    (checkout / "code/c/y.c").write_text("int y;\n")
    assert page_inputs.Digests(checkout).digest(key) != before


def test_what_the_tracking_cannot_see_fails_safe(checkout):
    d = page_inputs.Digests(checkout)
    src = checkout / "book" / "p.md"
    src.write_text(page("python3", "print(1)"))
    assert page_inputs.record(d, src, None, [])["untraced"]  # a Python kernel that left no notes
    assert page_inputs.changed(d, page_inputs.record(d, src, None, [])) == ["its kernel left no notes of what it read"]
    assert page_inputs.changed(d, None) == ["no record of its inputs"]
    src.write_text(page("java", "System.out.println(1);"))  # a JVM notes nothing: its floor and what it names
    rec = page_inputs.record(d, src, None, [])
    assert not rec["untraced"] and {"tree code/bin"} <= set(rec["inputs"])
    src.write_text("# prose only\n")
    assert not page_inputs.record(d, src, None, [])["untraced"]


def test_every_python_process_of_a_page_notes_what_it_read_ran_and_imported_and_not_what_it_wrote(checkout, tmp_path):
    notes = tmp_path / "notes"
    program = (
        "import json, os, subprocess, sys\n"
        f"root = {str(checkout)!r}\n"
        "open(root + '/data/a/results.csv').read()\n"
        "open(root + '/data/written.txt', 'w').write('x')\n"
        "os.listdir(root + '/data')\n"
        "subprocess.run(['/bin/true', '-cp', root + '/code/c:' + root + '/code/bin/*', root + '/code/bin/iobench'])\n"
        "killed = 'import os, signal; open(' + repr(root + '/data/b/results.csv') + ').read(); "
        "os.kill(os.getpid(), 9)'\n"
        "subprocess.run([sys.executable, '-c', killed])\n"  # a kernel stopped with SIGKILL has noted what it read
        "import json\n")
    env = dict(os.environ, PYTHONPATH=f"{HOOK}{os.pathsep}{ROOT / 'code'}", IOBENCH_INPUTS_LOG=str(notes),
               IOBENCH_INPUTS_ROOT=str(checkout))
    subprocess.run([sys.executable, "-c", program], env=env, check=True, timeout=60)
    lines = set(notes.read_text().splitlines())
    assert {f"file {checkout}/data/a/results.csv", f"file {checkout}/data/b/results.csv",  # the child's too
            f"dir {checkout}/data", f"tree {checkout}/code/c", f"tree {checkout}/code/bin",
            f"file {checkout}/code/bin/iobench"} <= lines
    assert not any("written.txt" in line for line in lines)
    assert len(lines) == len(notes.read_text().splitlines())  # each noted once
    # outside a book build the hook does nothing
    env.pop("IOBENCH_INPUTS_LOG")
    notes.unlink()
    subprocess.run([sys.executable, "-c", program], env=env, check=True, timeout=60)
    assert not notes.exists()
