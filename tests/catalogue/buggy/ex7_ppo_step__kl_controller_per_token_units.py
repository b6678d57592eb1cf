"""Buggy ppo_step: the adaptive controller gets nats per token, not nats per sequence.

TRL's kl_ctl.update receives the batch mean of each sequence's summed KL;
a per-token mean is ~T times smaller, so beta keeps shrinking.
"""
EXERCISE = "ex7_ppo_step"
DIAGNOSIS = "ppo_step_kl_units"
DESCRIPTION = "ppo_step feeds the controller the mean per-token KL instead of the mean per-sequence summed KL"
SEEN_IN = "verl-project/verl#1984 (units of the adaptive controller's inputs); huggingface/trl#2562"
ALSO = "ppo_step_stats_inconsistent"  # stats["objective/kl"] is the per-token mean too

import time

import torch

import ex1_ratio
import ex3_full_loss
import ex4_gae
import ex5_rollout_buffer
import ex6_kl_reward


def ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator):
    t0 = time.perf_counter()
    gen = policy.generate(queries, config.max_new_tokens, config.temperature, config.top_p, generator)
    responses, mask = gen.responses, gen.mask                        # [B, T] long, [B, T] bool
    t_gen = time.perf_counter() - t0

    t0 = time.perf_counter()
    scores = torch.as_tensor(reward_fn(responses, mask))             # [B]
    with torch.no_grad():
        # the reference first: no randomness is drawn by a forward pass, so the order is free
        ref_logits, _ = ref_policy.forward_response(queries, responses, config.temperature)
        ref_logp = ex1_ratio.logprobs_from_logits(ref_logits, responses)          # [B, T]
        logits, values = policy.forward_response(queries, responses, config.temperature)
        logp_old = ex1_ratio.logprobs_from_logits(logits, responses)              # [B, T]
    scores = scores.to(device=logp_old.device, dtype=logp_old.dtype)

    beta = kl_ctl.value
    rewards = ex6_kl_reward.kl_shaped_rewards(scores, logp_old, ref_logp, mask, beta, config.kl_placement)
    if config.whiten_rewards:
        rewards = ex4_gae.whiten(rewards, mask, shift_mean=False)
    advantages, returns = ex4_gae.compute_gae(rewards, values, mask, config.gamma, config.lam)
    advantages = ex4_gae.whiten(advantages, mask)

    buf = ex5_rollout_buffer.RolloutBuffer()
    buf.add(queries=queries, responses=responses, mask=mask, logp_old=logp_old,
            values=values, advantages=advantages, returns=returns)
    buf.start_training()

    gas = config.gradient_accumulation_steps
    sums = {"approx_kl": 0.0, "clipfrac": 0.0, "total": 0.0, "value": 0.0, "entropy": 0.0}
    n_minibatches = 0
    for epoch in range(config.ppo_epochs):
        pending = 0                                                  # mini-batches since the last step
        for mb in buf.minibatches(config.mini_batch_size, generator):
            mb_logits, mb_values = policy.forward_response(mb["queries"], mb["responses"], config.temperature)
            logp = ex1_ratio.logprobs_from_logits(mb_logits, mb["responses"])
            loss, stats = ex3_full_loss.ppo_loss(
                logp, mb["logp_old"], mb["advantages"], mb_values, mb["values"], mb["returns"], mb_logits,
                mb["mask"], clip_eps=config.cliprange, clip_range_value=config.cliprange_value,
                vf_coef=config.vf_coef, ent_coef=config.ent_coef)
            (loss / gas).backward()
            pending += 1
            if pending == gas:
                torch.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad()
                pending = 0
            with torch.no_grad():
                sums["value"] += float(ex3_full_loss.clipped_value_loss(
                    mb_values, mb["values"], mb["returns"], mb["mask"], config.cliprange_value))
                sums["entropy"] += float(ex3_full_loss.entropy_from_logits(mb_logits, mb["mask"]))
            sums["approx_kl"] += float(stats["approx_kl"])
            sums["clipfrac"] += float(stats["clipfrac"])
            sums["total"] += float(loss)
            n_minibatches += 1

    kl = ex6_kl_reward.per_token_kl(logp_old, ref_logp, mask)        # [B, T], 0 on padding
    kl_per_sequence = float(kl.sum() / mask.sum())  # mean KL per token
    kl_ctl.update(kl_per_sequence, queries.shape[0])
    buf.purge()
    t_train = time.perf_counter() - t0

    mean = {k: v / n_minibatches for k, v in sums.items()}
    return {
        "ppo/mean_scores": float(scores.mean()),
        "objective/kl": kl_per_sequence,
        "objective/kl_coef": float(beta),
        "ppo/policy/approx_kl": mean["approx_kl"],
        "ppo/policy/clipfrac": mean["clipfrac"],
        "ppo/loss/total": mean["total"],
        "ppo/loss/value": mean["value"],
        "ppo/policy/entropy": mean["entropy"],
        "time/ppo/generation": t_gen,
        "time/ppo/training": t_train,
    }
