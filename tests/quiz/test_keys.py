"""Parametric keys (computed by ppo_reference) against independent plain-Python formulas.

Each oracle below is written from the chapter's equations (or the formula the
prompt states), in plain floats, without torch or ppo_reference.
"""

from __future__ import annotations

import math

import pytest

from quiz_bank import keys
from quiz_bank.engine import render

STUDENTS = [f"s{i:03d}" for i in range(12)]


def _clip(x, lo, hi):
    return min(max(x, lo), hi)


def _gae(rewards, values, gamma, lam):
    adv, nxt_v, nxt_a = [0.0] * len(rewards), 0.0, 0.0
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + gamma * nxt_v - values[t]
        nxt_a = delta + gamma * lam * nxt_a
        adv[t], nxt_v = nxt_a, values[t]
    return adv


def _logsoftmax(z, a):
    m = max(z)
    return z[a] - (m + math.log(sum(math.exp(x - m) for x in z)))


def _gauss_logpdf(a, mu, sigma):
    return -((a - mu) ** 2) / (2 * sigma**2) - math.log(sigma) - 0.5 * math.log(2 * math.pi)


def _kl_controller(p):
    beta = p["value"]
    for _ in range(p["n_updates"]):
        e = _clip(p["kl"] / p["target"] - 1, -0.2, 0.2)
        beta *= 1 + e * p["n_steps"] / p["horizon"]
    return beta


def _entropy(ps):
    return -sum(x * math.log(x) for x in ps)


def _lclip(r, a, eps):
    return min(r * a, _clip(r, 1 - eps, 1 + eps) * a)


ORACLES = {
    "trpo_kl": lambda p: sum(o * math.log(o / n) for o, n in zip(p["old"], p["new"])),
    "trpo_inside": lambda p: sum(o * math.log(o / n) for o, n in zip(p["old"], p["new"])) <= p["delta"],
    "clip_objective": lambda p: _lclip(p["r"], p["adv"], p["eps"]),
    # Eq. 5.9: flows iff the unclipped term is the (strict) min or r is inside the clip range.
    "clip_gradient_flows": lambda p: (p["adv"] > 0 and p["r"] < 1 + p["eps"]) or (p["adv"] < 0 and p["r"] > 1 - p["eps"]),
    "clip_gradient_logp": lambda p: p["r"] * p["adv"]
    if (p["adv"] > 0 and p["r"] < 1 + p["eps"]) or (p["adv"] < 0 and p["r"] > 1 - p["eps"]) else 0.0,
    "clip_gradient_flows_logprobs": lambda p: ORACLES["clip_gradient_flows"](
        {"r": math.exp(p["logp_new"] - p["logp_old"]), "adv": p["adv"], "eps": p["eps"]}
    ),
    "value_loss": lambda p: max((p["v"] - p["ret"]) ** 2, (p["v_old"] + _clip(p["v"] - p["v_old"], -p["c"], p["c"]) - p["ret"]) ** 2),
    "entropy3": lambda p: _entropy([p["p1"], p["p2"], p["p3"]]),
    "full_objective": lambda p: _lclip(p["p"] / p["q"], p["adv"], 0.2) - 0.1 * (p["v"] - p["v_target"]) ** 2
    + 0.01 * _entropy([p["p"], 1 - p["p"]]),
    "minibatch_updates": lambda p: p["ppo_epochs"] * math.ceil(p["batch_size"] / p["mini_batch_size"]),
    "optimizer_steps": lambda p: p["ppo_epochs"] * p["batch_size"] // (p["mini_batch_size"] * p["gas"]),
    "buffer_transitions": lambda p: p["batch_size"] * p["max_tokens"],
    "gae_advantage0": lambda p: _gae(p["rewards"], p["values"], p["gamma"], p["lam"])[0],
    "gae_advantage1": lambda p: _gae(p["rewards"], p["values"], p["gamma"], p["lam"])[1],
    "gae_return0": lambda p: _gae(p["rewards"], p["values"], p["gamma"], p["lam"])[0] + p["values"][0],
    "kl_last_token_reward": lambda p: p["score"] - p["kl_coef"] * sum(a - b for a, b in zip(p["logp"], p["ref_logp"])) / len(p["logp"]),
    "kl_sum": lambda p: sum(a - b for a, b in zip(p["logp"], p["ref_logp"])),
    "kl_mean": lambda p: sum(a - b for a, b in zip(p["logp"], p["ref_logp"])) / len(p["logp"]),
    "whiten_first": lambda p: (p["advantages"][0] - sum(p["advantages"]) / 3)
    / math.sqrt(sum((x - sum(p["advantages"]) / 3) ** 2 for x in p["advantages"]) / 2 + 1e-8),
    "ratio": lambda p: math.exp(p["logp_new"] - p["logp_old"]),
    "clipped_ratio": lambda p: _clip(math.exp(p["logp_new"] - p["logp_old"]), 1 - p["eps"], 1 + p["eps"]),
    "logprob_new": lambda p: _logsoftmax(p["z_new"], p["token"]),
    "logprob_old": lambda p: _logsoftmax(p["z_old"], p["token"]),
    "ratio_from_logits": lambda p: math.exp(_logsoftmax(p["z_new"], p["token"]) - _logsoftmax(p["z_old"], p["token"])),
    "gaussian_logprob_old": lambda p: _gauss_logpdf(p["action"], p["mu_old"], p["sigma_old"]),
    "gaussian_ratio": lambda p: math.exp(
        _gauss_logpdf(p["action"], p["mu_new"], p["sigma_new"]) - _gauss_logpdf(p["action"], p["mu_old"], p["sigma_old"])
    ),
    "adaptive_kl_value": _kl_controller,
    "adaptive_kl_increases": lambda p: _kl_controller(p) > p["value"],
    "approx_kl": lambda p: 0.5 * sum((a - b) ** 2 for a, b in zip(p["logp"], p["ref_logp"])) / len(p["logp"]),
    "clipfrac": lambda p: sum(
        a * _clip(r, 1 - p["eps"], 1 + p["eps"]) < a * r for r, a in zip(p["ratios"], p["advantages"])
    ) / len(p["ratios"]),
}


def test_every_key_function_has_an_oracle():
    assert set(keys.KEYS) == set(ORACLES)


def test_parametric_keys_match_independent_formulas(bank):
    checked = 0
    for q in bank.questions():
        if not q.is_parametric:
            continue
        for student in STUDENTS:
            variant = render(q, student, 1)
            got = keys.compute(q.parametric.key, variant.params)
            want = ORACLES[q.parametric.key](variant.params)
            if isinstance(want, bool):
                assert got is want, (q.id, variant.params)
            else:
                # float64 reference vs float oracle: agreement far inside every question's tolerance.
                assert got == pytest.approx(want, rel=1e-9, abs=1e-9), (q.id, variant.params)
            checked += 1
    assert checked >= 35 * len(STUDENTS)


@pytest.mark.parametrize(
    "key_name, params, want",
    [
        # L^CLIP, r = 1.3, Â = 2, ε = 0.2: min(2.6, 1.2·2 = 2.4) = 2.4 (eq. 5.1, by hand).
        ("clip_objective", {"r": 1.3, "adv": 2.0, "eps": 0.2}, 2.4),
        # Â = −1, r = 0.7: min(−0.7, 0.8·(−1) = −0.8) = −0.8.
        ("clip_objective", {"r": 0.7, "adv": -1.0, "eps": 0.2}, -0.8),
        # Gradient cases of eq. 5.9 by hand: r = 1.3 > 1.2 with Â > 0 → 0; r = 1.1 → r·Â = 2.2.
        ("clip_gradient_logp", {"r": 1.3, "adv": 2.0, "eps": 0.2}, 0.0),
        ("clip_gradient_logp", {"r": 1.1, "adv": 2.0, "eps": 0.2}, 2.2),
        # GAE, γ = λ = 1, rewards (0, 0, 1), values 0: every A_t = 1.
        ("gae_advantage0", {"rewards": [0.0, 0.0, 1.0], "values": [0.0, 0.0, 0.0], "gamma": 1.0, "lam": 1.0}, 1.0),
        # Book's R = r_RM − 0.05 × mean_KL with KL (0.2, 0.4, 0.6): 2 − 0.05·0.4 = 1.98.
        ("kl_last_token_reward", {"logp": [-1.0, -1.0, -1.0], "ref_logp": [-1.2, -1.4, -1.6], "score": 2.0, "kl_coef": 0.05}, 1.98),
        # Adaptive KL: KL 12 vs target 6 → e clipped to 0.2; β = 0.05·(1 + 0.2·128/1000) = 0.05128.
        ("adaptive_kl_value", {"value": 0.05, "target": 6.0, "horizon": 1000, "kl": 12.0, "n_steps": 128, "n_updates": 1}, 0.05128),
        # Book's walkthrough: 4 epochs × 128/16 mini-batches = 32; with 4 accumulation steps, 8 optimizer steps.
        ("minibatch_updates", {"batch_size": 128, "mini_batch_size": 16, "ppo_epochs": 4, "gas": 4}, 32),
        ("optimizer_steps", {"batch_size": 128, "mini_batch_size": 16, "ppo_epochs": 4, "gas": 4}, 8),
        ("buffer_transitions", {"batch_size": 128, "max_tokens": 512}, 65536),
    ],
)
def test_keys_on_hand_computed_examples(key_name, params, want):
    assert keys.compute(key_name, params) == pytest.approx(want, abs=1e-12)
