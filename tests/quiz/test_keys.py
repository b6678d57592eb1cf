"""Parametric keys (computed by ppo_reference) against independent plain-Python formulas.

Each oracle below is written from the chapter's equations (or the formula the
prompt states), in plain floats, without torch or ppo_reference.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest

from quiz_bank.instructor import key_registry, keys
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


def _case_truth(p):
    """Independent copy of the drawn cases' keys, transcribed from the chapter (not from keys.py)."""
    return CASE_ORACLE[p["case"]]


def _eq59_case(p):
    flows = (p["adv"] > 0 and p["r"] < 1 + p["eps"]) or (p["adv"] < 0 and p["r"] > 1 - p["eps"])
    if p["adv"] > 0:
        return "push-up" if flows else "up-enough"
    return "push-down" if flows else "down-enough"


@functools.lru_cache(maxsize=None)
def _yaml_questions(stop: str) -> list:
    import yaml

    import quiz_bank

    path = Path(quiz_bank.__file__).parent / f"stop{stop}.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8"))["questions"]


def _yaml_answer(question_id):
    """The source question's answer read straight from its YAML file (derived items; shares no code with keys.py)."""
    return next(q for q in _yaml_questions(question_id[4]) if q["id"] == question_id)["answer"]


def _multi_option(p):
    qid, option = p["case"].split("#")
    return option in _yaml_answer(qid)


def _ordering_pair(p):
    qid, first, second = p["case"].split("|")
    order = _yaml_answer(qid)
    return order.index(first) < order.index(second)


def _single_option(p):
    qid, option, polarity = p["case"].split("|")
    return (option == _yaml_answer(qid)) is (polarity == "is")


T, F = True, False
CASE_ORACLE = {
    # Big picture: "A single unlucky batch can push the policy into a region where it generates garbage;
    # ... the next gradient makes things worse; the collapse is unrecoverable." Flaw: no step-size constraint.
    "collapse/1": T, "collapse/2": F, "collapse/3": T, "collapse/4": F,
    # Stop 1: "It works perfectly — but requires expensive second-order optimization"; "painful to distribute".
    "trpo/1": T, "trpo/2": F, "trpo/3": T, "trpo/4": F, "trpo/5": T, "trpo/6": F,
    # "PPO (2017) achieves similar stability with a simple first-order clipped objective: 10× simpler ... almost as well".
    "trade/1": T, "trade/2": F, "trade/3": T, "trade/4": T, "trade/5": F, "trade/6": F,
    # Stop 2: good action capped at 1 + ε; bad action rÂ improves as r falls, capped at 1 − ε.
    "caps/1": T, "caps/2": F, "caps/3": T, "caps/4": F, "caps/5": T, "caps/6": F,
    # §5.4.6: data reuse across epochs; keeps weights from going extreme; more conservative; first-order only.
    "summary/1": T, "summary/2": F, "summary/3": T, "summary/4": F,
    # Six steps: (1) J(θ) 5.3, (2) PG theorem 5.4, (3) IS 5.5–5.7, (4) explode, (5) clip 5.8–5.9, (6) combine 5.10–5.12.
    "deriv/1": "step1", "deriv/2": "step6", "deriv/3": "step2", "deriv/4": "step3", "deriv/5": "step4", "deriv/6": "step5",
    # Collect (generate, store) → train (GAE + K epochs, r drifts) → purge (wipe).
    "phase/1": "collect", "phase/2": "train", "phase/3": "purge", "phase/4": "collect", "phase/5": "train", "phase/6": "purge",
    # Rollout: one batch, few epochs, discarded, PPO/GRPO. Replay: DQN/SAC, millions, indefinitely, randomly sampled.
    "kind/1": "rollout", "kind/2": "replay", "kind/3": "replay", "kind/4": "rollout", "kind/5": "replay", "kind/6": "rollout",
    # "generation is 60–70% of wall-clock"; "Continuous purging is why PPO needs continuous generation".
    "gen/1": T, "gen/2": F, "gen/3": T, "gen/4": F,
    # Eq. 5.13: (s_t, a_t, log π_θold, r_t, V(s_t)).
    "contents/1": T, "contents/2": F, "contents/3": T, "contents/4": F,
    # Fig. 5.1: generate → score → KL → final reward → GAE → clipped update.
    "next/1": "score", "next/2": "kl", "next/3": "final-reward", "next/4": "gae", "next/5": "update",
    # Tokenization box.
    "tok/1": T, "tok/2": F, "tok/3": T, "tok/4": F, "tok/5": T, "tok/6": F,
    # Walkthrough: KL vs frozen reference; 4 epochs; mini-batches of 16; whitened (not scaled to [0, 1]).
    "walk/1": T, "walk/2": F, "walk/3": T, "walk/4": F,
    # Table 5.1: r = 1.0 by identity at start; drifts (1.06, 0.94); resets to 1.0 next cycle.
    "life/1": "one", "life/2": "drifts", "life/3": "one", "life/4": "drifts",
    # Two parameter states: same topology; θ_old frozen; only the live policy re-evaluated.
    "nets/1": T, "nets/2": F, "nets/3": T, "nets/4": F,
    # The listing: cliprange 0.2, cliprange_value 0.2, vf_coef 0.1, init_kl_coef 0.05, max_grad_norm 1.0, lam 0.95, gamma 1.0.
    "cfg/1": "v02", "cfg/2": "v02", "cfg/3": "v01", "cfg/4": "v005", "cfg/5": "v10", "cfg/6": "v095", "cfg/7": "v10",
    # "cliprange 0.2 is stop 2, vf_coef 0.1 is stop 3, ppo_epochs 4 ... stop 4, init_kl_coef ... stop 5, max_grad_norm ...".
    "map/1": "stop2", "map/2": "stop3", "map/3": "stop4", "map/4": "stop5", "map/5": "walkthrough",
    # Loop: temperature 0.7, top-p 0.9; LoRA r = 64, α = 16, q/k/v/o; generate → score → step.
    "loop/1": T, "loop/2": F, "loop/3": T, "loop/4": F, "loop/5": T, "loop/6": F,
    # Danger table, effect column.
    "danger/1": "no-learning", "danger/2": "instability", "danger/3": "reward-hacking", "danger/4": "stuck-sft",
    "danger/5": "overfits", "danger/6": "wastes", "danger/7": "forgetting",
    # Danger table, typical column.
    "typical/1": "v02", "typical/2": "v001-01", "typical/3": "v4-8", "typical/4": "v4", "typical/5": "v64-256", "typical/6": "v07-10",
    # Closing paragraph.
    "dial/1": T, "dial/2": F, "dial/3": T, "dial/4": F,
    # Stop 2: "at most ±20% per update step (ε = 0.2)"; "removes the incentive to move, not the ability — a soft wall".
    "soft/1": T, "soft/2": F, "soft/3": T, "soft/4": F, "soft/5": T, "soft/6": F,
    # Stop 8 tensions: "one point inside the typical band"; 0.05 "sits in the middle of the 0.01–0.1 range".
    "tension/1": T, "tension/2": F, "tension/3": T, "tension/4": F,
    # Payoff line: "~0.005 win-rate per step"; "thousands of small, safe steps".
    "payoff/1": T, "payoff/2": F, "payoff/3": T, "payoff/4": F,
    # Stop 6: "saving one full forward pass per mini-batch, which is significant for a 70B model".
    "store/1": T, "store/2": F, "store/3": T, "store/4": F,
    # Big picture: "A single unlucky batch can push the policy into a region where it generates garbage;
    # garbage gets low rewards; the next gradient makes things worse" — the step after each situation.
    "spiral/1": "garbage", "spiral/2": "garbage", "spiral/3": "low-rewards", "spiral/4": "low-rewards",
    "spiral/5": "worse-gradient", "spiral/6": "worse-gradient",
    # Stop 1: vanilla PG "no constraint on step size"; TRPO "Fisher information matrix and conjugate gradients";
    # PPO "a soft, per-sample clip that any first-order optimizer (Adam over mini-batches) can apply".
    "method/1": "vanilla", "method/2": "vanilla", "method/3": "trpo", "method/4": "trpo",
    "method/5": "ppo", "method/6": "ppo",
    # Big picture: "chapter 3's machinery (policy gradient, advantage, GAE, KL anchor) plus one new idea: clip";
    # "stage 3 of the pipeline is PPO"; "Chapter 7 (GRPO) will keep the clip and delete the critic."
    "where/1": "ch3", "where/2": "ch3", "where/3": "ch5", "where/4": "ch5", "where/5": "ch7", "where/6": "ch7",
    # Stop 1: TRPO "works perfectly — but requires expensive second-order optimization"; PPO "similar stability
    # with a simple first-order clipped objective: 10× simpler ... almost as well"; both fix vanilla policy
    # gradient's "fatal flaw — no constraint on step size", whose unlucky batch starts the collapse (neither).
    "which/1": "trpo", "which/2": "trpo", "which/3": "ppo", "which/4": "ppo",
    "which/5": "both", "which/6": "both", "which/7": "neither", "which/8": "neither",
    # Go-deeper box: "curvature information (the Fisher matrix) and iterative solves (conjugate gradients)";
    # "a soft, per-sample clip that any first-order optimizer (Adam over mini-batches) can apply".
    "part/1": "curvature", "part/2": "curvature", "part/3": "solves", "part/4": "solves", "part/5": "ppo", "part/6": "ppo",
    # Stop 7: "the model loads as AutoModelForCausalLMWithValueHead ... with LoRA adapters (r = 64, α = 16, on the
    # q/k/v/o projections)"; "generate (512 tokens, temperature 0.7, top-p 0.9) → score with the reward model →
    # ppo_trainer.step(...)", whose internals are "per-token KL ... GAE ... advantage whitening"; "The generation
    # call maps to the vLLM workers in production setups".
    "hook/1": "load", "hook/2": "load", "hook/3": "generate", "hook/4": "generate",
    "hook/5": "score", "hook/6": "score", "hook/7": "step", "hook/8": "step",
}

ORACLES = {
    "trpo_kl": lambda p: sum(o * math.log(o / n) for o, n in zip(p["old"], p["new"])),
    "trpo_inside": lambda p: sum(o * math.log(o / n) for o, n in zip(p["old"], p["new"])) <= p["delta"],
    "clip_objective": lambda p: _lclip(p["r"], p["adv"], p["eps"]),
    # Eq. 5.9: flows iff the unclipped term is the (strict) min or r is inside the clip range.
    "clip_gradient_flows": lambda p: (p["adv"] > 0 and p["r"] < 1 + p["eps"]) or (p["adv"] < 0 and p["r"] > 1 - p["eps"]),
    "clip_gradient_logp": lambda p: p["r"] * p["adv"]
    if (p["adv"] > 0 and p["r"] < 1 + p["eps"]) or (p["adv"] < 0 and p["r"] > 1 - p["eps"]) else 0.0,
    "clip_gradient_logp_sum": lambda p: sum(
        ORACLES["clip_gradient_logp"]({"r": p[f"r{i}"], "adv": p[f"adv{i}"], "eps": p["eps"]}) for i in (1, 2, 3)),
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
    "case_answer": _case_truth,
    "multi_option": _multi_option,
    "ordering_pair": _ordering_pair,
    "single_option": _single_option,
    "clip_case_label": _eq59_case,
    "prob_ratio": lambda p: p["p"] / p["q"],
    "clipfrac": lambda p: sum(
        a * _clip(r, 1 - p["eps"], 1 + p["eps"]) < a * r for r, a in zip(p["ratios"], p["advantages"])
    ) / len(p["ratios"]),
}


def test_every_key_function_has_an_oracle():
    assert set(key_registry.KEYS) == set(ORACLES)


def test_parametric_keys_match_independent_formulas(bank):
    checked = 0
    for q in bank.questions():
        if not q.is_parametric:
            continue
        for student in STUDENTS:
            variant = render(q, student, 1)
            got = keys.compute(q.parametric.key, variant.params)
            want = ORACLES[q.parametric.key](variant.params)
            if isinstance(want, (bool, str)):
                assert got == want and type(got) is type(want), (q.id, variant.params)
            else:
                # float64 reference vs float oracle: agreement far inside every question's tolerance.
                assert got == pytest.approx(want, rel=1e-9, abs=1e-9), (q.id, variant.params)
            checked += 1
    assert checked >= 35 * len(STUDENTS)


def test_every_drawable_case_has_an_independent_key(bank):
    """Every case of every pick_case item is in the oracle, and keys.py agrees with it on each (not just on draws)."""
    from quiz_bank import variants

    seen = set()
    for q in bank.questions():
        if q.is_parametric and q.parametric.key == "case_answer":
            for params in variants.enumerate_cases("pick_case", q.parametric.args):
                seen.add(params["case"])
                assert keys.compute(q.parametric.key, params) == CASE_ORACLE[params["case"]], (q.id, params["case"])
    assert seen == set(CASE_ORACLE)


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
        # Three tokens, ε = 0.2: (1.3, Â = 2) clipped → 0; (1.1, Â = 2) → 2.2; (0.9, Â = −1) → −0.9; sum 1.3.
        ("clip_gradient_logp_sum", {"r1": 1.3, "adv1": 2.0, "r2": 1.1, "adv2": 2.0, "r3": 0.9, "adv3": -1.0,
                                    "eps": 0.2}, 1.3),
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
