"""A JVM's memory by what holds it, read at rest: the heap its live objects fill after a full collection, and
the JVM's own account of the native memory it committed (Native Memory Tracking), category by category.

The process's PSS (sampler.group_snapshot) says what the whole process costs the machine, but not why: a JVM
holds a heap of a fixed size here (JAVA_FLAGS: -Xms512m -Xmx512m), so how much of it shows in PSS depends on how
many of its pages were ever touched, not on what is alive. Two readings separate them:

- ``GC.run`` then ``GC.heap_info``: the heap in use right after a full collection, the live objects only (a
  virtual thread's stack lives there, as chunks on the heap, and so do the buffers a server allocates on it);
- ``VM.native_memory summary``: committed KiB per category (Java Heap, Class, Thread, Code, GC, Other, ...); the
  Thread category holds the platform threads' stacks (and their count); Other holds direct buffers. It needs
  the flag ``-XX:NativeMemoryTracking=summary`` from the JVM's start (``FLAGS``), which costs every malloc a
  header, so a plan that reads it measures its rates in runs of its own.

One `jcmd` call sends the three commands (``jcmd PID -f FILE``); its output is kept beside the raw output.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from iobench.servers import manifest

FLAGS = ("-XX:NativeMemoryTracking=summary",)
COMMANDS = ("GC.run", "GC.heap_info", "VM.native_memory summary scale=KB")
COLUMNS = ["jvm_heap_live_kib", "jvm_committed_kib", "jvm_heap_committed_kib", "jvm_thread_kib",
           "jvm_stack_kib", "jvm_threads", "jvm_other_kib", "jvm_memory_file"]
# a dataset's summary of them (where its plan read them): the median over repeats of each point
SUMMARY = {c: (c, "median") for c in COLUMNS if c != "jvm_memory_file"}

_HEAP_USED = re.compile(r"heap\s+total\b.*?\bused (\d+)K")
_TOTAL = re.compile(r"^Total: reserved=\d+KB, committed=(\d+)KB", re.M)
_CATEGORY = re.compile(r"^-\s+(.+?) \(reserved=\d+KB, committed=(\d+)KB\)")
_THREADS = re.compile(r"\(threads #(\d+)\)")
_STACK = re.compile(r"\(stack: reserved=\d+KB, committed=(\d+)KB")


class JvmMemoryUnavailable(RuntimeError):
    """The JVM did not answer jcmd, or answered without the readings (NMT off): said, not guessed."""


def parse(text: str) -> dict:
    """jcmd's output of COMMANDS -> {'heap_live_kib', 'committed_kib', 'threads', 'stack_kib', 'categories'}:
    the heap used after the collection, NMT's total committed, the platform threads and their stacks'
    committed KiB, and every category's committed KiB."""
    heap = _HEAP_USED.search(text)
    total = _TOTAL.search(text)
    if heap is None or total is None:
        missing = "the heap after a collection" if heap is None else "Native Memory Tracking's summary"
        raise JvmMemoryUnavailable(f"jcmd's output lacks {missing} (was the JVM started with "
                                   f"{FLAGS[0]}?): {text[-300:]!r}")
    categories, threads, stack, current = {}, None, None, None
    for line in text.splitlines():
        cat = _CATEGORY.match(line)
        if cat:
            current = cat.group(1).strip()
            categories[current] = int(cat.group(2))
            continue
        if current == "Thread":
            t = _THREADS.search(line)
            s = _STACK.search(line)
            threads = int(t.group(1)) if t else threads
            stack = int(s.group(1)) if s else stack
    return {"heap_live_kib": int(heap.group(1)), "committed_kib": int(total.group(1)), "threads": threads,
            "stack_kib": stack, "categories": categories}


def read(pid: int, java_home: Path, out: Path, cpus: str | None = None) -> dict:
    """A full collection in the JVM `pid`, then its heap and native memory (parse), jcmd's output kept in `out`
    (jcmd pinned to `cpus`, the load generator's core, where given)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    commands = out.with_suffix(".jcmd")
    commands.write_text("\n".join(COMMANDS) + "\n")
    argv = (["taskset", "-c", cpus] if cpus else []) + [str(java_home / "bin" / "jcmd"), str(pid), "-f",
                                                         str(commands)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        raise JvmMemoryUnavailable(f"jcmd {pid} did not answer in 120 s") from e
    finally:
        commands.unlink(missing_ok=True)
    out.write_text(f"$ {' '.join(argv[:-1])} ({'; '.join(COMMANDS)})\n# exit {done.returncode}\n"
                   + done.stdout + done.stderr)
    if done.returncode != 0:
        raise JvmMemoryUnavailable(f"jcmd {pid} exited {done.returncode}: {(done.stdout + done.stderr)[-300:]}")
    return parse(done.stdout)


def columns(got: dict, file: str) -> dict:
    """A reading as a row's columns."""
    cats = got["categories"]
    return {"jvm_heap_live_kib": got["heap_live_kib"], "jvm_committed_kib": got["committed_kib"],
            "jvm_heap_committed_kib": cats.get("Java Heap"), "jvm_thread_kib": cats.get("Thread"),
            "jvm_stack_kib": got["stack_kib"], "jvm_threads": got["threads"], "jvm_other_kib": cats.get("Other"),
            "jvm_memory_file": file}


def flags(plan, server) -> tuple[str, ...]:
    """The JVM flags a plan that reads the JVMs' memory starts a Java server with (none otherwise)."""
    return FLAGS if plan.jvm_memory and server.lang == "Java" else ()


def at_rest(run, srv, stem: str) -> dict:
    """For a plan that reads the JVMs' memory, a Java server's after a point (read; jcmd's output kept as the
    raw file `stem`-jvm-memory.txt); nothing for any other plan or server. The full collection moves the heap
    the process touched: read its PSS before."""
    if not flags(run.experiment.plan, srv.server):
        return {}
    file = f"{stem}-jvm-memory.txt"
    got = read(srv.pid, manifest.java_home(), run.writer.raw_path(file), run.client_cpus)
    return columns(got, str(Path("raw") / file))
