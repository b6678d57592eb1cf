"""Property tests (hypothesis, derandomised): independent re-implementations, junk in padding, dtypes, no mutation.

The independent versions below loop over rows and tokens in plain Python /
NumPy float64 and never call ``ppo_reference``.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st
from ref_inputs import REFERENCE_SETTINGS, real, rollouts

import ppo_reference as R

F32, F64 = torch.float32, torch.float64
rates = st.floats(0.0, 1.0, allow_nan=False)


# --------------------------------------------------------------------------- independent versions


def explicit_gae(rewards, values, lengths, gamma, lam):
    """A_t = Σ_{k=t}^{L−1} (γλ)^{k−t} δ_k with δ_k = r_k + γ·V_{k+1}·[k+1 < L] − V_k, per row, in Python floats."""
    out = []
    for b, length in enumerate(lengths):
        r = [float(x) for x in rewards[b, :length]]
        v = [float(x) for x in values[b, :length]] + [0.0]  # V = 0 past the last real token
        deltas = [r[k] + gamma * v[k + 1] - v[k] for k in range(length)]
        out.append([sum((gamma * lam) ** (k - t) * deltas[k] for k in range(t, length)) for t in range(length)])
    return out


def numpy_surrogate(logp_new, logp_old, adv, mask, eps):
    m = mask.bool().numpy()
    r = np.exp(logp_new.detach().numpy()[m] - logp_old.numpy()[m])
    a = adv.numpy()[m]
    return -np.mean(np.minimum(r * a, np.clip(r, 1 - eps, 1 + eps) * a))


def numpy_value_loss(values, old, ret, mask, c):
    m = mask.bool().numpy()
    v, vo, rt = values.detach().numpy()[m], old.numpy()[m], ret.numpy()[m]
    return np.mean(np.maximum((v - rt) ** 2, (vo + np.clip(v - vo, -c, c) - rt) ** 2))


def numpy_entropy(logits, mask):
    m = mask.bool().numpy()
    z = logits.detach().numpy()[m]  # (n, V)
    z = z - z.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return np.mean(-(np.exp(logp) * logp).sum(axis=-1))


# --------------------------------------------------------------------------- GAE


@REFERENCE_SETTINGS
@given(rollout=rollouts(), gamma=rates, lam=rates)
def test_gae_equals_explicit_discounted_sum_of_deltas(rollout, gamma, lam):
    rewards, values = rollout.data(2)
    mask = rollout.mask()
    adv, ret = R.compute_gae(rewards, values, mask, gamma=gamma, lam=lam)
    want = explicit_gae(rewards, values, rollout.lengths, gamma, lam)
    for b, length in enumerate(rollout.lengths):
        np.testing.assert_allclose(adv[b, :length].numpy(), want[b], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(ret[b, :length].numpy(), np.array(want[b]) + values[b, :length].numpy(),
                                   rtol=1e-10, atol=1e-10)


def test_gae_long_rows_cross_block_boundaries():
    # T = 200 spans several 64-token blocks of the blocked scan; rows end inside, at and past a boundary.
    gen = torch.Generator().manual_seed(3)
    lengths = [200, 64, 65, 1, 127, 128, 129]
    rewards = torch.randn(len(lengths), 200, generator=gen, dtype=F64)
    values = torch.randn(len(lengths), 200, generator=gen, dtype=F64)
    mask = torch.arange(200).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    adv, _ = R.compute_gae(rewards, values, mask, gamma=0.99, lam=0.95)
    want = explicit_gae(rewards, values, lengths, 0.99, 0.95)
    for b, length in enumerate(lengths):
        np.testing.assert_allclose(adv[b, :length].numpy(), want[b], rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------- whitening


@REFERENCE_SETTINGS
@given(rollout=rollouts(min_real=2), scale=st.sampled_from([1e-2, 1.0, 30.0]), shift=st.floats(-50, 50))
def test_whiten_gives_mean_zero_unbiased_variance_one(rollout, scale, shift):
    (x,) = rollout.data(1, scale=scale)
    mask = rollout.mask()
    x_real = real(x, mask).numpy() + shift
    assume(x_real.var(ddof=1) > 1e-4)  # well above the 1e-8 floor
    x = torch.where(mask.bool(), x + shift, x)
    got = real(R.whiten(x, mask), mask).numpy()
    assert abs(got.mean()) < 1e-9
    assert got.var(ddof=1) == pytest.approx(1.0, abs=1e-4)
    kept = real(R.whiten(x, mask, shift_mean=False), mask).numpy()
    assert kept.mean() == pytest.approx(x_real.mean(), abs=1e-9 * (1 + abs(x_real.mean())))


@REFERENCE_SETTINGS
@given(rollout=rollouts(min_real=2))
def test_masked_helpers_match_numpy(rollout):
    (x,) = rollout.data(1, scale=3.0)
    mask = rollout.mask()
    xs = real(x, mask).numpy()
    assert R.masked_mean(x, mask).item() == pytest.approx(xs.mean(), abs=1e-12)
    assert R.masked_var(x, mask).item() == pytest.approx(xs.var(ddof=1), rel=1e-10, abs=1e-12)
    assert R.masked_var(x, mask, unbiased=False).item() == pytest.approx(xs.var(), rel=1e-10, abs=1e-12)
    per_row = R.masked_mean(x, mask, dim=1).numpy()
    for b, n in enumerate(rollout.lengths):
        assert per_row[b] == pytest.approx(x[b, :n].numpy().mean(), abs=1e-12)


# --------------------------------------------------------------------------- losses against NumPy


@REFERENCE_SETTINGS
@given(rollout=rollouts(), eps=st.sampled_from([0.1, 0.2, 0.3]), c=st.sampled_from([0.05, 0.2, 1.0]))
def test_losses_match_independent_numpy(rollout, eps, c):
    logp_new, logp_old, adv, values, old_values, returns = rollout.data(6, scale=0.5)
    (logits,) = rollout.data(1, scale=3.0, vocab=5)
    mask = rollout.mask()
    assert R.clipped_surrogate_loss(logp_new, logp_old, adv, mask, eps).item() == pytest.approx(
        numpy_surrogate(logp_new, logp_old, adv, mask, eps), abs=1e-12)
    assert R.clipped_value_loss(values, old_values, returns, mask, c).item() == pytest.approx(
        numpy_value_loss(values, old_values, returns, mask, c), abs=1e-12)
    assert R.entropy_from_logits(logits, mask).item() == pytest.approx(numpy_entropy(logits, mask), abs=1e-12)
    loss, stats = R.ppo_loss(logp_new, logp_old, adv, values, old_values, returns, logits, mask,
                             clip_eps=eps, clip_range_value=c, vf_coef=0.3, ent_coef=0.02)
    want = (numpy_surrogate(logp_new, logp_old, adv, mask, eps) + 0.3 * numpy_value_loss(
        values, old_values, returns, mask, c) - 0.02 * numpy_entropy(logits, mask))
    assert loss.item() == pytest.approx(want, abs=1e-12)
    m = mask.bool().numpy()
    d = logp_new.numpy()[m] - logp_old.numpy()[m]
    r, a = np.exp(d), adv.numpy()[m]
    assert stats["approx_kl"] == pytest.approx(0.5 * np.mean(d**2), abs=1e-12)
    assert stats["clipfrac"] == pytest.approx(np.mean(-a * np.clip(r, 1 - eps, 1 + eps) > -a * r), abs=1e-12)
    assert stats["ratio_mean"] == pytest.approx(r.mean(), abs=1e-12)


@REFERENCE_SETTINGS
@given(rollout=rollouts(), vocab=st.integers(1, 9))
def test_logprobs_match_numpy_log_softmax(rollout, vocab):
    (logits,) = rollout.data(1, scale=4.0, vocab=vocab)
    tokens = torch.randint(0, vocab, (rollout.batch, rollout.resp_len), generator=torch.Generator().manual_seed(rollout.seed))
    z = logits.numpy()
    want = np.take_along_axis(z, tokens.numpy()[..., None], -1)[..., 0] - np.log(np.exp(z).sum(-1))
    np.testing.assert_allclose(R.logprobs_from_logits(logits, tokens).numpy(), want, rtol=0, atol=1e-12)


@REFERENCE_SETTINGS
@given(rollout=rollouts(), kl_coef=st.floats(0.0, 1.0), placement=st.sampled_from(["per_token", "last_token"]))
def test_kl_shaped_rewards_match_explicit_loop(rollout, kl_coef, placement):
    logp, ref_logp = rollout.data(2)
    scores = torch.randn(rollout.batch, generator=torch.Generator().manual_seed(rollout.seed), dtype=F64)
    got = R.kl_shaped_rewards(scores, logp, ref_logp, rollout.mask(), kl_coef, placement)
    for b, n in enumerate(rollout.lengths):
        kl = [float(logp[b, k] - ref_logp[b, k]) for k in range(n)]
        if placement == "per_token":
            want = [-kl_coef * x for x in kl]
            want[-1] += float(scores[b])
        else:
            want = [0.0] * n
            want[-1] = float(scores[b]) - kl_coef * sum(kl) / n
        want += [0.0] * (rollout.resp_len - n)  # 0 on padding
        np.testing.assert_allclose(got[b].numpy(), want, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- junk, dtypes, mutation


def run_all(rollout, dtype=F64, junk_seed=0):
    """Every token-level function on one rollout; returns {name: output} (losses as 0-dim tensors)."""
    mask = rollout.mask()
    kw = dict(dtype=dtype, junk_seed=junk_seed)
    logp_new, logp_old, adv, values, old_values, returns, rewards = rollout.data(7, scale=0.5, **kw)
    (logits,) = rollout.data(1, scale=3.0, vocab=6, **kw)
    shape = (rollout.batch, rollout.resp_len)
    tokens = torch.where(  # same ids on real tokens, junk (valid) ids on padding
        mask.bool(),
        torch.randint(0, 6, shape, generator=torch.Generator().manual_seed(rollout.seed)),
        torch.randint(0, 6, shape, generator=torch.Generator().manual_seed(junk_seed)),
    )
    scores = torch.linspace(-1, 1, rollout.batch, dtype=dtype)
    out = {
        "logprobs": R.logprobs_from_logits(logits, tokens),
        "ratio": R.probability_ratio(logp_new, logp_old),
        "surrogate": R.clipped_surrogate_loss(logp_new, logp_old, adv, mask),
        "value_loss": R.clipped_value_loss(values, old_values, returns, mask),
        "entropy": R.entropy_from_logits(logits, mask),
        "ppo_loss": R.ppo_loss(logp_new, logp_old, adv, values, old_values, returns, logits, mask)[0],
        "advantages": R.compute_gae(rewards, values, mask)[0],
        "returns": R.compute_gae(rewards, values, mask, gamma=0.9, lam=0.8)[1],
        "kl": R.per_token_kl(logp_new, logp_old, mask),
        "rewards_per_token": R.kl_shaped_rewards(scores, logp_new, logp_old, mask, 0.1),
        "rewards_last_token": R.kl_shaped_rewards(scores, logp_new, logp_old, mask, 0.1, "last_token"),
        "masked_mean": R.masked_mean(adv, mask),
    }
    if rollout.n_real >= 2:
        out["whiten"] = R.whiten(adv, mask)
        out["whiten_kept_mean"] = R.whiten(rewards, mask, shift_mean=False)
    return out


# Outputs whose junk-in / junk-out positions are not real tokens: logits at padding still have
# log-probs (the function is per position), so only real positions are compared for those too.
@REFERENCE_SETTINGS
@given(rollout=rollouts())
def test_junk_in_padding_never_changes_real_positions(rollout):
    mask = rollout.mask().bool()
    first, second = run_all(rollout, junk_seed=1), run_all(rollout, junk_seed=2)
    for name in first:
        a, b = first[name], second[name]
        if a.dim() == 0:
            assert torch.equal(a, b), name
        else:
            assert torch.equal(a[mask], b[mask]), name


@REFERENCE_SETTINGS
@given(rollout=rollouts())
def test_zero_on_padding_where_the_contract_says_so(rollout):
    pad = ~rollout.mask().bool()
    out = run_all(rollout, junk_seed=5)
    for name in ("kl", "rewards_per_token", "rewards_last_token"):
        assert torch.all(out[name][pad] == 0), name


@REFERENCE_SETTINGS
@given(rollout=rollouts())
def test_float32_agrees_with_float64_and_dtype_follows_data(rollout):
    wide, narrow = run_all(rollout, F64), run_all(rollout, F32)
    mask = rollout.mask().bool()
    for name in wide:
        assert narrow[name].dtype == F32 and wide[name].dtype == F64, name
        a, b = narrow[name].double(), wide[name]
        if a.dim():
            a, b = a[mask], b[mask]
        # float32 inputs are float64 inputs rounded to 24 bits (rel. 6e-8); through exp,
        # sums over ≤ 50 tokens and the whitening's 1/σ that error stays below 1e-4.
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4, msg=name)


@REFERENCE_SETTINGS
@given(rollout=rollouts())
def test_inputs_are_never_modified(rollout):
    mask = rollout.mask()
    tensors = rollout.data(7, scale=0.5) + rollout.data(1, vocab=4) + [mask, torch.zeros(rollout.batch, dtype=F64)]
    logp_new, logp_old, adv, values, old_values, returns, rewards, logits, mask, scores = tensors
    tokens = torch.zeros(rollout.batch, rollout.resp_len, dtype=torch.long)
    tensors.append(tokens)
    before = [(x.clone(), x._version) for x in tensors]
    R.logprobs_from_logits(logits, tokens)
    R.probability_ratio(logp_new, logp_old)
    R.ppo_loss(logp_new, logp_old, adv, values, old_values, returns, logits, mask)
    R.compute_gae(rewards, values, mask)
    R.per_token_kl(logp_new, logp_old, mask)
    R.kl_shaped_rewards(scores, logp_new, logp_old, mask, placement="per_token")
    R.kl_shaped_rewards(scores, logp_new, logp_old, mask, placement="last_token")
    if rollout.n_real >= 2:
        R.whiten(adv, mask)
        R.whiten(rewards, mask, shift_mean=False)
    for x, (copy, version) in zip(tensors, before):
        assert torch.equal(x, copy) and x._version == version


def test_gae_and_kl_outputs_carry_no_gradient():
    mask = torch.ones(2, 3)
    rewards = torch.randn(2, 3, requires_grad=True)
    values = torch.randn(2, 3, requires_grad=True)
    adv, ret = R.compute_gae(rewards, values, mask)
    assert not adv.requires_grad and not ret.requires_grad
    assert not R.per_token_kl(rewards, values, mask).requires_grad
    assert not R.kl_shaped_rewards(torch.zeros(2), rewards, values, mask).requires_grad


def test_whiten_of_constant_input_is_finite_zero():
    # Variance 0: (x − μ)·rsqrt(0 + 1e-8) = 0, not NaN.
    got = R.whiten(torch.full((2, 3), 4.0), torch.ones(2, 3))
    assert torch.equal(got, torch.zeros(2, 3))


def test_ratio_is_one_at_rollout_start():
    # Book table 5.1: at the start of a cycle θ = θ_old, so r = 1 exactly, whatever the log-probs.
    logp = torch.tensor([[-0.1, -7.0, -1000.0]])
    assert torch.equal(R.probability_ratio(logp, logp.clone()), torch.ones(1, 3))
    assert math.isclose(R.clipped_surrogate_loss(logp, logp.clone(), torch.tensor([[1.0, -2.0, 4.0]]),
                                                 torch.ones(1, 3)).item(), -1.0)


def test_even_nonfinite_junk_in_padding_stays_out_of_values_and_gradients():
    # Beyond the contract (|junk| ≤ 20): padding is dropped before any arithmetic, so inf/NaN
    # there changes nothing and the gradients at real tokens stay finite (0 on padding).
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    bad = torch.tensor([[0.0, 0.0, math.inf], [0.0, math.nan, -math.inf]], dtype=F64)
    logp_new = (torch.tensor([[-1.0, -0.5, 0.0], [-2.0, 0.0, 0.0]], dtype=F64) + bad).requires_grad_(True)
    values = (torch.tensor([[0.5, 0.1, 0.0], [1.0, 0.0, 0.0]], dtype=F64) + bad).requires_grad_(True)
    other = torch.tensor([[-1.1, -0.4, 0.0], [-2.2, 0.0, 0.0]], dtype=F64) + bad
    logits = torch.zeros(2, 3, 4, dtype=F64)
    loss, stats = R.ppo_loss(logp_new, other, other, values, other, other, logits, mask)
    g_logp, g_values = torch.autograd.grad(loss, (logp_new, values))
    assert math.isfinite(loss.item()) and all(math.isfinite(v) for v in stats.values())
    pad = ~mask.bool()
    assert torch.isfinite(g_logp).all() and torch.isfinite(g_values).all()
    assert torch.all(g_logp[pad] == 0) and torch.all(g_values[pad] == 0)
    adv, ret = R.compute_gae(other, other, mask)
    assert torch.isfinite(adv[mask.bool()]).all() and torch.isfinite(ret[mask.bool()]).all()
    assert torch.isfinite(R.kl_shaped_rewards(torch.zeros(2, dtype=F64), other, other, mask)).all()
    assert torch.isfinite(R.whiten(other, mask)[mask.bool()]).all()
