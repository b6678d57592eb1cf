"""The solutions on their own: the docstrings' hand-computed examples hold, inputs are never modified,
errors are the contract's, and (where a GPU exists) CUDA gives the CPU's numbers.
"""

from __future__ import annotations

import doctest
import math

import pytest
import torch

from exercises_support import CONTRACT_NAMES


@pytest.mark.parametrize("module_name", [m for m in CONTRACT_NAMES if m != "ex7_ppo_step"])
def test_docstring_examples_hold(solutions, module_name):
    """The worked examples were computed by hand (each docstring shows the arithmetic); the code must reproduce them."""
    module = solutions[module_name]
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(module, module_name, globs={"torch": torch, "math": math, **vars(module)})
    n_examples = sum(len(t.examples) for t in tests)
    assert n_examples >= 2, f"{module_name}: expected worked examples in its docstrings"
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{module_name}: {result.failed} docstring example(s) failed (see captured output)"


def _token_inputs(dtype, mask_kind, device):
    gen = torch.Generator().manual_seed(0)
    real = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    mask = {"bool": real, "int": real.int(), "float": real.to(dtype)}[mask_kind]

    def data():
        x = torch.randn(3, 4, generator=gen, dtype=torch.float64)
        junk = torch.empty(3, 4, dtype=torch.float64).uniform_(-20, 20, generator=gen)
        return torch.where(real, x, junk).to(dtype=dtype, device=device)

    return mask.to(device), data, gen


def _calls(sol, dtype, mask_kind, device="cpu"):
    """(name, thunk, inputs) for every contract function of ex1-ex6 on one batch with junk padding (same numbers on any device)."""
    mask, data, gen = _token_inputs(dtype, mask_kind, device)
    logits = torch.randn(3, 4, 6, generator=gen, dtype=torch.float64).to(dtype=dtype, device=device)
    tokens = torch.randint(6, (3, 4), generator=gen).to(device)
    lp_new, lp_old, adv, v, v_old, ret, ref = (data() for _ in range(7))
    scores = torch.randn(3, generator=gen, dtype=torch.float64).to(dtype=dtype, device=device)
    e1, e2, e3, e4, e6 = (sol[m] for m in ("ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex6_kl_reward"))
    return [
        ("logprobs_from_logits", lambda: e1.logprobs_from_logits(logits, tokens), (logits, tokens)),
        ("probability_ratio", lambda: e1.probability_ratio(lp_new, lp_old), (lp_new, lp_old)),
        ("clipped_surrogate_loss", lambda: e2.clipped_surrogate_loss(lp_new, lp_old, adv, mask, 0.3), (lp_new, lp_old, adv, mask)),
        ("clipped_value_loss", lambda: e3.clipped_value_loss(v, v_old, ret, mask, 0.1), (v, v_old, ret, mask)),
        ("entropy_from_logits", lambda: e3.entropy_from_logits(logits, mask), (logits, mask)),
        ("ppo_loss", lambda: e3.ppo_loss(lp_new, lp_old, adv, v, v_old, ret, logits, mask)[0],
         (lp_new, lp_old, adv, v, v_old, ret, logits, mask)),
        ("compute_gae", lambda: e4.compute_gae(lp_new, v, mask, 0.9, 0.8)[0], (lp_new, v, mask)),
        ("whiten", lambda: e4.whiten(adv, mask, shift_mean=False), (adv, mask)),
        ("per_token_kl", lambda: e6.per_token_kl(lp_new, ref, mask), (lp_new, ref, mask)),
        ("kl_shaped_rewards", lambda: e6.kl_shaped_rewards(scores, lp_new, ref, mask, 0.1, "last_token"),
         (scores, lp_new, ref, mask)),
    ]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mask_kind", ["bool", "int", "float"])
def test_inputs_untouched_and_dtype_follows_data(solutions, dtype, mask_kind):
    for name, thunk, inputs in _calls(solutions, dtype, mask_kind):
        before = [t.clone() for t in inputs]
        out = thunk()
        assert out.dtype == dtype, f"{name}: output dtype {out.dtype} with {dtype} data and a {mask_kind} mask"
        assert torch.isfinite(out).all(), f"{name}: non-finite output"
        for i, (b, a) in enumerate(zip(before, inputs)):
            assert torch.equal(b, a), f"{name} modified its input #{i}"


def test_contract_errors(solutions):
    e1, e4, e6 = solutions["ex1_ratio"], solutions["ex4_gae"], solutions["ex6_kl_reward"]
    one_real = torch.tensor([[True, False, False]])
    with pytest.raises(ValueError, match="at least 2"):
        e4.whiten(torch.randn(1, 3), one_real)
    with pytest.raises(ValueError, match="placement"):
        e6.kl_shaped_rewards(torch.zeros(1), torch.zeros(1, 3), torch.zeros(1, 3), one_real, 0.1, "first_token")
    with pytest.raises(ValueError, match="tokens"):
        e1.logprobs_from_logits(torch.zeros(1, 3, 4), torch.zeros(1, 3))  # float token ids
    with pytest.raises(ValueError):
        e1.probability_ratio(torch.zeros(2, 3), torch.zeros(3, 2))


def test_ratio_finite_at_minus_1000_and_logprobs_stable_for_huge_logits(solutions):
    e1 = solutions["ex1_ratio"]
    both = torch.full((1, 2), -1000.0)
    assert torch.equal(e1.probability_ratio(both, both), torch.ones(1, 2))
    logits = torch.tensor([[[1e4, 0.0, -1e4]]])  # softmax underflows to exactly (1, 0, 0) in float32
    got = e1.logprobs_from_logits(logits, torch.tensor([[1]]))
    assert got.item() == pytest.approx(-1e4, rel=1e-6)  # log p = 0 - logsumexp ≈ -1e4 (hand: logsumexp ≈ 1e4)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cuda_matches_cpu(solutions, dtype):
    """Every ex1-ex6 function runs on CUDA, keeps the device, and gives the CPU's numbers."""
    cpu_results = {name: thunk() for name, thunk, _ in _calls(solutions, dtype, "int")}
    for name, thunk, _ in _calls(solutions, dtype, "int", device="cuda"):
        out = thunk()
        assert out.device.type == "cuda", f"{name}: output on {out.device}"
        real_tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(out.cpu(), cpu_results[name], **real_tol, msg=lambda m, n=name: f"{n}: {m}")
    buf = solutions["ex5_rollout_buffer"].RolloutBuffer()
    buf.add(x=torch.arange(6, device="cuda").view(3, 2))
    buf.start_training()
    batches = list(buf.minibatches(2, torch.Generator().manual_seed(0)))
    assert all(b["x"].device.type == "cuda" for b in batches)
    assert sorted(torch.cat([b["x"] for b in batches]).cpu()[:, 0].tolist()) == [0, 2, 4]


# Book eq. 5.9, ε = 0.2, one real token, loss = −min(r·Â, clip(r)·Â): d loss / d logp_new is
# −Â·r where the unclipped term is the min (d r / d logp_new = r) and 0 where the clip binds,
# boundaries r = 1 ± ε included (the book's "≥" and "≤"). Values computed by hand.
EQ_5_9_CASES = [
    # (r, Â, expected loss, expected gradient)
    (1.1, 1.0, -1.1, -1.1),   # Â > 0, r < 1+ε: flows
    (0.7, 1.0, -0.7, -0.7),   # Â > 0, r below the band: still flows (keep pushing up)
    (1.2, 1.0, -1.2, 0.0),    # Â > 0, r = 1+ε: zero
    (1.3, 1.0, -1.2, 0.0),    # Â > 0, r > 1+ε: zero
    (0.9, -1.0, 0.9, 0.9),    # Â < 0, r > 1−ε: flows
    (1.3, -1.0, 1.3, 1.3),    # Â < 0, r above the band: still flows (keep pushing down)
    (0.8, -1.0, 0.8, 0.0),    # Â < 0, r = 1−ε: zero
    (0.7, -1.0, 0.8, 0.0),    # Â < 0, r < 1−ε: zero
]


@pytest.mark.parametrize("r, adv, want_loss, want_grad", EQ_5_9_CASES)
@pytest.mark.parametrize("which", ["clipped_surrogate_loss", "ppo_loss"])
def test_four_gradient_cases_of_eq_5_9(solutions, which, r, adv, want_loss, want_grad):
    assert math.exp(math.log(r)) == r  # the boundary cases really sit on the boundary
    logp_new = torch.tensor([[math.log(r)]], dtype=torch.float64, requires_grad=True)
    zeros = torch.zeros(1, 1, dtype=torch.float64)
    advantages = torch.tensor([[adv]], dtype=torch.float64)
    if which == "clipped_surrogate_loss":
        loss = solutions["ex2_clipped_loss"].clipped_surrogate_loss(logp_new, zeros, advantages, torch.ones(1, 1), 0.2)
    else:  # the policy term alone: no value loss, no entropy bonus
        loss, _ = solutions["ex3_full_loss"].ppo_loss(logp_new, zeros, advantages, zeros, zeros, zeros,
                                                      torch.zeros(1, 1, 3, dtype=torch.float64), torch.ones(1, 1),
                                                      clip_eps=0.2, vf_coef=0.0, ent_coef=0.0)
    loss.backward()
    assert loss.item() == pytest.approx(want_loss, abs=1e-12)
    assert logp_new.grad.item() == pytest.approx(want_grad, abs=1e-12)
