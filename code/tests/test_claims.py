"""The claim helper: a page's sentence and the condition from its data that makes it true."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iobench.book.claims import ClaimBroken, claim


def test_a_claim_that_holds_says_nothing():
    assert claim(3 > 2, "three is more than two") is None
    assert claim(np.float64(3) > 2, "numpy's truth counts too") is None
    assert claim(pd.Series([1, 2]).gt(0).all(), "every value is positive") is None


def test_a_claim_the_data_contradict_names_its_sentence_and_its_evidence():
    with pytest.raises(ClaimBroken, match=r"no longer support: 'fewer waits per request' \(at_5000=0\.99, at_200=1\)"):
        claim(0.99 > 1.0, "fewer waits per request", at_5000=0.99, at_200=1)


def test_a_series_is_not_a_claim_until_it_says_every_or_some():
    with pytest.raises(TypeError, match=r"reduce it with \.all\(\) or \.any\(\)"):
        claim(pd.Series([True, False]), "every server kept up")
