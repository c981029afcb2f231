"""The glue snapshot (code/tools/glue_values.py): reads what myst-nb wrote for each glue()
call, and names every value that moved, appeared or vanished."""
import json
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"
sys.path.insert(0, str(TOOLS))
import glue_values  # noqa: E402


def glue_output(name: str, data: dict) -> dict:
    # the shape myst-nb's glue() leaves in an executed notebook
    return {"output_type": "display_data", "data": data,
            "metadata": {"scrapbook": {"name": name, "mime_prefix": "application/papermill.record/"}}}


NOTEBOOK = {"cells": [
    {"cell_type": "code", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": "not glued\n"},
        glue_output("c_rps", {"application/papermill.record/text/plain": "1,234"}),
        glue_output("fig", {"application/papermill.record/image/png": "iVBOR...",
                            "application/papermill.record/text/plain": ["<Figure size 640x480 ", "with 1 Axes>"]}),
    ]},
    {"cell_type": "markdown", "source": "x"},
    {"cell_type": "code", "outputs": [glue_output("img", {"image/png": "iVBOR..."})]},
]}


def test_glued_reads_every_glue_output_as_the_reader_sees_it():
    assert glue_values.glued(NOTEBOOK) == {"c_rps": "1,234", "fig": "<Figure size 640x480 with 1 Axes>",
                                           "img": "<png>"}


def test_collect_walks_the_executed_notebooks_of_a_build(tmp_path):
    page = tmp_path / "_build" / "jupyter_execute" / "book" / "c" / "results.ipynb"
    page.parent.mkdir(parents=True)
    page.write_text(json.dumps(NOTEBOOK))
    (page.parent / "plain.ipynb").write_text(json.dumps({"cells": []}))
    assert list(glue_values.collect(tmp_path)) == ["book/c/results"]


def test_changes_name_every_moved_new_and_vanished_value(tmp_path):
    before = {"book/c/results": {"a": "1", "b": "2", "gone": "3"}}
    after = {"book/c/results": {"a": "1", "b": "2.5", "new": "4"}, "book/java/results": {"x": "5"}}
    assert glue_values.changes(before, after) == [
        "book/c/results: b changed: '2' -> '2.5'",
        "book/c/results: gone is no longer glued (was '3')",
        "book/c/results: new is new: '4'",
        "book/java/results: x is new: '5'",
    ]
    assert glue_values.changes(before, before) == []


def test_check_fails_and_says_how_to_update_the_snapshot(tmp_path, capsys):
    page = tmp_path / "_build" / "jupyter_execute" / "p.ipynb"
    page.parent.mkdir(parents=True)
    page.write_text(json.dumps(NOTEBOOK))
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"p": {"c_rps": "1,000", "fig": "<Figure size 640x480 with 1 Axes>",
                                      "img": "<png>"}}))
    assert glue_values.main([str(tmp_path), "--check", str(snap)]) == 1
    err = capsys.readouterr().err
    assert "p: c_rps changed: '1,000' -> '1,234'" in err and "make glue-snapshot" in err
    snap.write_text(json.dumps(glue_values.collect(tmp_path)))
    assert glue_values.main([str(tmp_path), "--check", str(snap)]) == 0
