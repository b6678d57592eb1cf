"""Correct variant (c08 of the unseen2 set, written outside the project from the docstrings
alone): Mini-batch iterator driven by hand (`next` in a while loop, own counter), reference pass before the policy pass (deterministic), whitened advantages computed inline in `buf.add`, KL per sequence by a masked `torch.where` sum.
"""
EXERCISE = "ex7_ppo_step"
DESCRIPTION = "c08: Mini-batch iterator driven by hand (`next` in a while loop, own counter), reference pass before the policy pass (deterministic), whitened advantages computed inline in `buf.add`, KL per sequence by a masked `torch.where` sum"

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
    timings = {}
    start = time.perf_counter()
    g = policy.generate(queries, config.max_new_tokens, config.temperature, config.top_p, generator)
    timings["gen"] = time.perf_counter() - start
    start = time.perf_counter()
    resp, m = g.responses, g.mask
    score = reward_fn(resp, m)
    with torch.no_grad():  # deterministic passes: their order does not matter
        ref_logp = ex1_ratio.logprobs_from_logits(ref_policy.forward_response(queries, resp, config.temperature)[0], resp)
        z_old, v_old = policy.forward_response(queries, resp, config.temperature)
        lp_old = ex1_ratio.logprobs_from_logits(z_old, resp)
    score = torch.as_tensor(score).to(lp_old)
    coef_used = kl_ctl.value
    r = ex6_kl_reward.kl_shaped_rewards(score, lp_old, ref_logp, m, coef_used, config.kl_placement)
    r = ex4_gae.whiten(r, m, shift_mean=False) if config.whiten_rewards else r
    a, ret = ex4_gae.compute_gae(r, v_old, m, config.gamma, config.lam)
    buffer = ex5_rollout_buffer.RolloutBuffer()
    buffer.add(queries=queries, responses=resp, mask=m, logp_old=lp_old, values=v_old,
               advantages=ex4_gae.whiten(a, m), returns=ret)
    buffer.start_training()
    log = []
    for epoch in range(config.ppo_epochs):
        it = iter(buffer.minibatches(config.mini_batch_size, generator))
        i = 0
        while True:
            try:
                mb = next(it)
            except StopIteration:
                break
            z, v = policy.forward_response(mb["queries"], mb["responses"], config.temperature)
            loss, st = ex3_full_loss.ppo_loss(
                ex1_ratio.logprobs_from_logits(z, mb["responses"]), mb["logp_old"], mb["advantages"],
                v, mb["values"], mb["returns"], z, mb["mask"], config.cliprange, config.cliprange_value,
                config.vf_coef, config.ent_coef)
            loss.div(config.gradient_accumulation_steps).backward()
            i += 1
            if i % config.gradient_accumulation_steps == 0:
                torch.nn.utils.clip_grad_norm_(policy.parameters(), max_norm=config.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad()
            log.append((st["approx_kl"], st["clipfrac"], st["loss"], st["value_loss"], st["entropy"]))
    kl_rows = torch.where(m.bool(), lp_old - ref_logp, torch.zeros_like(lp_old)).sum(dim=1)
    kl_mean = kl_rows.mean().item()
    kl_ctl.update(kl_mean, len(queries))
    buffer.purge()
    cols = list(zip(*log))
    return {
        "ppo/mean_scores": score.mean().item(),
        "objective/kl": kl_mean,
        "objective/kl_coef": float(coef_used),
        "ppo/policy/approx_kl": statistics.fmean(cols[0]),
        "ppo/policy/clipfrac": statistics.fmean(cols[1]),
        "ppo/loss/total": statistics.fmean(cols[2]),
        "ppo/loss/value": statistics.fmean(cols[3]),
        "ppo/policy/entropy": statistics.fmean(cols[4]),
        "time/ppo/generation": timings["gen"],
        "time/ppo/training": time.perf_counter() - start,
    }
