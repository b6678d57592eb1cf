"""Buggy: the values and advantages are recomputed with the current policy at every epoch (GAE run again),
instead of once from the rollout before the epochs (steps 5-6 of the stub)."""
EXERCISE = "ex7_ppo_step"
DIAGNOSIS = "ppo_step_advantages_recomputed"
DESCRIPTION = "ppo_step recomputes values, GAE and whitening with the current policy at every epoch"
SEEN_IN = "classroom mistake (a 'fresher' critic each epoch, as in some value-refresh PPO variants)"

import time

import torch

import ex1_ratio
import ex3_full_loss
import ex4_gae
import ex5_rollout_buffer
import ex6_kl_reward


def _batched_forward(model, queries, responses, temperature, batch_size):
    """logits-derived log-probs and values of `model`, chunk by chunk of `batch_size` rows (no grad)."""
    logps, values = [], []
    for start in range(0, queries.shape[0], batch_size):
        q, r = queries[start:start + batch_size], responses[start:start + batch_size]
        logits, v = model.forward_response(q, r, temperature)
        logps.append(ex1_ratio.logprobs_from_logits(logits, r))
        values.append(v)
    return torch.cat(logps), torch.cat(values)


def ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator):
    t0 = time.perf_counter()
    gen = policy.generate(queries, config.max_new_tokens, config.temperature, config.top_p, generator)
    responses, mask = gen.responses, gen.mask
    t_gen = time.perf_counter() - t0

    t0 = time.perf_counter()
    scores = torch.as_tensor(reward_fn(responses, mask))
    with torch.no_grad():
        logp_old, values = _batched_forward(policy, queries, responses, config.temperature, config.mini_batch_size)
        ref_logp, _ = _batched_forward(ref_policy, queries, responses, config.temperature, config.mini_batch_size)
    scores = scores.to(device=logp_old.device, dtype=logp_old.dtype)

    beta = kl_ctl.value
    rewards = ex6_kl_reward.kl_shaped_rewards(scores, logp_old, ref_logp, mask, beta, config.kl_placement)
    if config.whiten_rewards:
        rewards = ex4_gae.whiten(rewards, mask, shift_mean=False)
    advantages, returns = ex4_gae.compute_gae(rewards, values, mask, config.gamma, config.lam)
    advantages = ex4_gae.whiten(advantages, mask)

    buf = ex5_rollout_buffer.RolloutBuffer()
    buf.add(queries=queries, responses=responses, mask=mask, logp_old=logp_old, values=values,
            advantages=advantages, returns=returns)
    buf.start_training()

    gas = config.gradient_accumulation_steps
    seen = {"approx_kl": [], "clipfrac": [], "total": [], "value": [], "entropy": []}
    for epoch in range(config.ppo_epochs):
        if epoch > 0:  # fresh values and advantages from the current policy at every epoch
            buf.purge()
            with torch.no_grad():
                _, values = _batched_forward(policy, queries, responses, config.temperature, config.mini_batch_size)
            advantages, returns = ex4_gae.compute_gae(rewards, values, mask, config.gamma, config.lam)
            advantages = ex4_gae.whiten(advantages, mask)
            buf.add(queries=queries, responses=responses, mask=mask, logp_old=logp_old, values=values,
                    advantages=advantages, returns=returns)
            buf.start_training()
        for i, mb in enumerate(buf.minibatches(config.mini_batch_size, generator)):
            logits, v = policy.forward_response(mb["queries"], mb["responses"], config.temperature)
            logp = ex1_ratio.logprobs_from_logits(logits, mb["responses"])
            loss, stats = ex3_full_loss.ppo_loss(
                logp, mb["logp_old"], mb["advantages"], v, mb["values"], mb["returns"], logits, mb["mask"],
                clip_eps=config.cliprange, clip_range_value=config.cliprange_value,
                vf_coef=config.vf_coef, ent_coef=config.ent_coef)
            (loss / gas).backward()
            if (i + 1) % gas == 0:
                torch.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad()
            seen["approx_kl"].append(float(stats["approx_kl"]))
            seen["clipfrac"].append(float(stats["clipfrac"]))
            seen["total"].append(float(loss))
            seen["value"].append(float(stats["value_loss"]))
            seen["entropy"].append(float(stats["entropy"]))

    kl = ex6_kl_reward.per_token_kl(logp_old, ref_logp, mask).double()
    kl_per_sequence = float(kl.sum(dim=1).mean())
    kl_ctl.update(kl_per_sequence, queries.shape[0])
    buf.purge()
    t_train = time.perf_counter() - t0

    mean = {k: sum(v) / len(v) for k, v in seen.items()}
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
