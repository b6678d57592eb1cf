"""Hand-computed cases from the chapter; every expected number is worked out in a comment."""

import math

import pytest
import torch

import ppo_reference as R

F64 = torch.float64


def t(rows, dtype=F64, requires_grad=False):
    return torch.tensor(rows, dtype=dtype, requires_grad=requires_grad)


def logp_pair(ratios):
    """(logp_new, logp_old) [1, n] float64 whose ratio is ``ratios``: logp_old = −1, logp_new = −1 + log r."""
    logp_old = t([[-1.0] * len(ratios)])
    logp_new = t([[-1.0 + math.log(r) for r in ratios]], requires_grad=True)
    return logp_new, logp_old


# --------------------------------------------------------------------------- stop 6 / table 5.1


def test_ratio_of_table_5_1_values():
    # Book §5.7 (table 5.1): as θ drifts from θ_old the ratio reads e.g. 1.06 and 0.94;
    # at rollout start θ = θ_old, so r = 1 exactly.
    logp_old = t([[-2.0, -3.0, -0.5]])
    logp_new = t([[-2.0 + math.log(1.06), -3.0 + math.log(0.94), -0.5]])
    got = R.probability_ratio(logp_new, logp_old)
    torch.testing.assert_close(got, t([[1.06, 0.94, 1.0]]), rtol=1e-12, atol=0)


@pytest.mark.parametrize(
    "ratio, advantage, expected_loss",
    [
        # Book table 5.1 ratios, ε = 0.2: both inside [0.8, 1.2], so the clip is idle and
        # the loss is −r·Â: −(1.06·1) = −1.06 and −(0.94·(−1)) = +0.94.
        (1.06, 1.0, -1.06),
        (0.94, -1.0, 0.94),
        # "r is trapped at 1 ± ε" (table 5.1): r = 1.5, Â = 2 → min(3.0, 1.2·2 = 2.4) = 2.4 → loss −2.4;
        # r = 0.5, Â = −2 → min(−1.0, 0.8·(−2) = −1.6) = −1.6 → loss +1.6.
        (1.5, 2.0, -2.4),
        (0.5, -2.0, 1.6),
        # The pessimistic min keeps the unclipped term when it is worse (eq. 5.1):
        # r = 0.5, Â = 1 → min(0.5, 0.8) = 0.5 → loss −0.5; r = 1.5, Â = −1 → min(−1.5, −1.2) → +1.5.
        (0.5, 1.0, -0.5),
        (1.5, -1.0, 1.5),
    ],
)
def test_clipped_surrogate_loss_by_hand(ratio, advantage, expected_loss):
    logp_new, logp_old = logp_pair([ratio])
    loss = R.clipped_surrogate_loss(logp_new, logp_old, t([[advantage]]), torch.ones(1, 1), clip_eps=0.2)
    assert loss.shape == () and loss.dtype == F64
    assert loss.item() == pytest.approx(expected_loss, abs=1e-12)


# --------------------------------------------------------------------------- stop 2 / eq. 5.9


@pytest.mark.parametrize(
    "ratio, advantage, flows",
    [
        (1.06, 1.0, True),   # Â > 0, r < 1+ε: keep pushing up
        (0.7, 1.0, True),    # Â > 0, r < 1−ε: still flows (the unclipped term is the min)
        (1.25, 1.0, False),  # Â > 0, r ≥ 1+ε: already increased enough
        (0.94, -1.0, True),  # Â < 0, r > 1−ε: keep pushing down
        (1.3, -1.0, True),   # Â < 0, r > 1+ε: still flows
        (0.75, -1.0, False), # Â < 0, r ≤ 1−ε: already decreased enough
    ],
)
def test_gradient_cases_of_eq_5_9(ratio, advantage, flows):
    # Book eq. 5.9: d loss / d logp_new = −Â·r when the gradient flows (d r / d logp = r), else exactly 0.
    logp_new, logp_old = logp_pair([ratio])
    loss = R.clipped_surrogate_loss(logp_new, logp_old, t([[advantage]]), torch.ones(1, 1, dtype=torch.bool))
    (grad,) = torch.autograd.grad(loss, logp_new)
    if flows:
        assert grad.item() == pytest.approx(-advantage * ratio, rel=1e-12)
    else:
        assert grad.item() == 0.0


def test_gradient_is_zero_just_past_the_clip_boundary():
    # Eq. 5.9 puts the boundary r = 1+ε (Â > 0) and r = 1−ε (Â < 0) on the zero side.
    logp_new, logp_old = logp_pair([1.2 + 1e-9, 0.8 - 1e-9])
    loss = R.clipped_surrogate_loss(logp_new, logp_old, t([[1.0, -1.0]]), torch.ones(1, 2))
    (grad,) = torch.autograd.grad(loss, logp_new)
    assert torch.equal(grad, torch.zeros_like(grad))


def test_no_gradient_into_logp_old_or_advantages():
    logp_new, _ = logp_pair([1.06])
    logp_old = t([[-1.0]], requires_grad=True)
    adv = t([[1.0]], requires_grad=True)
    loss = R.clipped_surrogate_loss(logp_new, logp_old, adv, torch.ones(1, 1))
    g_old, g_adv = torch.autograd.grad(loss, (logp_old, adv), allow_unused=True)
    assert g_old is None and g_adv is None


# --------------------------------------------------------------------------- stop 3 / eq. 5.2


def test_clipped_value_loss_by_hand():
    # c = 0.2. Token 1: V = 1.5, V_old = 1.0, R = 2.0: unclipped (1.5−2)² = 0.25; clipped
    # V_old + 0.2 = 1.2 → (1.2−2)² = 0.64; max = 0.64. Token 2: V = 1.1, V_old = 1.0, R = 1.0:
    # inside the clip, (0.1)² = 0.01 both. Mean = (0.64 + 0.01)/2 = 0.325 (no ½, eq. 5.2).
    # Padding (third column) holds junk and must not count.
    values, old, ret = t([[1.5, 1.1, 17.0]]), t([[1.0, 1.0, -13.0]]), t([[2.0, 1.0, 9.0]])
    loss = R.clipped_value_loss(values, old, ret, t([[1, 1, 0]]), clip_range_value=0.2)
    assert loss.item() == pytest.approx(0.325, abs=1e-12)


def test_entropy_of_uniform_and_of_a_two_way_split():
    # Uniform over 4 tokens: H = log 4 = 1.3862943611198906. Logits (0, 0, −inf, −inf): H = log 2.
    # Masked mean over the two real rows: (log 4 + log 2)/2 = 1.5·log 2 = 1.0397207708399179.
    logits = t([[[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, -math.inf, -math.inf], [5.0, -3.0, 1.0, 20.0]]])
    got = R.entropy_from_logits(logits, t([[1, 1, 0]]))
    assert got.item() == pytest.approx(1.5 * math.log(2), abs=1e-12)


def test_ppo_loss_and_stats_by_hand():
    # Two real tokens, ε = 0.2, Â = (+1, +1): r = (1.06, 1.3).
    #   policy_loss = −(1.06·1 + 1.2·1)/2 = −1.13; clipfrac = 1/2 (only r = 1.3 is clipped);
    #   approx_kl = ½·(log²1.06 + log²1.3)/2; ratio_mean = (1.06 + 1.3)/2 = 1.18.
    # Values as in test_clipped_value_loss_by_hand → value_loss = 0.325.
    # Logits uniform over 4 → entropy = log 4.
    # loss = −1.13 + 0.1·0.325 − 0.01·log 4 = −1.0975 − 0.013862943611198906.
    logp_new, logp_old = logp_pair([1.06, 1.3])
    pad = lambda x, junk: torch.cat([x.detach(), t([[junk]])], dim=1)  # noqa: E731
    logits = torch.zeros(1, 3, 4, dtype=F64)
    loss, stats = R.ppo_loss(
        pad(logp_new, 7.0), pad(logp_old, -7.0), t([[1.0, 1.0, 3.0]]),
        t([[1.5, 1.1, 17.0]]), t([[1.0, 1.0, -13.0]]), t([[2.0, 1.0, 9.0]]), logits,
        t([[1, 1, 0]]), clip_eps=0.2, clip_range_value=0.2, vf_coef=0.1, ent_coef=0.01,
    )
    assert loss.item() == pytest.approx(-1.0975 - 0.01 * math.log(4), abs=1e-12)
    assert stats["policy_loss"] == pytest.approx(-1.13, abs=1e-12)
    assert stats["value_loss"] == pytest.approx(0.325, abs=1e-12)
    assert stats["entropy"] == pytest.approx(math.log(4), abs=1e-12)
    assert stats["clipfrac"] == 0.5
    assert stats["approx_kl"] == pytest.approx(0.25 * (math.log(1.06) ** 2 + math.log(1.3) ** 2), abs=1e-12)
    assert stats["ratio_mean"] == pytest.approx(1.18, abs=1e-12)
    assert all(type(v) is float for v in stats.values())


# --------------------------------------------------------------------------- stop 5: GAE, whitening


def test_three_token_gae_by_hand():
    # γ = 1, λ = 0.95, rewards r = (0, 0, 1) (score on the last token), V = (0.5, 0.6, 0.7):
    #   δ_2 = 1 + 1·0 − 0.7 = 0.3            (V_3 = 0: nothing past the last real token)
    #   δ_1 = 0 + 0.7 − 0.6 = 0.1
    #   δ_0 = 0 + 0.6 − 0.5 = 0.1
    #   A_2 = 0.3
    #   A_1 = 0.1 + 0.95·0.3   = 0.385
    #   A_0 = 0.1 + 0.95·0.385 = 0.46575
    #   returns = A + V = (0.96575, 0.985, 1.0)
    # Row 2 is the same response padded to 5 tokens with junk, which must change nothing.
    rewards = t([[0.0, 0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 13.0, -4.0]])
    values = t([[0.5, 0.6, 0.7, 0.0, 0.0], [0.5, 0.6, 0.7, 19.0, -20.0]])
    mask = t([[1, 1, 1, 0, 0], [1, 1, 1, 0, 0]], dtype=torch.int64)
    adv, ret = R.compute_gae(rewards, values, mask, gamma=1.0, lam=0.95)
    for row in range(2):
        torch.testing.assert_close(adv[row, :3], t([0.46575, 0.385, 0.3]), rtol=0, atol=1e-12)
        torch.testing.assert_close(ret[row, :3], t([0.96575, 0.985, 1.0]), rtol=0, atol=1e-12)


def test_gae_with_discount_by_hand():
    # γ = 0.5, λ = 0.5, r = (1, 1), V = (1, 2):
    #   δ_1 = 1 + 0.5·0 − 2 = −1;  δ_0 = 1 + 0.5·2 − 1 = 1
    #   A_1 = −1;  A_0 = 1 + 0.25·(−1) = 0.75
    adv, ret = R.compute_gae(t([[1.0, 1.0]]), t([[1.0, 2.0]]), torch.ones(1, 2), gamma=0.5, lam=0.5)
    torch.testing.assert_close(adv, t([[0.75, -1.0]]), rtol=0, atol=1e-12)
    torch.testing.assert_close(ret, t([[1.75, 1.0]]), rtol=0, atol=1e-12)


def test_whiten_tiny_vector_by_hand():
    # Real values 1, 2, 3, 4 (two rows of two, junk in the third column):
    #   mean = 2.5; unbiased var = (2.25 + 0.25 + 0.25 + 2.25)/3 = 5/3
    #   whitened = (x − 2.5)/sqrt(5/3 + 1e-8) = (−1.5, −0.5, 0.5, 1.5)/1.2909944526...
    x = t([[1.0, 2.0, 20.0], [3.0, 4.0, -20.0]])
    mask = t([[1, 1, 0], [1, 1, 0]], dtype=torch.float32)
    scale = math.sqrt(5 / 3 + 1e-8)
    want = t([[-1.5, -0.5], [0.5, 1.5]]) / scale
    got = R.whiten(x, mask)
    torch.testing.assert_close(got[:, :2], want, rtol=0, atol=1e-12)
    # shift_mean=False adds the mean back: (1.5 ... ) / scale + 2.5.
    got_kept = R.whiten(x, mask, shift_mean=False)
    torch.testing.assert_close(got_kept[:, :2], want + 2.5, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- stop 5: KL and rewards


def kl_example():
    # kl_t = logp − ref_logp = (−1 − (−1.2), −2 − (−2.4), −0.5 − (−0.8)) = (0.2, 0.4, 0.3); token 4 is padding.
    logp = t([[-1.0, -2.0, -0.5, 5.0]])
    ref_logp = t([[-1.2, -2.4, -0.8, -11.0]])
    return logp, ref_logp, t([[1, 1, 1, 0]], dtype=torch.bool)


def test_per_token_kl_by_hand():
    logp, ref_logp, mask = kl_example()
    torch.testing.assert_close(R.per_token_kl(logp, ref_logp, mask), t([[0.2, 0.4, 0.3, 0.0]]), rtol=0, atol=1e-12)


def test_last_token_reward_is_score_minus_kl_coef_times_mean_kl():
    # Book §5.5: R = r_RM − 0.05 × mean_KL, on the last token only.
    # r_RM = 1.0, mean_KL = (0.2 + 0.4 + 0.3)/3 = 0.3 → R = 1 − 0.015 = 0.985 at token 3, 0 elsewhere.
    logp, ref_logp, mask = kl_example()
    got = R.kl_shaped_rewards(t([1.0]), logp, ref_logp, mask, kl_coef=0.05, placement="last_token")
    torch.testing.assert_close(got, t([[0.0, 0.0, 0.985, 0.0]]), rtol=0, atol=1e-12)


def test_per_token_reward_by_hand():
    # TRL placement: −0.05·kl_t on each real token, + score on the last real one, 0 on padding:
    # (−0.01, −0.02, −0.015 + 1, 0) = (−0.01, −0.02, 0.985, 0).
    logp, ref_logp, mask = kl_example()
    got = R.kl_shaped_rewards(t([1.0]), logp, ref_logp, mask, kl_coef=0.05)
    torch.testing.assert_close(got, t([[-0.01, -0.02, 0.985, 0.0]]), rtol=0, atol=1e-12)


def test_adaptive_kl_update_by_hand():
    # init 0.05, target 6, horizon 10000, batch of 128 sequences.
    # Step 1: KL 9 → e = clip(9/6 − 1 = 0.5) = 0.2 → β = 0.05·(1 + 0.2·128/10000) = 0.05·1.00256 = 0.050128.
    # Step 2: KL 5.4 → e = 5.4/6 − 1 = −0.1 → β = 0.050128·(1 − 0.1·128/10000) = 0.050128·0.99872
    #         = 0.050128 − 0.00006416384 = 0.05006383616.
    # Step 3: KL 0 → e = clip(−1) = −0.2 → β = 0.05006383616·(1 − 0.2·128/10000) = ·0.99744
    #         = 0.05006383616 − 0.000128163420570 = 0.049935672739430.
    ctl = R.AdaptiveKLController(init_kl_coef=0.05, target=6.0, horizon=10000)
    assert ctl.value == 0.05
    ctl.update(9.0, 128)
    assert ctl.value == pytest.approx(0.050128, rel=1e-14)
    ctl.update(torch.tensor(5.4, dtype=F64), 128)  # a 0-dim tensor is accepted
    assert ctl.value == pytest.approx(0.05006383616, rel=1e-14)
    ctl.update(0.0, 128)
    assert ctl.value == pytest.approx(0.049935672739430, rel=1e-12)
    assert type(ctl.value) is float
