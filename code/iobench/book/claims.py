"""The claims a page makes, checked against the data it reads.

A comparative, causal or universal sentence ("more than", "fewer", "every", "several times",
"the bottleneck") is written in the page's prose, and the cell that computes its numbers checks
the condition that makes it true, from the same data:

    claim(hi < 1.15 * lo, "the prediction at 400 µs is about the same whatever the client", lo=lo, hi=hi)

While the condition holds, claim() returns nothing (a cell's last line shows no output); when the
data stop supporting the sentence, it raises ClaimBroken with the sentence and the evidence, the
cell fails, and so does the book's build (it executes every page and stops on an error). Where
the data choose between two sentences, the page glues the one they support, computed in the cell.
A condition is one truth value: a comparison of two numbers, or a Series reduced with .all() or
.any(); a Series itself is refused, since "every" and "some" are different claims.

Under recording() a claim raises nothing: it is kept, held or not, with its evidence, so that the same claims can
be evaluated on another run (a reader's, book/mine.py) and said to hold there or not.
"""
from __future__ import annotations

import contextlib
import numbers
from dataclasses import dataclass, field

from iobench.run.lazy import lazy

np = lazy("numpy")  # imported at first use: the command line needs neither


@dataclass(frozen=True)
class Checked:
    """A claim as one run's data decided it: the sentence, whether it held, and the evidence it was given."""
    sentence: str
    holds: bool
    evidence: dict = field(default_factory=dict)
    at: dict = field(default_factory=dict)   # where in the data it was decided (a level, the repeats), if it says

    def figures(self) -> str:
        """The evidence in short words: name=value, ..."""
        return ", ".join(f"{k}={_short(v)}" for k, v in self.evidence.items())


_recording: list[list[Checked]] = []


class ClaimBroken(AssertionError):
    """A page's sentence that its data no longer support."""


def claim(holds, sentence: str, at: dict | None = None, **evidence) -> None:
    """Nothing, if `holds` is true; ClaimBroken naming `sentence` and its evidence if not. `at` says where in
    the data the claim is decided when the data choose it (the highest level measured, how many repeats a range
    spans): on another run (a reader's, book/mine.py) decided elsewhere, the claim is not the book's sentence
    and is said to be not evaluated there."""
    if not isinstance(holds, (bool, np.bool_, numbers.Integral)):
        raise TypeError(f"a claim's condition is one truth value, not {type(holds).__name__} "
                        f"(reduce it with .all() or .any()): {sentence!r}")
    if _recording:
        _recording[-1].append(Checked(sentence, bool(holds), dict(evidence), dict(at or {})))
        return
    if not holds:
        shown = ", ".join(f"{k}={_short(v)}" for k, v in evidence.items())
        raise ClaimBroken(f"the data no longer support: {sentence!r}" + (f" ({shown})" if shown else ""))


@contextlib.contextmanager
def recording():
    """Within it, claim() keeps every claim it is given (a list of Checked, in order) and raises nothing."""
    kept: list[Checked] = []
    _recording.append(kept)
    try:
        yield kept
    finally:
        _recording.pop()


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    text = repr(v)
    return text if len(text) <= 120 else text[:117] + "..."
