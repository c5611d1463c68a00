"""nqf_lite.experiments.deep_checks: chapter 9's checks of Theorems 14 and
15.

Expected values are hand counts (the compressed widths k_l + 1 of Thm 15 on
m = 3 inputs, the structure ranks 4 and 3 of the general stack) and the
theorems' exact identities (gaps at rounding), never outputs of the code under
test; the wrong-width and wrong-rate controls must fail.
"""

import numpy as np
import pytest

from nqf_lite.experiments.deep_checks import (
    theorem14_check,
    theorem14_general,
    theorem15_check,
    theorem15_general,
    conditioned_theorem15,
)


def test_theorem14_checks_hold_and_the_wrong_width_fails():
    widths, closed, moved = theorem14_check(0, steps=5)
    assert widths < 1e-10 and closed < 1e-10 and moved > 1e-4
    run = theorem14_general(np.random.default_rng(1), steps=5)
    assert run["closed"] < 1e-10 and run["vH"] < 1e-10
    assert run["v0"] > 1e-3  # a linear part: the width enters
    assert run["wrong-width"] > 1e-6 and run["moved"] > 1e-4


def test_theorem15_checks_compress_to_k_plus_one():
    gap, widths, moved, problem = theorem15_check(2, steps=5)
    # k_1 = m + 16 = 19 on m = 3 inputs; layer 2 not projected: 17
    assert widths == [20, 18] and gap < 1e-10 and moved > 1e-4
    assert problem["x"].shape == (3, 8) and problem["lr"] == [0.01, 0.015]
    run = theorem15_general(np.random.default_rng(3), steps=5)
    assert run["widths"] == [5, 4]  # structure ranks 4 and 3, plus one
    assert run["out"] < 1e-10 and run["order"] < 1e-10
    assert run["ctrl"] > 1e-6
    # the run's own sensitivity to a start moved by 1e-12: of that order on
    # a stable run (zero would mean the start was not moved)
    assert 1e-14 < run["floor"] < 1e-9


def test_an_ill_conditioned_start_is_passed_over():
    def starts():
        yield from (np.random.default_rng(s) for s in (3, 4, 5))

    floors = [
        theorem15_general(np.random.default_rng(s), steps=5)["floor"]
        for s in (3, 4)
    ]
    # a cutoff between the first two starts' floors skips the larger one
    lo, hi = sorted(floors)
    run, skipped = conditioned_theorem15(
        starts(), cutoff=(lo + hi) / 2, steps=5
    )
    assert skipped == floors.index(lo)
    assert run["floor"] == lo
    # accepting everything takes the first start as it is
    run, skipped = conditioned_theorem15(starts(), cutoff=1.0, steps=5)
    assert skipped == 0 and run["floor"] == floors[0]
    with pytest.raises(RuntimeError, match="none of 3 starts"):
        conditioned_theorem15(starts(), cutoff=1e-300, steps=5)
    with pytest.raises(ValueError, match="cutoff"):
        conditioned_theorem15(starts(), cutoff=0.0)


def test_bad_input_is_refused():
    with pytest.raises(TypeError, match="gen"):
        theorem14_general(None)
    with pytest.raises(ValueError, match="n"):
        theorem14_check(0, n=2)
    with pytest.raises(ValueError, match="lr"):
        theorem15_general(0, lr=-0.1)
    with pytest.raises(ValueError, match="seed"):
        theorem15_check(-1)
