# Exercise stub (ex7_ppo_step.py): write your code here. Replace each `raise NotImplementedError(...)` with
# your code; keep the names and signatures (the graders call them).
"""Exercise 7 (stops 5–7): one full PPO step for RLHF, from your exercises 1–6.

Book fig. 5.1 (§5.5): generate → score → KL → shaped reward → GAE → whitened
advantages → K epochs of mini-batch clipped updates → purge; TRL's
``PPOTrainer.step()`` does the same inside (Book §5.8). Everything here is
glue: each stage is a function you wrote in exercises 1–6, imported as
sibling modules.

The order, the optimizer, the mini-batch order and the gradient-accumulation
scheme are fixed (listed step by step in ``ppo_step``'s docstring below), so that any correct implementation
gives the same parameters as the reference after a step, to float tolerance.
"""

from __future__ import annotations

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
    # TODO: implement the nine stages listed in the docstring, in that order, with the functions of your exercises 1-6 (generate, score, no-grad log-probs, kl_shaped_rewards, whiten, compute_gae, whiten, buffer, K epochs of accumulated mini-batch updates, kl_ctl.update, purge), and return the stats dict.
    raise NotImplementedError('ex7_ppo_step.ppo_step: implement the nine stages listed in the docstring, in that order, with the functions of your exercises 1-6 (generate, score, no-grad log-probs, kl_shaped_rewards, whiten, compute_gae, whiten, buffer, K epochs of accumulated mini-batch updates, kl_ctl.update, purge), and return the stats dict.')
