"""The book as a syllabus: one row per chapter of the table of contents, read from the pages and the
datasets themselves so that the instructor guide can never disagree with the book: the part, the
title, the kernel its cells run on, its length, whether it states objectives and prerequisites, how
many exercises it has, the chapters it names as prerequisites, the datasets it reads and what a class
needs to measure them again (root for the network namespaces of a link, Java)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import yaml

from iobench.book import reading
from iobench.run.profiles import DATA

ROOT = DATA.parent
KERNELS = {"python3": "Python", "java": "Java", "bash": "bash (C)"}
WORDS_PER_MINUTE = 200      # reading prose with code and tables, rounded up to 5 minutes
JAVA_SERVERS = re.compile(r"^(java|mina|netty|rpc)")


def _pages(toc: dict) -> list[tuple[str, str]]:
    """(part caption, file) for every chapter of a jb-book table of contents, the root page left out."""
    return [(part.get("caption", ""), chapter["file"])
            for part in toc.get("parts", []) for chapter in part.get("chapters", [])]


def toc_files(root: Path = ROOT) -> list[str]:
    """Every page of `root`/_toc.yml in the book's order, the root page first (paths without .md)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    return [toc["root"]] + [file for _, file in _pages(toc)]


def needs(dataset: str, data: Path = DATA) -> set[str]:
    """What measuring `dataset` again needs beyond a Linux machine with the book installed: root, when
    its servers sit in network namespaces behind a link; Java, when a server or the load is a JVM."""
    meta = json.loads((data / dataset / "meta.json").read_text())
    servers = meta.get("servers") or []
    ids = ([s if isinstance(s, str) else s.get("id", "") for s in servers] if isinstance(servers, list)
           else list(servers))
    got = set()
    if meta.get("link") or meta.get("links"):
        got.add("root")
    if any(JAVA_SERVERS.match(i) for i in ids) or "java" in json.dumps(meta.get("load_commands", "")):
        got.add("Java")
    return got


def chapters(root: Path = ROOT, data: Path = DATA) -> pd.DataFrame:
    """One row per chapter of `root`/_toc.yml, in the order of the book."""
    rows = []
    for part, file in _pages(yaml.safe_load((root / "_toc.yml").read_text())):
        page = root / f"{file}.md"
        text = page.read_text()
        body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text
        title = re.search(r"^# (.+)$", body, re.M)
        kernel = re.search(r"^kernelspec:\n(?:  .*\n)*?  name: (\S+)", text, re.M)
        prereq = re.search(r"^Prerequisites: (.+)$", body, re.M)
        here = Path(file).parent
        linked = [(here / d).as_posix() if not d.startswith("/") else d.lstrip("/")
                  for d in re.findall(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`", prereq.group(1))] if prereq else []
        datasets = sorted(set(re.findall(r'obtain\("([\w-]+)"', body)))
        wanted = set().union(*(needs(d, data) for d in datasets if (data / d / "meta.json").exists()))
        if KERNELS.get(kernel.group(1) if kernel else "") == "Java":
            wanted.add("Java")
        words = reading.read(text).core  # the reading core: deep dives are for the curious
        rows.append({
            "part": part, "chapter": title.group(1).strip() if title else file, "page": file,
            "kernel": KERNELS.get(kernel.group(1), kernel.group(1)) if kernel else "none",
            "reading_min": 5 * math.ceil(words / WORDS_PER_MINUTE / 5) if words else 0,
            "objectives": bool(re.search(r"^```\{admonition\} (?:Objectives|What you will learn)", body, re.M | re.I)),
            "summary": bool(re.search(r"^## Summary", body, re.M)),
            "exercises": len(re.findall(r"^```\{exercise\}", body, re.M)),
            "solutions": len(re.findall(r"^```\{solution(?:-start)?\}", body, re.M)),
            "prerequisites": [_resolve(p) for p in linked],
            "datasets": datasets,
            "to_measure_again": sorted(wanted),
        })
    return pd.DataFrame(rows)


def _resolve(path: str) -> str:
    """A {doc} target relative to a page, normalised to the toc's form (book/part/page)."""
    parts: list[str] = []
    for p in path.split("/"):
        if p == "..":
            parts.pop()
        elif p not in ("", "."):
            parts.append(p)
    return "/".join(parts)
