"""The instructor guide's chapter map is read from the pages and the datasets: these tests check that it
reads what a page says (title, kernel, objectives, exercises, prerequisites, datasets) and what
measuring a dataset again needs, on a small synthetic book and on the real one."""

import json
from pathlib import Path

import yaml

from iobench.book import syllabus

HEADER = "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\nkernelspec:\n" \
         "  display_name: {k}\n  language: {k}\n  name: {k}\n---\n\n"


def _book(tmp_path: Path) -> Path:
    root = tmp_path
    (root / "book" / "part").mkdir(parents=True)
    (root / "_toc.yml").write_text(yaml.safe_dump({"format": "jb-book", "root": "book/intro", "parts": [
        {"caption": "Models", "chapters": [{"file": "book/part/first"}, {"file": "book/part/second"}]}]}))
    (root / "book" / "part" / "first.md").write_text(HEADER.format(k="java") + "# The first\n\n" + "word " * 450 + "\n")
    exercise = ("```{exercise}\n:label: xN\n\nQ\n```\n\n"
                "```{solution-start} xN\n:class: dropdown\n```\n\nA\n\n```{solution-end}\n```\n\n")
    (root / "book" / "part" / "second.md").write_text(
        HEADER.format(k="python3") + "# The second\n\n```{admonition} What you will learn\n:class: tip\n- a\n```\n\n"
        "Prerequisites: {doc}`first` and {doc}`the method <../method/measuring>`.\n\n"
        "```{code-cell} ipython3\nd = registry.obtain(\"linked\")\ne = registry.obtain(\"plain\")\n```\n\n"
        + "".join(exercise.replace("xN", f"x{i}") for i in range(4)))
    data = root / "data"
    for name, meta in {"linked": {"links": ["veth"], "servers": ["c-epoll"]},
                       "plain": {"servers": ["c-epoll", "java-netty"]}}.items():
        (data / name).mkdir(parents=True)
        (data / name / "meta.json").write_text(json.dumps(meta))
    return root


def test_the_map_reads_each_chapter_from_its_page(tmp_path):
    root = _book(tmp_path)
    got = syllabus.chapters(root, root / "data").set_index("page")
    assert list(got.index) == ["book/part/first", "book/part/second"]
    first, second = got.loc["book/part/first"], got.loc["book/part/second"]
    assert (first.chapter, first.kernel, first.exercises, first.objectives) == ("The first", "Java", 0, False)
    assert first.reading_min == 5 and first.to_measure_again == ["Java"] and first.prerequisites == []
    assert (second.chapter, second.kernel, second.exercises, second.solutions) == ("The second", "Python", 4, 4)
    assert second.objectives and second.prerequisites == ["book/part/first", "book/method/measuring"]
    assert second.datasets == ["linked", "plain"] and second.to_measure_again == ["Java", "root"]


def test_the_real_book_maps_every_chapter_of_its_table_of_contents():
    got = syllabus.chapters()
    toc = yaml.safe_load((syllabus.ROOT / "_toc.yml").read_text())
    assert list(got.page) == [c["file"] for p in toc["parts"] for c in p["chapters"]]
    clients = got.set_index("page").loc["book/clients/http-clients"]
    assert clients.kernel == "Python" and clients.exercises >= 4 and clients.objectives
    assert "book/clients/how-clients-wait" in clients.prerequisites
    assert clients.to_measure_again == ["Java", "root"]         # a Java load generator, a delay link
    assert set(got.prerequisites.sum()) <= set(got.page)        # every named prerequisite is a chapter of the book


def test_every_content_chapter_can_be_assigned_alone():
    """Outside Getting started and the Appendix, every chapter states what it teaches and what it assumes, ends
    with a summary, and has at least four exercises, each with its solution."""
    book = syllabus.chapters()
    content = book[~book["part"].isin(["Getting started", "Appendix"])]
    assert len(content) >= 18
    lacking = {row.page: [what for what, ok in (("objectives", row.objectives), ("summary", row.summary),
                                                 ("prerequisites", bool(row.prerequisites)),
                                                 ("four exercises", row.exercises >= 4),
                                                 ("a solution to each", row.solutions == row.exercises)) if not ok]
               for row in content.itertuples()}
    assert {page: what for page, what in lacking.items() if what} == {}
