"""The RolloutBuffer's collect → train → purge clockwork (Book eq. 5.13, §5.5.2) and its errors."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from ref_inputs import REFERENCE_SETTINGS

from ppo_reference import RolloutBuffer


def rollout(n, start=0, resp_len=3):
    """n sequences whose every field encodes the sequence id, so mini-batches can be traced."""
    ids = torch.arange(start, start + n)
    return dict(
        responses=ids.unsqueeze(1).repeat(1, resp_len),  # [n, T] long
        logp_old=ids.unsqueeze(1).repeat(1, resp_len).double() / 10,  # [n, T] float
        mask=torch.ones(n, resp_len, dtype=torch.bool),
    )


def full_buffer(n=10):
    buf = RolloutBuffer()
    buf.add(**rollout(6))
    buf.add(**rollout(n - 6, start=6))
    buf.start_training()
    return buf


def test_phases_and_length():
    buf = RolloutBuffer()
    assert buf.phase == "collect" and len(buf) == 0
    buf.add(**rollout(4))
    assert len(buf) == 4
    buf.start_training()
    assert buf.phase == "train" and len(buf) == 4
    buf.purge()
    assert buf.phase == "collect" and len(buf) == 0


def test_minibatches_follow_randperm_of_the_generator():
    buf = full_buffer(10)
    batches = list(buf.minibatches(4, generator=torch.Generator().manual_seed(7)))
    perm = torch.randperm(10, generator=torch.Generator().manual_seed(7))
    assert [len(b["responses"]) for b in batches] == [4, 4, 2]  # the last chunk is smaller
    got_ids = torch.cat([b["responses"][:, 0] for b in batches])
    assert torch.equal(got_ids, perm)
    for b in batches:  # rows stay aligned across fields
        assert torch.equal(b["logp_old"][:, 0], b["responses"][:, 0].double() / 10)
        assert set(b) == {"responses", "logp_old", "mask"}


def test_several_epochs_cover_every_sequence_once_each():
    buf = full_buffer(10)
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        ids = torch.cat([b["responses"][:, 0] for b in buf.minibatches(3, generator=gen)])
        assert sorted(ids.tolist()) == list(range(10))


def test_stored_tensors_are_copies():
    data = rollout(2)
    buf = RolloutBuffer()
    buf.add(**data)
    data["responses"].fill_(99)
    buf.start_training()
    (batch,) = buf.minibatches(2)
    assert not (batch["responses"] == 99).any()


def test_add_in_train_phase_raises():
    buf = full_buffer()
    with pytest.raises(RuntimeError, match="train phase"):
        buf.add(**rollout(1))


def test_minibatches_in_collect_phase_raise_at_once():
    buf = RolloutBuffer()
    buf.add(**rollout(2))
    with pytest.raises(RuntimeError, match="start_training"):
        buf.minibatches(1)


def test_start_training_errors():
    with pytest.raises(RuntimeError, match="empty"):
        RolloutBuffer().start_training()
    buf = full_buffer()
    with pytest.raises(RuntimeError, match="already"):
        buf.start_training()


def test_iterator_made_before_purge_raises_when_advanced():
    buf = full_buffer(10)
    it = buf.minibatches(4)
    next(it)
    buf.purge()
    with pytest.raises(RuntimeError, match="purged"):
        next(it)
    # Also across a new cycle: fresh data must not be served by the stale iterator.
    buf.add(**rollout(10))
    buf.start_training()
    stale = full_buffer(10).minibatches(4)
    it2 = buf.minibatches(4)
    buf.purge()
    with pytest.raises(RuntimeError, match="purged"):
        next(it2)
    assert next(stale)  # another buffer's iterator is unaffected


@pytest.mark.parametrize(
    "fields, message",
    [
        ({}, "at least one field"),
        ({"responses": torch.zeros(2, 3), "logp_old": torch.zeros(3, 3)}, "same batch size"),
        ({"responses": 3}, "must be a tensor"),
        ({"responses": torch.tensor(1.0)}, "0-dim"),
    ],
)
def test_add_refuses_inconsistent_fields(fields, message):
    with pytest.raises(ValueError, match=message):
        RolloutBuffer().add(**fields)


def test_later_adds_must_match_the_first():
    buf = RolloutBuffer()
    buf.add(**rollout(2))
    with pytest.raises(ValueError, match="differ"):
        buf.add(responses=torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="`responses`"):
        buf.add(**rollout(2, resp_len=4))


@pytest.mark.parametrize("size", [0, -1, 1.5, "2"])
def test_bad_mini_batch_size(size):
    with pytest.raises(ValueError, match="mini_batch_size"):
        full_buffer().minibatches(size)


@REFERENCE_SETTINGS
@given(adds=st.lists(st.integers(1, 7), min_size=1, max_size=4), mini_batch_size=st.integers(1, 12),
       seed=st.integers(0, 2**31 - 1))
def test_any_fill_and_mini_batch_size_yields_each_sequence_once_per_epoch(adds, mini_batch_size, seed):
    buf = RolloutBuffer()
    start = 0
    for n in adds:
        buf.add(**rollout(n, start=start))
        start += n
    buf.start_training()
    assert len(buf) == start
    batches = list(buf.minibatches(mini_batch_size, generator=torch.Generator().manual_seed(seed)))
    sizes = [len(b["responses"]) for b in batches]
    # ceil(n / mbs) mini-batches, all full but the last.
    assert len(sizes) == -(-start // mini_batch_size) and all(s == mini_batch_size for s in sizes[:-1])
    ids = torch.cat([b["responses"][:, 0] for b in batches])
    assert torch.equal(ids, torch.randperm(start, generator=torch.Generator().manual_seed(seed)))
