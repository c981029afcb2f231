"""The glue snapshot (code/tools/glue_values.py): reads what myst-nb wrote for each glue()
call, and names every value that moved, appeared or vanished."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import glue_values


def glue_output(name: str, data: dict) -> dict:
    # one entry of the PAGE.glue.json myst-nb writes: the glue() output, MIME prefix stripped
    return {"output_type": "display_data", "data": data,
            "metadata": {"scrapbook": {"name": name, "mime_prefix": "application/papermill.record/"}}}


PAGE = {
    "c_rps": glue_output("c_rps", {"text/plain": "1234.5"}),
    "fig": glue_output("fig", {"image/png": "iVBOR...", "text/plain": ["<Figure size 640x480 ", "with 1 Axes>"]}),
    "img": glue_output("img", {"image/png": "iVBOR..."}),
    "md": glue_output("md", {"text/markdown": "`c-epoll` and `nginx`",
                             "text/plain": "<IPython.core.display.Markdown object>"}),
}


def test_glued_reads_every_value_as_its_text():
    assert glue_values.glued(PAGE) == {"c_rps": "1234.5", "fig": "<Figure size 640x480 with 1 Axes>", "img": "<png>",
                                       "md": "`c-epoll` and `nginx`"}   # Markdown: its text, not its object's repr


def test_a_value_measured_live_counts_as_glued_whatever_it_is():
    """A lab demo's number changes every build: its name says so, and the snapshot holds only that it is glued."""
    one = glue_values.glued({"live_waits": glue_output("live_waits", {"text/plain": "0.98"})})
    other = glue_values.glued({"live_waits": glue_output("live_waits", {"text/plain": "0.61"})})
    assert one == other == {"live_waits": "<measured live>"}
    assert glue_values.changes({"p": one}, {"p": {}}) == ["p: live_waits is no longer glued (was '<measured live>')"]


def test_collect_reads_the_glue_files_of_a_build(tmp_path):
    page = tmp_path / "_build" / "jupyter_execute" / "book" / "c" / "results.glue.json"
    page.parent.mkdir(parents=True)
    page.write_text(json.dumps(PAGE))
    (page.parent / "results.ipynb").write_text("{}")
    assert glue_values.collect(tmp_path) == {"book/c/results": glue_values.glued(PAGE)}


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
    page = tmp_path / "_build" / "jupyter_execute" / "p.glue.json"
    page.parent.mkdir(parents=True)
    page.write_text(json.dumps(PAGE))
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"p": {"c_rps": "1000.0", "fig": "<Figure size 640x480 with 1 Axes>",
                                      "img": "<png>", "md": "`c-epoll` and `nginx`"}}))
    assert glue_values.main([str(tmp_path), "--check", str(snap)]) == 1
    err = capsys.readouterr().err
    assert "p: c_rps changed: '1000.0' -> '1234.5'" in err and "make glue-snapshot" in err
    snap.write_text(json.dumps(glue_values.collect(tmp_path)))
    assert glue_values.main([str(tmp_path), "--check", str(snap)]) == 0
