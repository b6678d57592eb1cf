"""`order_diagnosis` names a dropped last mini-batch only on evidence (Book eq. 5.13; the buffer's docstring:
"chunks perm[i : i + mini_batch_size] in order (the last may be smaller)").

The expected chunks are written by hand: 5 rows in mini-batches of 2 with perm = (3, 1, 0, 4, 2) give
[3, 1], [0, 4], [2]; 6 rows in mini-batches of 3 with perm = (3, 1, 0, 4, 2, 5) give [3, 1, 0], [4, 2, 5].
"""

from __future__ import annotations

import pytest

from ppo_course.grading_kit.buffer_data import order_diagnosis
from ppo_course.grading_kit.diagnoses import DIAGNOSES

FIVE_BY_TWO = [[3, 1], [0, 4], [2]]
SIX_BY_THREE = [[3, 1, 0], [4, 2, 5]]


def test_dropped_last_smaller_chunk_is_named():
    """Every chunk in order but the last, smaller one: the drop_last habit."""
    assert order_diagnosis([[3, 1], [0, 4]], FIVE_BY_TWO, 2) == "buffer_drops_last_minibatch"
    assert "buffer_drops_last_minibatch" in DIAGNOSES


@pytest.mark.parametrize("got", [
    [[1, 3], [0, 4]],          # the last chunk dropped AND the order differs
    [[0, 4], [3, 1]],          # chunks swapped, last dropped
    [[3, 1], [0, 4], [2], []],  # an extra empty chunk
    [[3, 1]],                  # two chunks missing
    [[0, 1], [2, 3], [4]],     # storage order: no shuffle
])
def test_other_differences_stay_wrong_order(got):
    assert order_diagnosis(got, FIVE_BY_TWO, 2) == "buffer_wrong_minibatch_order"


def test_a_full_last_chunk_missing_is_not_drop_last():
    """drop_last drops only a smaller chunk: a missing full chunk is another mistake."""
    assert order_diagnosis([[3, 1, 0]], SIX_BY_THREE, 3) == "buffer_wrong_minibatch_order"
