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

    Each switch of `_step` turns on one known mistake; the trace is the observer's
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
                    **switches)
    out["trace"] = observer.events
    out["kl_coef"] = kl_ctl_inner.value
    return out


def _step(policy, ref_policy, optimizer, generator, config, queries, score, kl_ctl, ns, *,
          whiten_advantages: bool = True, clip_grad: bool = True,
          scale_loss: bool = True, zero_grad_every_minibatch: bool = False,
          logp_old_recomputed: bool = False, logp_old_refreshed_each_epoch: bool = False,
          epochs_delta: int = 0, kl_per_token_units: bool = False,
          kl_update_first: bool = False, whiten_rewards_shift: bool = False,
          ignore_temperature: bool = False, own_minibatch_generator: bool = False,
          whiten_per_minibatch: bool = False, kl_coef_after_update: bool = False) -> dict[str, Any]:
    """The step itself, with ppo_reference's pieces reached through `ns` (so that the observer sees them)."""
    rollout = policy.generate(queries, config.max_new_tokens, config.temperature, config.top_p, generator)
    responses, mask = rollout.responses, rollout.mask
    scores = score(responses, mask)
    temperature = 1.0 if ignore_temperature else config.temperature
    with torch.no_grad():
        logits, values = policy.forward_response(queries, responses, temperature)
        logp_old = ref.logprobs_from_logits(logits, responses)
        ref_logits, _ = ref_policy.forward_response(queries, responses, temperature)
        ref_logp = ref.logprobs_from_logits(ref_logits, responses)

    def update_kl() -> None:
        kl = ref.per_token_kl(logp_old, ref_logp, mask)
        if kl_per_token_units:
            kl_ctl.update((kl.sum() / mask.sum()).item(), queries.shape[0])
        else:
            kl_ctl.update(kl.sum(dim=1).mean().item(), queries.shape[0])

    if kl_update_first:
        update_kl()
    kl_coef = kl_ctl.value
    rewards = ns['ex6_kl_reward'].kl_shaped_rewards(scores, logp_old, ref_logp, mask, kl_coef, config.kl_placement)
    if config.whiten_rewards:
        rewards = ns['ex4_gae'].whiten(rewards, mask, shift_mean=whiten_rewards_shift)
    advantages, returns = ns['ex4_gae'].compute_gae(rewards, values, mask, config.gamma, config.lam)
    if whiten_advantages and not whiten_per_minibatch:
        advantages = ns['ex4_gae'].whiten(advantages, mask)
    buf = ns['ex5_rollout_buffer'].RolloutBuffer()
    buf.add(queries=queries, responses=responses, mask=mask, logp_old=logp_old, values=values,
            advantages=advantages, returns=returns)
    buf.start_training()
    accumulate = config.gradient_accumulation_steps
    optimizer.zero_grad()
    totals: dict[str, float] = {"loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "approx_kl": 0.0, "clipfrac": 0.0}
    n = 0
    shuffle = torch.Generator().manual_seed(config.seed) if own_minibatch_generator else generator
    for epoch in range(config.ppo_epochs + epochs_delta):
        if logp_old_refreshed_each_epoch and epoch > 0:
            # The mistake: θ_old becomes the current θ at every epoch (the ratio restarts at 1).
            with torch.no_grad():
                fresh_logits, _ = policy.forward_response(queries, responses, temperature)
                logp_old = ref.logprobs_from_logits(fresh_logits, responses)
            buf.purge()
            buf.add(queries=queries, responses=responses, mask=mask, logp_old=logp_old, values=values,
                    advantages=advantages, returns=returns)
            buf.start_training()
        for i, mb in enumerate(buf.minibatches(config.mini_batch_size, shuffle)):
            if zero_grad_every_minibatch:
                optimizer.zero_grad()
            logits_mb, vpred = policy.forward_response(mb["queries"], mb["responses"], temperature)
            logp = ref.logprobs_from_logits(logits_mb, mb["responses"])
            old = logp.detach() if logp_old_recomputed else mb["logp_old"]
            mb_adv = ns['ex4_gae'].whiten(mb["advantages"], mb["mask"]) if whiten_per_minibatch else mb["advantages"]
            loss, stats = ns['ex3_full_loss'].ppo_loss(logp, old, mb_adv, vpred, mb["values"], mb["returns"], logits_mb,
                                       mb["mask"], clip_eps=config.cliprange, clip_range_value=config.cliprange_value,
                                       vf_coef=config.vf_coef, ent_coef=config.ent_coef)
            (loss / accumulate if scale_loss else loss).backward()
            if (i + 1) % accumulate == 0:
                if clip_grad:
                    torch.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad()
            for key in totals:
                totals[key] += float(stats[key])
            n += 1
    if not kl_update_first:
        update_kl()
    buf.purge()
    kl_seq = ref.per_token_kl(logp_old, ref_logp, mask).sum(dim=1)
    out_stats = {
        "ppo/mean_scores": scores.float().mean().item(),
        "objective/kl": kl_seq.mean().item(),
        "objective/kl_coef": float(kl_ctl.value if kl_coef_after_update else kl_coef),
        "ppo/loss/total": totals["loss"] / max(n, 1),
        "ppo/loss/value": totals["value_loss"] / max(n, 1),
        "ppo/policy/entropy": totals["entropy"] / max(n, 1),
        "ppo/policy/approx_kl": totals["approx_kl"] / max(n, 1),
        "ppo/policy/clipfrac": totals["clipfrac"] / max(n, 1),
    }
    return {"state_dict": {k: v.detach().clone() for k, v in policy.state_dict().items()}, "stats": out_stats}




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
]

# Mistakes that show only in the controller's new value (the parameters are unchanged).
KL_COEF_VARIANTS: list[tuple[str, dict]] = [
    ("ppo_step_kl_units", {"kl_per_token_units": True}),
]
