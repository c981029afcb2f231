"""A page a reader can take in: each chapter's reading core is at most about CORE_WORDS words of prose, and
the depth moved out of it sits in deep-dive sections the core links to."""
from __future__ import annotations

import pytest

from conftest import ROOT, toc_pages
from iobench.book.reading import CORE_WORDS, read

PAGE = """---
jupytext:
  text_representation: {extension: .md}
---

# A title

One two three four.

```{code-cell} ipython3
print("not prose, not counted")
```

```{admonition} Five
:class: tip
six seven
```

```c
int main(void) { return 0; }
```

See {ref}`x-deep` for the rest.
% a note for developers, never shown

(x-deep)=
## Deep dive: every repeat

Eight nine ten.

```{code-cell} ipython3
x = 1
```

## Exercises

Eleven.
"""


def test_the_count_reads_prose_and_leaves_code_and_deep_dives_out():
    r = read(PAGE)
    # core: "A title" 2, "One two three four." 4, "Five" 1, "six seven" 2, "See ... rest." 5, "Exercises" 1,
    # "Eleven." 1; deep: its heading 5 ("##" not a word: Deep dive: every repeat) and "Eight nine ten." 3
    assert (r.core, r.deep) == (16, 7)
    assert r.deep_labels == ["x-deep"] and "x-deep" in r.core_refs
    unlabelled = read(PAGE.replace("(x-deep)=\n", ""))
    assert unlabelled.deep_labels == [""]


@pytest.mark.parametrize("page", toc_pages())
def test_a_chapter_s_reading_core_is_short_and_its_deep_dives_are_linked_from_it(page):
    r = read((ROOT / f"{page}.md").read_text())
    assert r.core <= CORE_WORDS, (f"{page}: {r.core} words of prose outside deep dives (at most {CORE_WORDS}): "
                                  "move depth into a '## Deep dive: ...' section at the end and link it")
    for label in r.deep_labels:
        assert label, f"{page}: a deep dive without a (label)= line above its heading"
        assert label in r.core_refs, f"{page}: the reading core never links to its deep dive {label!r}"
