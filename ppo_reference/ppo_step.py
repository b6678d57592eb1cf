"""One PPO step for RLHF, top to bottom: the whole of Book fig. 5.1 (§5.5–§5.8).

generate → score → KL against the reference → shaped reward → GAE → whiten →
K epochs of clipped mini-batch updates → purge. This is what TRL 0.11's
``PPOTrainer.step`` does behind the book's one-line call (Book §5.8, "what the
training loop hides"), written out in the fixed order of ARCHITECTURE.md
("Exercise 7") so that an independent solution matches it to float tolerance:

1. sample with ``generator``          (the first draws of the generator)
2. score with the reward model
3. log π_old, V_old and log π_ref by one no-grad forward pass each
4. KL-shaped rewards (optionally rescaled: ``whiten_rewards``)
5. GAE, then whiten the advantages
6. fill the rollout buffer, freeze it
7. ``ppo_epochs`` × ``buf.minibatches(mini_batch_size, generator)``: loss /
   accumulation steps, backward; every ``gradient_accumulation_steps``
   mini-batches clip the gradient norm and step
8. adapt the KL coefficient; 9. purge.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from ppo_course.config import PPOConfig
from ppo_course.model import CausalLMWithValueHead
from ppo_reference.buffer import RolloutBuffer
from ppo_reference.gae import compute_gae, whiten
from ppo_reference.kl import AdaptiveKLController, kl_shaped_rewards, per_token_kl
from ppo_reference.losses import ppo_loss
from ppo_reference.ratio import logprobs_from_logits

__all__ = ["ppo_step"]

# TRL-named stats averaged over every mini-batch of every epoch, from ppo_loss's stats.
_MINIBATCH_STATS = {
    "ppo/loss/total": "loss",
    "ppo/loss/policy": "policy_loss",
    "ppo/loss/value": "value_loss",
    "ppo/policy/entropy": "entropy",
    "ppo/policy/approx_kl": "approx_kl",
    "ppo/policy/policykl": "policykl",
    "ppo/policy/clipfrac": "clipfrac",
    "ppo/val/clipfrac": "vf_clipfrac",
    "ppo/policy/ratio_mean": "ratio_mean",
}


def _sync(device: torch.device) -> None:
    # CUDA kernels run asynchronously: wait so that the phase timings are honest.
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def ppo_step(
    policy: CausalLMWithValueHead,
    ref_policy: CausalLMWithValueHead,
    optimizer: torch.optim.Optimizer,
    queries: torch.Tensor,
    reward_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    kl_ctl: AdaptiveKLController,
    config: PPOConfig,
    generator: torch.Generator,
) -> dict[str, float]:
    """Run one PPO step (collect → train → purge) and return TRL-named stats (Book fig. 5.1, §5.5–§5.8).

    Args:
        policy:     the trainable ``CausalLMWithValueHead`` (actor + critic, θ).
        ref_policy: the frozen reference (SFT) model, the KL anchor; never updated.
        optimizer:  ``torch.optim.Adam(policy.parameters(), lr=config.learning_rate)``, made by the caller.
        queries:    [B, P] long, unpadded prompts; B must be a multiple of
                    mini_batch_size × gradient_accumulation_steps (moved to the policy's device).
        reward_fn:  ``(responses [B, T] long, mask [B, T] bool) -> scores [B] float``, the reward model.
        kl_ctl:     ``AdaptiveKLController``; its ``value`` is β for this step, updated at the end.
        config:     ``PPOConfig`` (every field but batch_size, seed and learning_rate is read here).
        generator:  ``torch.Generator`` consumed, in this order, by the sampling
                    (B × max_new_tokens uniforms) and by one ``randperm`` per epoch.

    Returns:
        dict of Python floats: ``ppo/mean_scores``, ``ppo/std_scores``,
        ``objective/kl`` (mean over sequences of the summed per-token KL, nats),
        ``objective/kl_coef`` (β used this step), ``objective/entropy``
        (mean summed −log π_old per sequence), ``ppo/mean_non_score_reward``,
        ``ppo/policy/{approx_kl,policykl,clipfrac,entropy,ratio_mean}``,
        ``ppo/loss/{total,policy,value}``, ``ppo/val/clipfrac`` (means over all
        mini-batches), ``ppo/returns/mean``, ``ppo/val/mean``, ``ppo/response_len``,
        ``time/ppo/{generation,forward_pass,training,total}`` (seconds).

    Raises:
        ValueError: if ``queries`` is not [B, P] integer or B is not a multiple
            of mini_batch_size × gradient_accumulation_steps; whatever the
            reference functions raise on bad data (e.g. a reward_fn returning the
            wrong shape).
    """
    if queries.dim() != 2 or queries.dtype.is_floating_point:
        raise ValueError(f"ppo_step: queries must be a [B, P] integer tensor, got {tuple(queries.shape)} {queries.dtype}")
    batch = queries.shape[0]
    per_optimizer_step = config.mini_batch_size * config.gradient_accumulation_steps
    if batch % per_optimizer_step:
        raise ValueError(
            f"ppo_step: {batch} queries is not a multiple of mini_batch_size × gradient_accumulation_steps "
            f"= {per_optimizer_step}; every optimizer step must see the same number of sequences"
        )
    device = next(policy.parameters()).device
    queries = queries.to(device)
    t_start = time.perf_counter()

    # 1. Collect: sample responses from the current policy (θ_old = θ right now).
    rollout = policy.generate(queries, config.max_new_tokens, config.temperature, config.top_p, generator)
    responses, mask = rollout.responses, rollout.mask  # (B, T), (B, T)
    _sync(device)
    t_generated = time.perf_counter()

    # 2. Score each response with the reward model: one scalar per sequence.
    scores = reward_fn(responses, mask)  # (B,)

    # 3. log π_old and V_old (stored, so the frozen θ_old never has to run again:
    #    Book §5.7) and log π_ref for the KL anchor, all at the sampling temperature.
    with torch.no_grad():
        logits, values = policy.forward_response(queries, responses, config.temperature)  # (B, T, V), (B, T)
        logp_old = logprobs_from_logits(logits, responses)  # (B, T)
        ref_logits, _ = ref_policy.forward_response(queries, responses, config.temperature)  # (B, T, V)
        ref_logp = logprobs_from_logits(ref_logits, responses)  # (B, T)

    # 4. Final reward: the score on the last real token, minus β·KL (per token, as
    #    TRL; or its mean on the last token, as the book's R = r_RM − 0.05 × mean_KL).
    kl_coef = kl_ctl.value
    rewards = kl_shaped_rewards(scores, logp_old, ref_logp, mask, kl_coef, config.kl_placement)  # (B, T)
    if config.whiten_rewards:
        # Rescale only: shifting the mean would change which responses are good.
        rewards = whiten(rewards, mask, shift_mean=False)  # (B, T)

    # 5. GAE turns the sparse reward into per-token advantages (γ = 1, λ = 0.95 in
    #    the book); whitening gives them zero mean and unit variance over the batch.
    advantages, returns = compute_gae(rewards, values, mask, config.gamma, config.lam)  # (B, T), (B, T)
    advantages = whiten(advantages, mask)  # (B, T)

    # 6. The rollout buffer of eq. 5.13, frozen for the train phase.
    buf = RolloutBuffer()
    buf.add(queries=queries, responses=responses, mask=mask, logp_old=logp_old,
            values=values, advantages=advantages, returns=returns)
    buf.start_training()
    _sync(device)
    t_forward = time.perf_counter()

    # 7. Train: K epochs over the same rollout (data reuse by importance sampling,
    #    kept safe by the clip). Each mini-batch's loss is divided by the number of
    #    accumulated mini-batches so that one optimizer step sees their mean.
    accumulate = config.gradient_accumulation_steps
    sums = dict.fromkeys(_MINIBATCH_STATS, 0.0)
    n_minibatches = 0
    optimizer.zero_grad()
    for _epoch in range(config.ppo_epochs):
        for i, mb in enumerate(buf.minibatches(config.mini_batch_size, generator)):
            logits, vpred = policy.forward_response(mb["queries"], mb["responses"], config.temperature)  # (b, T, V), (b, T)
            logp = logprobs_from_logits(logits, mb["responses"])  # (b, T)
            loss, stats = ppo_loss(
                logp, mb["logp_old"], mb["advantages"], vpred, mb["values"], mb["returns"], logits, mb["mask"],
                clip_eps=config.cliprange, clip_range_value=config.cliprange_value,
                vf_coef=config.vf_coef, ent_coef=config.ent_coef,
            )
            (loss / accumulate).backward()
            if (i + 1) % accumulate == 0:
                # Book §5.5: the 70B walkthrough clips the global gradient norm at 1.0.
                torch.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad()
            for key, name in _MINIBATCH_STATS.items():
                sums[key] += stats[name]
            n_minibatches += 1

    # 8. Adapt β towards target_kl, in TRL's units: nats per sequence, B sequences.
    kl_per_sequence = per_token_kl(logp_old, ref_logp, mask).sum(dim=1)  # (B,)
    mean_kl = kl_per_sequence.mean().item()
    kl_ctl.update(mean_kl, batch)

    # 9. Purge: this rollout came from θ_old, which no longer exists.
    buf.purge()
    _sync(device)
    t_end = time.perf_counter()

    real = mask.to(logp_old.dtype)
    out = {
        "ppo/mean_scores": scores.float().mean().item(),
        "ppo/std_scores": scores.float().std().item() if batch > 1 else 0.0,
        "objective/kl": mean_kl,
        "objective/kl_coef": float(kl_coef),
        "objective/entropy": (-(logp_old * real).sum(dim=1)).mean().item(),
        "ppo/mean_non_score_reward": (-kl_coef * kl_per_sequence).mean().item(),
        "ppo/returns/mean": ((returns * real).sum() / real.sum()).item(),
        "ppo/val/mean": ((values * real).sum() / real.sum()).item(),
        "ppo/response_len": real.sum(dim=1).mean().item(),
    }
    out.update({key: total / n_minibatches for key, total in sums.items()})
    out.update({
        "time/ppo/generation": t_generated - t_start,
        "time/ppo/forward_pass": t_forward - t_generated,
        "time/ppo/training": t_end - t_forward,
        "time/ppo/total": t_end - t_start,
    })
    return out
