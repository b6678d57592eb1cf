"""Name the stage where a student's PPO step first departs from the reference (exercise 7, Book fig. 5.1).

Input: the two traces of ``ppo_course.sandbox.observe`` (the student's, from the
child's harness, and the reference's, from ``grader.mistakes.buggy_ppo_step``) on the same
payload. The stages are checked in the order of the stub (generate → score →
log-probs → shaped rewards → GAE → whitening → buffer → mini-batches → loss →
optimizer steps → controller → stats); the first that differs is named. A check
fires only on a difference that has one reading (a hyper-parameter that is not
the config's, a stored tensor equal to a *specific* wrong quantity, a count);
anything else returns None, and the caller says less (``wrong_value``) rather
than something wrong.

The student's trace is data from the untrusted child: it can only change which
diagnosis is named, never a score (points come from the parent's own
comparisons with the reference).
"""

from __future__ import annotations

import math
from typing import Any

import torch

# Stored tensors of a correct loop equal the reference's up to float32 rounding of the same
# functions (known-good pieces): ~1e-7; every mistake below moves them by far more than 1e-4.
ATOL = 1e-4
RTOL = 1e-4


def _close(a: Any, b: Any, mask: torch.Tensor | None = None) -> bool:
    """Same shape and |a − b| ≤ ATOL + RTOL·|b| on the mask's positions; False on NaN/inf or a non-tensor."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or a.shape != b.shape:
        return False
    a, b = a.double(), b.double()
    if mask is not None and mask.shape == a.shape:
        keep = mask.bool()
        a, b = a[keep], b[keep]
    if not bool(torch.isfinite(a).all()):
        return False
    return bool(((a - b).abs() <= ATOL + RTOL * b.abs()).all())


def _num_close(a: Any, b: Any, tol: float = 1e-9) -> bool:
    """Two numbers within tol·(1 + |b|); False for None or a non-finite value."""
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or not math.isfinite(a):
        return False
    return abs(a - b) <= tol * (1.0 + abs(b))


class _Trace:
    def __init__(self, events: Any):
        self.events = [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []

    def all(self, ev: str) -> list[dict]:
        return [e for e in self.events if e.get("ev") == ev]

    def first(self, ev: str) -> dict | None:
        got = self.all(ev)
        return got[0] if got else None

    def index(self, ev: str) -> int | None:
        for i, e in enumerate(self.events):
            if e.get("ev") == ev:
                return i
        return None


def diagnose(got: dict, want: dict, config: dict) -> str | None:
    """The diagnosis id of the first stage where `got`'s trace departs from `want`'s, or None.

    Args:
        got: the student's harness result ``{"state_dict", "stats", "kl_coef", "trace"}``.
        want: the reference's (``buggy_ppo_step.run_reference_step`` with no switch).
        config: the PPOConfig dict of the payload.

    Returns:
        A key of ``grader.mistakes.diagnose.DIAGNOSES`` or None (no specific reading).
    """
    g, w = _Trace(got.get("trace")), _Trace(want.get("trace"))
    if not g.events or not w.events:
        return None
    for check in (_generation, _rollout, _rewards, _advantages, _minibatches, _losses, _optimizer, _controller,
                  _stats):
        found = check(g, w, config, got, want)
        if found:
            return found
    return None


def _generation(g: _Trace, w: _Trace, cfg: dict, got: dict, want: dict) -> str | None:
    gens, ref = g.all("generate"), w.first("generate")
    if ref is None:
        return None
    if len(gens) != 1:
        return "ppo_step_generation_differs"
    e = gens[0]
    if not (_num_close(e.get("temperature"), cfg["temperature"]) and _num_close(e.get("top_p"), cfg["top_p"])
            and _num_close(e.get("max_new_tokens"), cfg["max_new_tokens"]) and e.get("given_generator") is True
            and _close(e.get("responses"), ref["responses"])):
        return "ppo_step_generation_differs"
    rewards = g.all("reward")
    if len(rewards) != 1 or rewards[0].get("same_responses") is not True:
        return "ppo_step_scores_wrong"
    return None


def _rollout(g: _Trace, w: _Trace, cfg: dict, got: dict, want: dict) -> str | None:
    # Every forward pass at the sampling temperature (rollout, reference and training passes alike).
    if not _num_close(cfg["temperature"], 1.0):
        for e in g.all("forward"):
            if not _num_close(e.get("temperature"), cfg["temperature"]):
                return "ppo_step_temperature_ignored"
    add, ref_add = g.first("add"), w.first("add")
    ref_rewards = w.first("kl_rewards")
    if add is None or ref_add is None:
        return None
    fields, ref_fields = add.get("fields") or {}, ref_add["fields"]
    mask = ref_fields["mask"]
    logp_old = fields.get("logp_old")
    if logp_old is not None and not _close(logp_old, ref_fields["logp_old"], mask):
        if ref_rewards is not None and _close(logp_old, ref_rewards["ref_logp"], mask):
            return "ppo_step_logp_old_from_reference"
        return "ppo_step_logp_old_wrong"
    values = fields.get("values")
    if values is not None and not _close(values, ref_fields["values"], mask):
        return "ppo_step_values_wrong"
    return None


def _rewards(g: _Trace, w: _Trace, cfg: dict, got: dict, want: dict) -> str | None:
    kr, ref = g.all("kl_rewards"), w.first("kl_rewards")
    mask = w.first("add")["fields"]["mask"] if w.first("add") else None
    if ref is None:
        return None
    if kr:
        e = kr[0]
        update_at, rewards_at = g.index("kl_update"), g.index("kl_rewards")
        if update_at is not None and rewards_at is not None and update_at < rewards_at:
            return "ppo_step_wrong_order"  # the controller moved before this step's rewards were shaped
        if not _num_close(e.get("kl_coef"), ref["kl_coef"]):
            return "ppo_step_kl_coef_wrong"
        if e.get("placement") != ref["placement"]:
            return "ppo_step_rewards_wrong"
        if not (_close(e.get("logp"), ref["logp"], mask) and _close(e.get("ref_logp"), ref["ref_logp"], mask)):
            return "ppo_step_rewards_wrong"
    gae, ref_gae = g.first("gae"), w.first("gae")
    if gae is None or ref_gae is None:
        return None
    if not (_num_close(gae.get("gamma"), cfg["gamma"]) and _num_close(gae.get("lam"), cfg["lam"])):
        return "ppo_step_gae_arguments"
    if not _close(gae.get("rewards"), ref_gae["rewards"], mask):
        gae_at = g.index("gae")
        shifted = [e for e in g.events[:gae_at] if e.get("ev") == "whiten" and e.get("shift_mean") is True]
        if cfg["whiten_rewards"] and shifted:
            return "ppo_step_whiten_rewards_shifted"
        return "ppo_step_rewards_wrong"
    if not _close(gae.get("values"), ref_gae["values"], mask):
        return "ppo_step_values_wrong"
    return None


def _advantages(g: _Trace, w: _Trace, cfg: dict, got: dict, want: dict) -> str | None:
    add, ref_add, ref_gae = g.first("add"), w.first("add"), w.first("gae")
    if add is None or ref_add is None or ref_gae is None:
        return None
    fields, ref_fields = add.get("fields") or {}, ref_add["fields"]
    mask = ref_fields["mask"]
    adv = fields.get("advantages")
    if adv is not None and not _close(adv, ref_fields["advantages"], mask):
        if _close(adv, ref_gae["advantages"], mask):
            return "ppo_step_no_advantage_whitening"
        return None
    if len(g.all("gae")) > 1:  # GAE recomputed (per epoch): the whitening after add is not the mistake
        return "ppo_step_advantages_recomputed"
    # Advantages whitened again inside the loop (per mini-batch): a whiten after the buffer's add.
    add_at = g.index("add")
    if any(e.get("ev") == "whiten" for e in g.events[add_at:]):
        return "ppo_step_no_advantage_whitening"
    returns = fields.get("returns")
    if returns is not None and not _close(returns, ref_fields["returns"], mask):
        return None
    return None


def _minibatches(g: _Trace, w: _Trace, cfg: dict, got: dict, want: dict) -> str | None:
    mbs, ref_mbs = g.all("minibatches"), w.all("minibatches")
    if not ref_mbs:
        return None
    if any(e.get("size") != cfg["mini_batch_size"] for e in mbs):
        return "ppo_step_minibatch_size"
    if any(e.get("given_generator") is not True for e in mbs):
        return "ppo_step_wrong_order"  # the mini-batch order must come from the given generator
    adds = g.all("add")
    if len(adds) > 1:  # the rollout re-added during training: logp_old refreshed from the moving policy
        ref_old = w.first("add")["fields"]["logp_old"]
        if any(not _close((a.get("fields") or {}).get("logp_old"), ref_old) for a in adds[1:]):
            return "ppo_step_logp_old_recomputed"
    if mbs and len(mbs) != len(ref_mbs):
        return "ppo_step_wrong_epochs"
    return None


def _losses(g: _Trace, w: _Trace, cfg: dict, got: dict, want: dict) -> str | None:
    losses, ref_losses = g.all("loss"), w.all("loss")
    if not losses or not ref_losses:
        return None
    for e in losses:
        for key, name in (("clip_eps", "cliprange"), ("clip_range_value", "cliprange_value"),
                          ("vf_coef", "vf_coef"), ("ent_coef", "ent_coef")):
            if not _num_close(e.get(key), cfg[name]):
                return "ppo_step_loss_hyperparameters"
    norms = [e.get("grad_norm") for e in g.all("step")]
    if norms and all(n == 0.0 for n in norms) and any(isinstance(e.get("grad_norm"), float) and e["grad_norm"] > 0
                                                      for e in w.all("step")):
        return "ppo_step_zero_gradient_steps"
    # logp == logp_old all along says something only when the policy moved (a step on a non-zero gradient).
    if all(e.get("old_is_new") is True for e in losses) and any(isinstance(n, float) and n > 0 for n in norms):
        return "ppo_step_logp_old_recomputed"
    if len(losses) != len(ref_losses):
        return "ppo_step_wrong_epochs" if not g.all("minibatches") else None
    return None


def _optimizer(g: _Trace, w: _Trace, cfg: dict, got: dict, want: dict) -> str | None:
    steps, ref_steps = g.all("step"), w.all("step")
    gas = int(cfg["gradient_accumulation_steps"])
    # zero_grad inside an accumulation group: only the last mini-batch's gradient reaches the step.
    since_step = 0
    for e in g.events:
        ev = e.get("ev")
        if ev == "loss":
            since_step += 1
        elif ev == "step":
            since_step = 0
        elif ev == "zero_grad" and 0 < since_step < gas and gas > 1:
            return "ppo_step_accumulation_broken"
    if len(steps) != len(ref_steps) or _losses_per_step(g) != _losses_per_step(w):
        return "ppo_step_optimizer_steps"
    if not steps:
        return None
    norm, ref_norm = steps[0].get("grad_norm"), ref_steps[0].get("grad_norm")
    if not isinstance(norm, float) or not isinstance(ref_norm, float) or _num_close(norm, ref_norm, 1e-3):
        return None
    max_norm = float(cfg["max_grad_norm"])
    if norm > max_norm * (1 + 1e-4) and ref_norm <= max_norm * (1 + 1e-4):
        return "ppo_step_no_grad_clip"
    return gradient_scaled(got, want, cfg)


def gradient_scaled(got: dict, want: dict, config: dict) -> str | None:
    """``ppo_step_no_accumulation_scaling`` when the first optimizer step's gradient norm (before
    clipping) is ``gradient_accumulation_steps`` times the reference's, else None.

    Adam's update is invariant to a constant scale of the gradient (up to ε) and clipping
    normalises it, so parameter parity can hide an unscaled accumulated loss; the pre-clip norm
    recorded by the observer cannot. Read only from the trace: a forged trace can only lose points.
    """
    gas = int(config["gradient_accumulation_steps"])
    steps, ref_steps = _Trace(got.get("trace")).all("step"), _Trace(want.get("trace")).all("step")
    if gas < 2 or not steps or not ref_steps:
        return None
    norm, ref_norm = steps[0].get("grad_norm"), ref_steps[0].get("grad_norm")
    if not isinstance(norm, float) or not isinstance(ref_norm, float) or not ref_norm > 0:
        return None
    return "ppo_step_no_accumulation_scaling" if _num_close(norm / ref_norm, float(gas), 1e-3) else None


def _losses_per_step(t: _Trace) -> list[int]:
    """How many mini-batch losses precede each optimizer step (since the previous one)."""
    out, since = [], 0
    for e in t.events:
        if e.get("ev") == "loss":
            since += 1
        elif e.get("ev") == "step":
            out.append(since)
            since = 0
    return out


def _controller(g: _Trace, w: _Trace, cfg: dict, got: dict, want: dict) -> str | None:
    updates, ref_update = g.all("kl_update"), w.first("kl_update")
    if ref_update is None:
        return None
    if not updates:
        return "ppo_step_kl_controller_not_updated"
    u = updates[0]
    first_step = g.index("step")
    update_at = g.index("kl_update")
    if first_step is not None and update_at is not None and update_at < first_step and w.index("kl_update") > (
            w.index("step") or 0):
        return "ppo_step_wrong_order"
    if not _num_close(u.get("n_steps"), ref_update["n_steps"]):
        return "ppo_step_kl_units"
    if not _num_close(u.get("current"), ref_update["current"], 1e-5):
        rewards = w.first("kl_rewards")
        add = w.first("add")
        if rewards is not None and add is not None:
            mask = add["fields"]["mask"].double()
            kl = (rewards["logp"].double() - rewards["ref_logp"].double()) * mask
            per_token = float(kl.sum() / mask.sum())
            if _num_close(u.get("current"), per_token, 1e-5):
                return "ppo_step_kl_units"
        return None
    return None


def _stats(g: _Trace, w: _Trace, cfg: dict, got: dict, want: dict) -> str | None:
    stats, ref_stats = got.get("stats"), want.get("stats")
    if not isinstance(stats, dict) or not isinstance(ref_stats, dict):
        return None
    coef = stats.get("objective/kl_coef")
    if isinstance(coef, float) and not _num_close(coef, ref_stats["objective/kl_coef"]):
        if _num_close(coef, got.get("kl_coef")):
            return "ppo_step_kl_coef_reported_after_update"
        return "ppo_step_stats_inconsistent"
    return stats_inconsistency(got)


def stats_inconsistency(got: dict) -> str | None:
    """"ppo_step_stats_inconsistent" when the returned stats disagree with the step's own trace: the mean
    score of the scored batch, the rollout's KL, the mean loss over the mini-batches; else None."""
    g = _Trace(got.get("trace"))
    stats = got.get("stats")
    if not isinstance(stats, dict):
        return None
    reward = g.first("reward")
    if reward is not None and isinstance(reward.get("scores"), torch.Tensor):
        mean = float(reward["scores"].double().mean())
        if not _num_close(stats.get("ppo/mean_scores"), mean, 1e-4):
            return "ppo_step_stats_inconsistent"
    kr, add = g.first("kl_rewards"), g.first("add")
    if kr is not None and add is not None and isinstance((add.get("fields") or {}).get("mask"), torch.Tensor):
        mask = add["fields"]["mask"].double()
        if isinstance(kr.get("logp"), torch.Tensor) and isinstance(kr.get("ref_logp"), torch.Tensor) \
                and kr["logp"].shape == mask.shape:
            kl = float((((kr["logp"].double() - kr["ref_logp"].double()) * mask).sum(1)).mean())
            if not _num_close(stats.get("objective/kl"), kl, 1e-4):
                return "ppo_step_stats_inconsistent"
    losses = [e.get("loss") for e in g.all("loss")]
    if losses and all(isinstance(x, float) for x in losses):
        if not _num_close(stats.get("ppo/loss/total"), sum(losses) / len(losses), 1e-4):
            return "ppo_step_stats_inconsistent"
    return None
