"""Public test, exercise 7 (stops 5-7): one PPO step runs on the toy task and reports its stats (Book fig. 5.1)."""

from __future__ import annotations

import warnings

import torch

from ppo_course.grading_kit.compare import all_finite, close_scalar, max_param_diff
from ppo_course.grading_kit.feedback import Mismatch

EXERCISE = "ex7_ppo_step"
KIND = "public"
KNOWN_GOOD = True  # graded with trusted ex1-ex6, so an earlier mistake is not charged twice

STAT_KEYS = ("ppo/mean_scores", "objective/kl", "objective/kl_coef", "ppo/policy/approx_kl", "ppo/policy/clipfrac",
             "ppo/loss/total", "ppo/loss/value", "ppo/policy/entropy", "time/ppo/generation", "time/ppo/training")


def _payload(learning_rate: float) -> dict:
    from ppo_course import toy_task
    from ppo_course.config import PPOConfig
    from ppo_course.model import CausalLMWithValueHead

    with warnings.catch_warnings(), torch.random.fork_rng(devices=[]):
        warnings.simplefilter("ignore")  # a tiny batch, outside the book's band on purpose
        torch.manual_seed(0)
        state = CausalLMWithValueHead(toy_task.policy_config()).state_dict()
        config = PPOConfig.toy(batch_size=8, mini_batch_size=4, gradient_accumulation_steps=2, ppo_epochs=2,
                               learning_rate=learning_rate)
    return {"model_config": toy_task.policy_config().model_dump(), "state_dict": state,
            "queries": toy_task.sample_queries(8, torch.Generator().manual_seed(1)),
            "ppo_config": config.model_dump(), "seed": 0}


def _run(student, payload):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = student.ppo_step_harness(payload["model_config"], payload["state_dict"], payload["queries"],
                                       payload["ppo_config"], payload["seed"])
    stats = out.get("stats")
    if not isinstance(stats, dict):
        raise Mismatch("ppo_step_stats_missing", f"  ppo_step returned {type(stats).__name__}, not a dict", "ppo_step")
    missing = [k for k in STAT_KEYS if type(stats.get(k)) is not float]
    if missing:
        raise Mismatch("ppo_step_stats_missing", f"  missing or not a float: {missing}", "ppo_step stats")
    bad = [k for k in STAT_KEYS if not all_finite(stats[k])]
    if bad:
        raise Mismatch("not_finite", f"  not finite: {bad}", "ppo_step stats")
    if not all_finite(out.get("state_dict")):
        raise Mismatch("not_finite", "  a parameter after the step is NaN or inf", "parameters after ppo_step")
    return out


def test_ppo_step_runs_and_reports(student):
    """One step returns the stub's float stats; with lr 0 nothing moves (r ≡ 1: approx_kl = clipfrac = 0)."""
    payload = _payload(3e-4)
    out = _run(student, payload)
    moved = max_param_diff(out["state_dict"], payload["state_dict"])  # NaN-propagating, inf on other names
    if not 0 < moved < float("inf"):
        raise Mismatch("ppo_step_no_learning", "  no parameter changed after one step with lr 3e-4",
                       "parameters after ppo_step")
    # With learning_rate = 0 the live policy stays θ_old, so every ratio is exactly 1 (Book table 5.1):
    # ½·mean((logp − logp_old)²) = 0 and the clip never binds.
    frozen = _payload(0.0)
    stats = _run(student, frozen)["stats"]
    for key in ("ppo/policy/approx_kl", "ppo/policy/clipfrac"):
        if not close_scalar(stats[key], 0.0, rtol=0.0, atol=1e-6):
            raise Mismatch("approx_kl_wrong" if key.endswith("approx_kl") else "clipfrac_wrong",
                           "  expected 0 with learning_rate=0 (a known-good run: the value itself is not echoed)",
                           f"stats[{key!r}]")
