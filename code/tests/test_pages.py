"""The analysis behind the pages lives in tested modules (iobench/book/pages/): each page hides little code."""
from __future__ import annotations


import jupytext
import pytest

from conftest import ROOT, toc_pages
from iobench.book.pages import HIDDEN_LINES, glue_all

HIDING = {"remove-input", "remove-cell"}


def hidden_lines(page_text: str) -> int:
    """Lines of code (not blank) in the cells whose input a reader never sees."""
    nb = jupytext.reads(page_text, fmt="md:myst")
    return sum(sum(1 for line in c.source.splitlines() if line.strip())
               for c in nb.cells if c.cell_type == "code" and HIDING & set(c.metadata.get("tags", [])))


PAGE = """---
jupytext:
  text_representation: {extension: .md, format_name: myst}
kernelspec: {display_name: Python 3, language: python, name: python3}
---
# A page

```{code-cell} ipython3
:tags: [remove-input]
a = 1

b = 2
```

```{code-cell} ipython3
print(a)
```

```{code-cell} ipython3
:tags: [remove-cell]
glue("x", a)
```
"""


def test_hidden_lines_counts_only_the_code_a_reader_never_sees():
    assert hidden_lines(PAGE) == 3


@pytest.mark.parametrize("page", toc_pages())
def test_a_page_hides_at_most_a_hundred_lines_of_code(page):
    source = ROOT / f"{page}.md"
    if not source.exists():
        pytest.skip("not a Markdown page")
    n = hidden_lines(source.read_text())
    assert n <= HIDDEN_LINES, (f"{page} hides {n} lines of code from its reader: move its analysis into "
                               f"iobench/book/pages/ (tested) and glue what it computes")


def test_glue_all_refuses_a_name_glued_twice(monkeypatch):
    import myst_nb
    got = []
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: got.append(name))
    glue_all({"a": "1"}, {"b": "2"})
    assert got == ["a", "b"]
    with pytest.raises(ValueError, match="'a' is glued twice"):
        glue_all({"a": "1"}, {"a": "2"})
