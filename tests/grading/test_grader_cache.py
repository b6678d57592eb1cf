"""The hidden graders' per-version cache (`grader.hidden.cache`): exact keys, copies out, nothing across versions."""

from __future__ import annotations

import pytest
import torch

from grader.hidden import cache


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv("PPO_COURSE_NO_GRADER_CACHE", raising=False)
    cache.clear()
    yield
    cache.clear()


def _counting():
    calls = []

    def compute(value):
        def run():
            calls.append(value)
            return {"out": torch.tensor([1.0, 2.0]) * value, "n": value}
        return run
    return calls, compute


def test_same_inputs_computed_once_and_copied_out():
    calls, compute = _counting()
    x = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    first = cache.cached("t", ("f", x, {"k": 1}), compute(2))
    first["out"].add_(100)  # the caller's copy: the entry is not changed
    second = cache.cached("t", ("f", x.clone(), {"k": 1}), compute(2))
    assert calls == [2]
    assert torch.equal(second["out"], torch.tensor([2.0, 4.0]))
    second["out"].add_(1)
    assert torch.equal(cache.cached("t", ("f", x, {"k": 1}), compute(2))["out"], torch.tensor([2.0, 4.0]))


@pytest.mark.parametrize("other", [
    torch.arange(6, dtype=torch.float32).reshape(2, 3),        # dtype
    torch.arange(6, dtype=torch.float64).reshape(3, 2),        # shape, same bytes
    torch.nextafter(torch.arange(6, dtype=torch.float64), torch.tensor(9.0, dtype=torch.float64)).reshape(2, 3),  # 1 ulp
    torch.tensor([[-0.0, 1, 2], [3, 4, 5]], dtype=torch.float64),  # -0.0 == 0.0 but other bytes
])
def test_other_tensor_is_another_key(other):
    calls, compute = _counting()
    x = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    cache.cached("t", (x,), compute(1))
    cache.cached("t", (other,), compute(1))
    assert calls == [1, 1]


def test_nan_payloads_and_scalars_are_exact():
    calls, compute = _counting()
    for key in [(1,), (1.0,), (True,), ("1",), ([1],), ((1,),), (None,), (torch.float32,)]:
        cache.cached("t", key, compute(0))
    assert len(calls) == 8  # no two of these share a key


def test_another_grader_version_never_reuses(monkeypatch):
    calls, compute = _counting()
    cache.cached("t", (3,), compute(3))
    monkeypatch.setattr(cache, "version_key", lambda: b"another grader")
    cache.cached("t", (3,), compute(3))
    assert calls == [3, 3]


def test_errors_are_not_cached_and_unknown_values_not_keyed():
    n = []

    def boom():
        n.append(1)
        raise ValueError("x")

    for _ in range(2):
        with pytest.raises(ValueError):
            cache.cached("t", (1,), boom)
    assert len(n) == 2
    calls, compute = _counting()
    for _ in range(2):
        cache.cached("t", (object(),), compute(5))  # no exact key: computed every time
    assert calls == [5, 5]


def test_global_rng_untouched_hit_or_miss():
    """A cached computation leaves torch's global RNG as it found it, whether it ran or not."""
    torch.manual_seed(0)
    cache.cached("t", ("rng",), lambda: torch.rand(3))
    after_miss = torch.rand(1)
    torch.manual_seed(0)
    cache.cached("t", ("rng",), lambda: torch.rand(3))
    after_hit = torch.rand(1)
    torch.manual_seed(0)
    plain = torch.rand(1)
    assert torch.equal(after_miss, plain) and torch.equal(after_hit, plain)


def test_lru_bound(monkeypatch):
    monkeypatch.setitem(cache.MAX_ENTRIES, "small", 2)
    calls, compute = _counting()
    for v in (1, 2, 3, 1):
        cache.cached("small", (v,), compute(v))
    assert calls == [1, 2, 3, 1]  # 1 was evicted by 3


def test_switched_off(monkeypatch):
    monkeypatch.setenv("PPO_COURSE_NO_GRADER_CACHE", "1")
    calls, compute = _counting()
    cache.cached("t", (1,), compute(1))
    cache.cached("t", (1,), compute(1))
    assert calls == [1, 1]


def test_reference_call_cached_only_for_ppo_reference():
    """`support.reference_call` answers from the cache for ppo_reference, never for another module."""
    import types

    import ppo_reference
    from grader.hidden.calls import reference_call

    a = torch.randn(2, 3, dtype=torch.float64)
    b = torch.randn(2, 3, dtype=torch.float64)
    want = torch.exp(a - b)  # Book eq. 5.20, computed independently
    for _ in range(2):
        got = reference_call(ppo_reference, "probability_ratio", (a, b))
        assert torch.allclose(got, want, rtol=1e-12, atol=0)
    assert cache.stats()["hits"] == 1
    fake = types.SimpleNamespace(__name__="ppo_reference", probability_ratio=lambda x, y: x - y)
    assert torch.equal(reference_call(fake, "probability_ratio", (a, b)), a - b)
    assert cache.stats()["hits"] == 1


def test_no_version_key_means_no_cache(monkeypatch):
    """Without a version key (no grader secret) everything is computed, nothing is stored."""
    monkeypatch.setattr(cache, "version_key", lambda: None)
    calls, compute = _counting()
    cache.cached("t", (1,), compute(1))
    cache.cached("t", (1,), compute(1))
    assert calls == [1, 1] and cache.stats()["entries"] == 0
