"""The exercise-7 harness on the trusted side, and known buggy variants of the PPO step.

`run_reference_step(payload, **mistakes)` builds exactly what the child's
harness (`ppo_course.sandbox.harness.run_ppo_step`) builds — the toy model
from a state dict, a frozen copy as reference, Adam, the seeded generator, the
toy reward model, the adaptive KL controller — and runs one PPO step in
ARCHITECTURE.md's fixed order with `ppo_reference`'s pieces. With every
switch off it is `ppo_reference.ppo_step`'s algorithm; each switch turns on
one known mistake, so that a student's parameters after one step can be
matched against the mistake that produced them (diagnosis ids in
`grader/mistakes/diagnose.py`). Book fig. 5.1, §5.5-§5.8.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch

import ppo_reference as ref


# The same builder as the child's harness, so the reference run and the student's run start equal.
from ppo_course.sandbox.harness import build_setting, kl_controller_start  # noqa: E402
from ppo_course.sandbox.observe import StepObserver  # noqa: E402


def reference_namespaces() -> dict[str, SimpleNamespace]:
    """ppo_reference's pieces as the stub's sibling modules (patchable by the observer)."""
    return {"ex3_full_loss": SimpleNamespace(ppo_loss=ref.ppo_loss),
            "ex4_gae": SimpleNamespace(compute_gae=ref.compute_gae, whiten=ref.whiten),
            "ex5_rollout_buffer": SimpleNamespace(RolloutBuffer=ref.RolloutBuffer),
            "ex6_kl_reward": SimpleNamespace(kl_shaped_rewards=ref.kl_shaped_rewards)}


def run_reference_step(payload: dict, **switches: bool | int) -> dict[str, Any]:
    """One PPO step (no switch: the reference algorithm) → {"state_dict", "stats", "kl_coef", "trace"}.

    Each switch (a field of `Mistakes`) turns on one known mistake; the trace is the observer's
    (`ppo_course.sandbox.observe`), in the same format as the child's harness.

    Raises:
        pydantic.ValidationError / KeyError: on a malformed payload; TypeError on an unknown switch.
    """
    from ppo_course.toy_task import score

    policy, ref_policy, optimizer, generator, config, queries = build_setting(payload)
    kl_ctl_inner = ref.AdaptiveKLController(kl_controller_start(payload, config), config.target_kl, config.kl_horizon)
    ns = reference_namespaces()
    observer = StepObserver(policy, ref_policy, optimizer, generator, score, kl_ctl_inner, ns)
    with observer:
        out = _step(policy, ref_policy, optimizer, generator, config, queries, observer.reward_fn, observer.kl_ctl, ns,
                    Mistakes(**switches))
    out["trace"] = observer.events
    out["kl_coef"] = kl_ctl_inner.value
    return out


@dataclass(frozen=True)
class Mistakes:
    """The switches of `run_reference_step`: each field, turned from its default, is one known mistake."""

    whiten_advantages: bool = True  # False: the advantages are used unwhitened
    clip_grad: bool = True  # False: no gradient-norm clipping before each optimizer step
    scale_loss: bool = True  # False: the loss is not divided by gradient_accumulation_steps
    zero_grad_every_minibatch: bool = False  # gradients zeroed before every mini-batch (accumulation broken)
    logp_old_recomputed: bool = False  # logp_old taken from the current forward pass (the ratio is always 1)
    logp_old_refreshed_each_epoch: bool = False  # θ_old becomes the current θ at every epoch after the first
    epochs_delta: int = 0  # this many epochs more (or fewer) than ppo_epochs
    kl_per_token_units: bool = False  # the controller gets the per-token mean KL, not the mean per-sequence sum
    kl_update_first: bool = False  # the controller is updated before the rewards are shaped
    whiten_rewards_shift: bool = False  # whiten_rewards also shifts the rewards' mean
    ignore_temperature: bool = False  # log-probs at temperature 1, not the sampling temperature
    own_minibatch_generator: bool = False  # mini-batches shuffled by a fresh generator, not the given one
    whiten_per_minibatch: bool = False  # the advantages are whitened per mini-batch instead of once
    kl_coef_after_update: bool = False  # the stats report the controller's value after its update
    never_zero_grad: bool = False  # no optimizer.zero_grad() after a step: gradients pile up across steps
    old_values_live: bool = False  # ppo_loss gets the live value predictions (detached) as old_values


def _step(policy, ref_policy, optimizer, generator, config, queries, score, kl_ctl, ns, m: Mistakes) -> dict[str, Any]:
    """The step itself, with ppo_reference's pieces reached through `ns` (so that the observer sees them)."""
    rollout = policy.generate(queries, config.max_new_tokens, config.temperature, config.top_p, generator)
    responses, mask = rollout.responses, rollout.mask
    scores = score(responses, mask)
    temperature = 1.0 if m.ignore_temperature else config.temperature
    with torch.no_grad():
        logits, values = policy.forward_response(queries, responses, temperature)
        logp_old = ref.logprobs_from_logits(logits, responses)
        ref_logits, _ = ref_policy.forward_response(queries, responses, temperature)
        ref_logp = ref.logprobs_from_logits(ref_logits, responses)
    if m.kl_update_first:
        _update_kl(kl_ctl, logp_old, ref_logp, mask, queries.shape[0], m)
    kl_coef = kl_ctl.value
    rewards = ns['ex6_kl_reward'].kl_shaped_rewards(scores, logp_old, ref_logp, mask, kl_coef, config.kl_placement)
    if config.whiten_rewards:
        rewards = ns['ex4_gae'].whiten(rewards, mask, shift_mean=m.whiten_rewards_shift)
    advantages, returns = ns['ex4_gae'].compute_gae(rewards, values, mask, config.gamma, config.lam)
    if m.whiten_advantages and not m.whiten_per_minibatch:
        advantages = ns['ex4_gae'].whiten(advantages, mask)
    data = dict(queries=queries, responses=responses, mask=mask, logp_old=logp_old, values=values,
                advantages=advantages, returns=returns)
    buf = ns['ex5_rollout_buffer'].RolloutBuffer()
    buf.add(**data)
    buf.start_training()
    totals, n, logp_old = _train(policy, optimizer, generator, config, ns, buf, data, temperature, m)
    if not m.kl_update_first:
        _update_kl(kl_ctl, logp_old, ref_logp, mask, queries.shape[0], m)
    buf.purge()
    kl_seq = ref.per_token_kl(logp_old, ref_logp, mask).sum(dim=1)
    stats = _step_stats(scores, kl_seq, kl_ctl, kl_coef, totals, n, m)
    return {"state_dict": {k: v.detach().clone() for k, v in policy.state_dict().items()}, "stats": stats}


def _update_kl(kl_ctl, logp_old, ref_logp, mask, n_sequences: int, m: Mistakes) -> None:
    """The adaptive KL controller's update on the rollout's KL (batch mean of per-sequence sums, Book §5.6)."""
    kl = ref.per_token_kl(logp_old, ref_logp, mask)
    if m.kl_per_token_units:
        kl_ctl.update((kl.sum() / mask.sum()).item(), n_sequences)
    else:
        kl_ctl.update(kl.sum(dim=1).mean().item(), n_sequences)


def _train(policy, optimizer, generator, config, ns, buf, data: dict, temperature: float,
           m: Mistakes) -> tuple[dict[str, float], int, torch.Tensor]:
    """The K epochs of mini-batch updates on `buf` → (summed stats, number of mini-batches, last logp_old)."""
    optimizer.zero_grad()
    totals: dict[str, float] = {"loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "approx_kl": 0.0, "clipfrac": 0.0}
    n = 0
    shuffle = torch.Generator().manual_seed(config.seed) if m.own_minibatch_generator else generator
    for epoch in range(config.ppo_epochs + m.epochs_delta):
        if m.logp_old_refreshed_each_epoch and epoch > 0:
            # The mistake: θ_old becomes the current θ at every epoch (the ratio restarts at 1).
            with torch.no_grad():
                fresh_logits, _ = policy.forward_response(data["queries"], data["responses"], temperature)
                data = dict(data, logp_old=ref.logprobs_from_logits(fresh_logits, data["responses"]))
            buf.purge()
            buf.add(**data)
            buf.start_training()
        for i, mb in enumerate(buf.minibatches(config.mini_batch_size, shuffle)):
            stats = _minibatch_update(policy, optimizer, config, ns, mb, i, temperature, m)
            for key in totals:
                totals[key] += float(stats[key])
            n += 1
    return totals, n, data["logp_old"]


def _minibatch_update(policy, optimizer, config, ns, mb: dict, i: int, temperature: float, m: Mistakes) -> dict:
    """Mini-batch `i`'s PPO loss and backward pass, and an optimizer step every `gradient_accumulation_steps`
    mini-batches; returns the loss's stats."""
    accumulate = config.gradient_accumulation_steps
    if m.zero_grad_every_minibatch:
        optimizer.zero_grad()
    logits_mb, vpred = policy.forward_response(mb["queries"], mb["responses"], temperature)
    logp = ref.logprobs_from_logits(logits_mb, mb["responses"])
    old = logp.detach() if m.logp_old_recomputed else mb["logp_old"]
    mb_adv = ns['ex4_gae'].whiten(mb["advantages"], mb["mask"]) if m.whiten_per_minibatch else mb["advantages"]
    old_values = vpred.detach() if m.old_values_live else mb["values"]
    loss, stats = ns['ex3_full_loss'].ppo_loss(logp, old, mb_adv, vpred, old_values, mb["returns"], logits_mb,
                                               mb["mask"], clip_eps=config.cliprange,
                                               clip_range_value=config.cliprange_value,
                                               vf_coef=config.vf_coef, ent_coef=config.ent_coef)
    (loss / accumulate if m.scale_loss else loss).backward()
    if (i + 1) % accumulate == 0:
        if m.clip_grad:
            torch.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
        optimizer.step()
        if not m.never_zero_grad:
            optimizer.zero_grad()
    return stats


def _step_stats(scores, kl_seq, kl_ctl, kl_coef: float, totals: dict[str, float], n: int,
                m: Mistakes) -> dict[str, float]:
    """The step's stats under TRL's names: the rollout's mean score and KL, the KL coefficient, mean losses."""
    return {
        "ppo/mean_scores": scores.float().mean().item(),
        "objective/kl": kl_seq.mean().item(),
        "objective/kl_coef": float(kl_ctl.value if m.kl_coef_after_update else kl_coef),
        "ppo/loss/total": totals["loss"] / max(n, 1),
        "ppo/loss/value": totals["value_loss"] / max(n, 1),
        "ppo/policy/entropy": totals["entropy"] / max(n, 1),
        "ppo/policy/approx_kl": totals["approx_kl"] / max(n, 1),
        "ppo/policy/clipfrac": totals["clipfrac"] / max(n, 1),
    }


# (diagnosis id, switches) in the order tried; the first whose parameters match the student's wins.
PPO_STEP_VARIANTS: list[tuple[str, dict]] = [
    ("ppo_step_no_advantage_whitening", {"whiten_advantages": False}),
    ("ppo_step_no_advantage_whitening", {"whiten_per_minibatch": True}),
    ("ppo_step_temperature_ignored", {"ignore_temperature": True}),
    ("ppo_step_wrong_order", {"own_minibatch_generator": True}),
    ("ppo_step_no_grad_clip", {"clip_grad": False}),
    ("ppo_step_no_accumulation_scaling", {"scale_loss": False}),
    ("ppo_step_accumulation_broken", {"zero_grad_every_minibatch": True}),
    ("ppo_step_logp_old_recomputed", {"logp_old_refreshed_each_epoch": True}),
    ("ppo_step_logp_old_recomputed", {"logp_old_recomputed": True}),
    ("ppo_step_wrong_epochs", {"epochs_delta": -1}),
    ("ppo_step_wrong_epochs", {"epochs_delta": 1}),
    ("ppo_step_wrong_order", {"kl_update_first": True}),
    ("ppo_step_whiten_rewards_shifted", {"whiten_rewards_shift": True}),
    ("ppo_step_gradients_never_zeroed", {"never_zero_grad": True}),
    ("ppo_step_old_values_live", {"old_values_live": True}),
]

# Mistakes that show only in the controller's new value (the parameters are unchanged).
KL_COEF_VARIANTS: list[tuple[str, dict]] = [
    ("ppo_step_kl_units", {"kl_per_token_units": True}),
]
