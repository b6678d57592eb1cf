"""Correct variant (c07 of the unseen2 set, written outside the project from the docstrings
alone): Gradient accumulation by summing the gas mini-batch losses and calling backward once per optimizer step (same gradient); stats from running sums.
"""
EXERCISE = "ex7_ppo_step"
DESCRIPTION = "c07: Gradient accumulation by summing the gas mini-batch losses and calling backward once per optimizer step (same gradient); stats from running sums"

import statistics
import time
from typing import Callable

import torch

import ex1_ratio
import ex3_full_loss
import ex4_gae
import ex5_rollout_buffer
import ex6_kl_reward

__all__ = ["ppo_step"]


def ppo_step(
    policy: torch.nn.Module,
    ref_policy: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    queries: torch.Tensor,
    reward_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    kl_ctl: ex6_kl_reward.AdaptiveKLController,
    config,
    generator: torch.Generator,
) -> dict[str, float]:
    """One PPO step on a batch of prompts (Book fig. 5.1; TRL's ``PPOTrainer.step``).

    Follow this order exactly (every random draw comes from ``generator``):

    1. ``gen = policy.generate(queries, config.max_new_tokens, config.temperature,
       config.top_p, generator)`` → ``responses`` [B, T] long, ``mask`` [B, T] bool.
    2. ``scores = reward_fn(responses, mask)`` → [B].
    3. Without gradient: ``logits, values = policy.forward_response(queries, responses,
       config.temperature)``; ``logp_old = ex1_ratio.logprobs_from_logits(logits, responses)``;
       the same with ``ref_policy`` gives ``ref_logp``.
    4. ``rewards = ex6_kl_reward.kl_shaped_rewards(scores, logp_old, ref_logp, mask,
       kl_ctl.value, config.kl_placement)``; if ``config.whiten_rewards``:
       ``rewards = ex4_gae.whiten(rewards, mask, shift_mean=False)``.
    5. ``advantages, returns = ex4_gae.compute_gae(rewards, values, mask, config.gamma,
       config.lam)``; then ``advantages = ex4_gae.whiten(advantages, mask)``.
    6. ``buf = ex5_rollout_buffer.RolloutBuffer()``; ``buf.add(queries=, responses=,
       mask=, logp_old=, values=, advantages=, returns=)``; ``buf.start_training()``.
    7. For each of ``config.ppo_epochs`` epochs, ``for i, mb in
       enumerate(buf.minibatches(config.mini_batch_size, generator))``:
       ``forward_response`` on the mini-batch → ``logprobs_from_logits`` →
       ``ex3_full_loss.ppo_loss(..., clip_eps=config.cliprange,
       clip_range_value=config.cliprange_value, vf_coef=config.vf_coef,
       ent_coef=config.ent_coef)``; ``(loss / config.gradient_accumulation_steps).backward()``;
       after every ``gradient_accumulation_steps`` mini-batches (``(i + 1) % gas == 0``):
       ``torch.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)``,
       ``optimizer.step()``, ``optimizer.zero_grad()``.
    8. ``kl_ctl.update(mean over rows of the summed per-token KL, B)``.
    9. ``buf.purge()``.

    Args:
        policy: ``ppo_course.model.CausalLMWithValueHead``, trained in place.
        ref_policy: its frozen copy (the KL anchor); never updated.
        optimizer: ``torch.optim.Adam(policy.parameters(), lr=config.learning_rate)``, made by the caller.
        queries: Long[batch, prompt_len], unpadded prompts, on the policy's device.
        reward_fn: ``(responses [B, T] long, mask [B, T] bool) -> scores Float[B]``.
        kl_ctl: an ``AdaptiveKLController``; its ``value`` is β for this step, then it is updated.
        config: ``ppo_course.config.PPOConfig``.
        generator: a CPU ``torch.Generator`` for sampling and the mini-batch order.

    Returns:
        TRL-named stats, Python floats: ``ppo/mean_scores`` (mean score),
        ``objective/kl`` (mean over sequences of the summed per-token KL, nats),
        ``objective/kl_coef`` (β used in this step, before the update),
        ``ppo/policy/approx_kl``, ``ppo/policy/clipfrac``, ``ppo/loss/total``,
        ``ppo/loss/value``, ``ppo/policy/entropy`` (means over all mini-batches of
        all epochs), ``time/ppo/generation`` and ``time/ppo/training`` (seconds).

    Raises:
        Whatever the stages raise on bad inputs (ValueError from exercises 1–6
        and the model).
    """
    clock = time.perf_counter
    t0 = clock()
    gen = policy.generate(queries, config.max_new_tokens, config.temperature, config.top_p, generator)
    responses, mask = gen.responses, gen.mask
    t_gen = clock() - t0
    t0 = clock()
    scores = torch.as_tensor(reward_fn(responses, mask))
    with torch.no_grad():
        lg, values = policy.forward_response(queries, responses, config.temperature)
        logp_old = ex1_ratio.logprobs_from_logits(lg, responses)
        ref_logp = ex1_ratio.logprobs_from_logits(
            ref_policy.forward_response(queries, responses, config.temperature)[0], responses)
    scores = scores.to(device=logp_old.device, dtype=logp_old.dtype)
    beta = float(kl_ctl.value)
    rewards = ex6_kl_reward.kl_shaped_rewards(scores, logp_old, ref_logp, mask, beta, config.kl_placement)
    if config.whiten_rewards:
        rewards = ex4_gae.whiten(rewards, mask, shift_mean=False)
    adv, ret = ex4_gae.compute_gae(rewards, values, mask, config.gamma, config.lam)
    adv = ex4_gae.whiten(adv, mask)
    buf = ex5_rollout_buffer.RolloutBuffer()
    buf.add(queries=queries, responses=responses, mask=mask, logp_old=logp_old,
            values=values, advantages=adv, returns=ret)
    buf.start_training()
    gas = config.gradient_accumulation_steps
    sums = {"kl": 0.0, "cf": 0.0, "loss": 0.0, "vl": 0.0, "ent": 0.0}
    count = 0
    for _ in range(config.ppo_epochs):
        pending = []
        for i, mb in enumerate(buf.minibatches(config.mini_batch_size, generator)):
            z, v = policy.forward_response(mb["queries"], mb["responses"], config.temperature)
            lp = ex1_ratio.logprobs_from_logits(z, mb["responses"])
            loss, st = ex3_full_loss.ppo_loss(lp, mb["logp_old"], mb["advantages"], v, mb["values"], mb["returns"],
                                              z, mb["mask"], clip_eps=config.cliprange,
                                              clip_range_value=config.cliprange_value,
                                              vf_coef=config.vf_coef, ent_coef=config.ent_coef)
            pending.append(loss)
            sums["kl"] += st["approx_kl"]; sums["cf"] += st["clipfrac"]; sums["loss"] += float(loss)
            sums["vl"] += st["value_loss"]; sums["ent"] += st["entropy"]; count += 1
            if (i + 1) % gas == 0:
                (torch.stack(pending).sum() / gas).backward()       # one backward for the whole optimizer batch
                pending = []
                torch.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad()
        if pending:  # a partial group: its gradient stays accumulated, as in the listed scheme
            (torch.stack(pending).sum() / gas).backward()
    mean_kl = float(ex6_kl_reward.per_token_kl(logp_old, ref_logp, mask).sum(1).mean())
    kl_ctl.update(mean_kl, queries.shape[0])
    buf.purge()
    t_train = clock() - t0
    return {
        "ppo/mean_scores": float(scores.mean()),
        "objective/kl": mean_kl,
        "objective/kl_coef": beta,
        "ppo/policy/approx_kl": sums["kl"] / count,
        "ppo/policy/clipfrac": sums["cf"] / count,
        "ppo/loss/total": sums["loss"] / count,
        "ppo/loss/value": sums["vl"] / count,
        "ppo/policy/entropy": sums["ent"] / count,
        "time/ppo/generation": t_gen,
        "time/ppo/training": t_train,
    }
