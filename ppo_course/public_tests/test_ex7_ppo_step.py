"""Public test, exercise 7 (stops 5-7): one PPO step follows the stub stage by stage and reports its stats
(Book fig. 5.1, §5.5-§5.8).

No reference runs here (this file ships to students): the step runs with the
observer's deep mode (``ppo_course.sandbox.observe``), and
``ppo_course.grading_kit.step_checks`` checks each stage against the stub's
rules from the step's own measured quantities (how many optimizer steps, the
gradient's scale at each, the generator given to the mini-batches, where the
KL lands in the rewards, ...). The hidden grader names the same mistakes with
the same ids, and re-checks everything on secret draws against the reference.
"""

from __future__ import annotations

import warnings

import torch

from ppo_course.grading_kit import step_checks, step_trace
from ppo_course.grading_kit.compare import all_finite, close_scalar, max_param_diff, params_close
from ppo_course.grading_kit.feedback import Mismatch

EXERCISE = "ex7_ppo_step"
KIND = "public"
KNOWN_GOOD = True  # graded with trusted ex1-ex6, so an earlier mistake is not charged twice

STAT_KEYS = ("ppo/mean_scores", "objective/kl", "objective/kl_coef", "ppo/policy/approx_kl", "ppo/policy/clipfrac",
             "ppo/loss/total", "ppo/loss/value", "ppo/policy/entropy", "time/ppo/generation", "time/ppo/training")

# Two public settings, so that every stub rule is visible in one of them: a temperature ≠ 1, non-default γ, λ
# and loss coefficients, 2 accumulation steps; reward whitening off with per-token KL (A) and on with
# last-token KL and a max_grad_norm that binds (B). The reference policy differs from the policy (seeded
# noise of scale 0.05), so that the KL, its direction and its placement show. A samples with top-p 0.9 (the toy
# preset's is 1.0). The KL controller starts at KL_COEF_START, not at init_kl_coef, as after earlier steps of a
# run: β is kl_ctl.value. The reference policy must come back unchanged (it is frozen).
SETTING_A = dict(batch_size=8, mini_batch_size=2, gradient_accumulation_steps=2, ppo_epochs=2, temperature=0.9,
                 top_p=0.9, whiten_rewards=False, kl_placement="per_token", gamma=0.9, lam=0.9, cliprange=0.15,
                 vf_coef=0.2, ent_coef=0.02, init_kl_coef=0.1)
KL_COEF_START = 0.12
SETTING_B = dict(batch_size=8, mini_batch_size=4, gradient_accumulation_steps=2, ppo_epochs=2, temperature=0.8,
                 whiten_rewards=True, kl_placement="last_token", init_kl_coef=0.1, max_grad_norm=0.01)


def _payload(learning_rate: float, setting: dict) -> dict:
    from ppo_course import toy_task
    from ppo_course.config import PPOConfig
    from ppo_course.model import CausalLMWithValueHead

    with warnings.catch_warnings(), torch.random.fork_rng(devices=[]):
        warnings.simplefilter("ignore")  # a tiny batch, outside the book's band on purpose
        torch.manual_seed(0)
        state = CausalLMWithValueHead(toy_task.policy_config()).state_dict()
        config = PPOConfig.toy(**setting, learning_rate=learning_rate)
    noise = torch.Generator().manual_seed(2)
    ref_state = {k: v + 0.05 * torch.randn(v.shape, generator=noise, dtype=v.dtype) if v.is_floating_point()
                 else v.clone() for k, v in state.items()}
    return {"model_config": toy_task.policy_config().model_dump(), "state_dict": state, "ref_state_dict": ref_state,
            "queries": toy_task.sample_queries(8, torch.Generator().manual_seed(1)),
            "ppo_config": config.model_dump(), "seed": 0, "kl_coef": KL_COEF_START}


def _run(student, payload) -> dict:
    """The step on `payload`, validated; fails with the first stage that breaks the stub's rules."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            raw = student.ppo_step_harness(payload["model_config"], payload["state_dict"], payload["queries"],
                                           payload["ppo_config"], payload["seed"],
                                           ref_state_dict=payload["ref_state_dict"], observe="deep",
                                           kl_coef=payload["kl_coef"])
        except Exception as exc:  # say which earlier exercise is still a stub
            found = step_checks.unimplemented_dependency(exc)
            if found is None:
                raise
            raise Mismatch(found[0], f"  {found[1]}", "ppo_step(...)") from None
    out = step_trace.validate_result(raw)
    if out is None:
        raise Mismatch("wrong_type", "  the harness got no parameters back", "ppo_step(...)")
    stats = out["stats"]
    if not isinstance(stats, dict):
        raise Mismatch("ppo_step_stats_missing", "  ppo_step did not return a dict", "ppo_step")
    missing = [k for k in STAT_KEYS if type(stats.get(k)) is not float]
    if missing:
        raise Mismatch("ppo_step_stats_missing", f"  missing or not a float: {missing}", "ppo_step stats")
    bad = [k for k in STAT_KEYS if not all_finite(stats[k])]
    if bad:
        raise Mismatch("not_finite", f"  not finite: {bad}", "ppo_step stats")
    if not all_finite(out["state_dict"]):
        raise Mismatch("not_finite", "  a parameter after the step is NaN or inf", "parameters after ppo_step")
    _check_stages(out, payload)
    if out["ref_state_dict"] is not None and not params_close(out["ref_state_dict"], payload["ref_state_dict"], 0.0):
        raise Mismatch("ppo_step_reference_updated",
                       "  the reference policy changed during the step; it must stay frozen",
                       "the reference policy after ppo_step")
    return out


def _check_stages(out: dict, payload: dict) -> None:
    trace, cfg = out["trace"], payload["ppo_config"]
    if trace is None:
        raise Mismatch("wrong_type", "  the step's observed trace could not be read", "ppo_step's stages")
    seen = {e["ev"] for e in trace}
    absent = [ev for ev in ("generate", "reward", "step", "kl_update") if ev not in seen]
    if absent:  # calls on the objects handed to ppo_step: observed however the step imports its pieces
        name = {"generate": "policy.generate", "reward": "reward_fn", "step": "optimizer.step",
                "kl_update": "kl_ctl.update"}
        diagnosis = "ppo_step_kl_controller_not_updated" if absent == ["kl_update"] else \
            "ppo_step_optimizer_steps" if absent == ["step"] else "ppo_step_wrong_order"
        raise Mismatch(diagnosis, f"  never called: {[name[a] for a in absent]}", "ppo_step's stages")
    found = step_checks.check_step(trace, cfg, int(payload["queries"].shape[0]), payload["kl_coef"], out["stats"],
                                   out["kl_coef"])
    if found:
        raise Mismatch(found[0], f"  {found[1]}", "ppo_step's stages (stub order, steps 1-9)")


def test_ppo_step_runs_and_reports(student):
    """One step follows the stub's nine steps (observed stage by stage) and returns the stub's float stats,
    consistent with what it did; the optimizer moves the weights; with lr 0 nothing moves (r ≡ 1:
    approx_kl = clipfrac = 0)."""
    payload = _payload(3e-4, SETTING_A)
    out = _run(student, payload)
    moved = max_param_diff(out["state_dict"], payload["state_dict"])  # NaN-propagating, inf on other names
    if not 0 < moved < float("inf"):
        raise Mismatch("ppo_step_no_learning", "  no parameter changed after one step with lr 3e-4",
                       "parameters after ppo_step")
    # With learning_rate = 0 the live policy stays θ_old, so every ratio is exactly 1 (Book table 5.1):
    # ½·mean((logp − logp_old)²) = 0 and the clip never binds.
    stats = _run(student, _payload(0.0, SETTING_B))["stats"]
    for key in ("ppo/policy/approx_kl", "ppo/policy/clipfrac"):
        if not close_scalar(stats[key], 0.0, rtol=0.0, atol=1e-6):
            raise Mismatch("approx_kl_wrong" if key.endswith("approx_kl") else "clipfrac_wrong",
                           "  expected 0 with learning_rate=0 (a known-good run: the value itself is not echoed)",
                           f"stats[{key!r}]")
