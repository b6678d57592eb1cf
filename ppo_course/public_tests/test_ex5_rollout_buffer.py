"""Public tests, exercise 5 (stop 4): the rollout buffer's collect → train → purge cycle (Book eq. 5.13)."""

from __future__ import annotations

import torch

from ppo_course.grading_kit.buffer_data import drain, order_diagnosis
from ppo_course.grading_kit.feedback import Mismatch, expect_raises

EXERCISE = "ex5_rollout_buffer"
KIND = "public"




def _fields(B: int, start: int = 0) -> dict[str, torch.Tensor]:
    return {"ids": torch.arange(start, start + B), "logp_old": -torch.arange(1.0, B * 3 + 1).reshape(B, 3) / 10}


def _check(cond: bool, diagnosis: str, detail: str, what: str) -> None:
    if not cond:
        raise Mismatch(diagnosis, detail, what)


def test_buffer_cycle(student):
    """add (collect) → start_training → one epoch of mini-batches → purge (empty, collect again)."""
    buf = student.new("RolloutBuffer")
    _check(buf.phase == "collect", "wrong_value", f"  got phase {buf.phase!r}", "a new buffer's phase")
    buf.add(**_fields(3))
    buf.add(**_fields(2, start=3))
    _check(len(buf) == 5, "buffer_wrong_length", f"  expected 5 sequences, got len {len(buf)}", "len(buffer)")
    buf.start_training()
    _check(buf.phase == "train", "wrong_value", f"  got phase {buf.phase!r}", "phase after start_training()")
    batches = drain(buf.minibatches(2, generator=torch.Generator().manual_seed(0)))
    ids = sorted(i for mb in batches for i in mb["ids"].tolist())
    sizes = [len(mb["ids"]) for mb in batches]
    # The specified chunks: perm = randperm(5) with the same seed, then perm[0:2], perm[2:4], perm[4:5].
    perm = torch.randperm(5, generator=torch.Generator().manual_seed(0)).tolist()
    chunks = [perm[i:i + 2] for i in range(0, 5, 2)]
    diagnosis = order_diagnosis([mb["ids"].tolist() for mb in batches], chunks, 2)
    # 5 sequences in mini-batches of 2: sizes 2, 2, 1 and every id once.
    _check(ids == [0, 1, 2, 3, 4] and sizes == [2, 2, 1], diagnosis,
           f"  expected ids 0..4 once in sizes [2, 2, 1], got ids {ids}, sizes {sizes}", "minibatches(2)")
    buf.purge()
    _check(buf.phase == "collect" and len(buf) == 0, "buffer_use_after_purge",
           f"  got phase {buf.phase!r}, len {len(buf)}", "after purge()")


def _drain_in_collect(buf) -> None:
    """Drain ``buf.minibatches(1)`` in the collect phase: mini-batches that come back malformed mean that
    nothing was raised, which the caller reports as the missing RuntimeError (not as a malformed return)."""
    try:
        drain(buf.minibatches(1))
    except Mismatch:
        return


def test_buffer_phase_errors(student, error_name):
    """minibatches() while collecting and add() while training raise RuntimeError."""
    buf = student.new("RolloutBuffer")
    buf.add(**_fields(2))
    expect_raises(lambda: _drain_in_collect(buf), ("RuntimeError",), "buffer_minibatches_during_collect",
                  what="minibatches() in the collect phase", is_error=error_name)
    buf.start_training()
    expect_raises(lambda: buf.add(**_fields(1)), ("RuntimeError",), "buffer_add_during_train",
                  what="add() in the train phase", is_error=error_name)


def test_buffer_stores_copies(student):
    """Changing a tensor after add() does not change the buffer (it stores copies).

    (The hidden graders check it too, by changing the arguments' shared memory after add().)
    """
    fields = _fields(2)
    buf = student.new("RolloutBuffer")
    buf.add(**fields)
    fields["logp_old"].fill_(99.0)  # the caller reuses its tensor
    buf.start_training()
    batches = drain(buf.minibatches(2, generator=torch.Generator().manual_seed(0)), need=("ids", "logp_old"))
    _check(len(batches) == 1, "buffer_wrong_minibatch_order", f"  expected one mini-batch of 2, got {len(batches)}",
           "minibatches(2) over 2 sequences")
    batch = batches[0]
    _check(bool((batch["logp_old"] != 99.0).all()), "buffer_aliases_inputs",
           "  the stored logp_old changed when the caller changed its tensor", "RolloutBuffer.add")
