"""How much a reader must read of a page: the prose of its reading core, in words.

A chapter has a reading core (the question, the measurement, the explanation, the summary and the
exercises) of at most about CORE_WORDS words. Depth that only some readers want goes into deep-dive
sections: a `##` section whose title starts with "Deep dive", labelled (`(label)=` on the line above)
and linked from the core (`{ref}` to that label), so a reader who wants it finds it. Everything from
such a heading to the next `##` heading (or the end of the page) is the deep dive.

Prose is what a reader reads as text: Markdown paragraphs, lists, tables, admonitions, exercises and
solutions' words. Not prose: the front matter, code cells, literal includes and code blocks (their
outputs are shown, not read as running text), MyST comments and labels.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

CORE_WORDS = 4000
DEEP = re.compile(r"^##\s+Deep dive\b", re.I)
FENCE = re.compile(r"^(`{3,}|~{3,}|:{3,})\s*(\S.*)?$")
# fenced blocks whose body is not read as prose (a directive's name, or a code block's language)
NOT_PROSE = re.compile(r"^\{(code-cell|literalinclude|code-block|code|math|glue:figure|graphviz|raw|csv-table)\}"
                       r"|^[\w+-]+$")
WORD = re.compile(r"[^\W_][\w'’.,:/+-]*")


@dataclass
class Reading:
    core: int = 0                      # words a reader reads outside deep dives
    deep: int = 0                      # words in deep-dive sections
    deep_labels: list[str] = field(default_factory=list)  # each deep dive's label ('' where it has none)
    core_refs: set[str] = field(default_factory=set)       # labels the core links to with {ref}


def read(text: str) -> Reading:
    """Count a MyST Markdown page's prose words, in its reading core and in its deep dives."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    out = Reading()
    fences: list[tuple[str, bool]] = []  # open fences: (the fence, whether its body is prose)
    in_deep = False
    previous = ""
    for line in text.splitlines():
        m = FENCE.match(line)
        if m:
            fence, info = m.group(1), (m.group(2) or "").strip()
            if fences and fence == fences[-1][0] and not info:
                fences.pop()
                continue
            if info:
                fences.append((fence, not NOT_PROSE.match(info) and all(p for _, p in fences)))
                continue
        if fences and not fences[-1][1]:
            continue
        if line.startswith("## "):
            in_deep = bool(DEEP.match(line))
            if in_deep:
                label = re.match(r"^\(([^)]+)\)=\s*$", previous)
                out.deep_labels.append(label.group(1) if label else "")
        previous = line
        if line.startswith(("%", "(")) and re.match(r"^(%|\([^)]+\)=\s*$)", line):
            continue
        if line.lstrip().startswith(":") and re.match(r"^\s*:[\w-]+:", line):
            continue  # a directive's option (:class: tip, :label: ...)
        if not in_deep:
            out.core_refs.update(re.findall(r"\{ref\}`(?:[^`<]*<)?([^`>]+)>?`", line))
        words = len(WORD.findall(line))
        if in_deep:
            out.deep += words
        else:
            out.core += words
    return out
