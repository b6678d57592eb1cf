"""Correct variant: ppo_step written as verl writes PPO (verl/trainer/ppo/ray_trainer.py, core_algos.py,
workers/actor/dp_actor.py).

- The rollout lives in a `DataProto`-like dict of named tensors (`responses`, `response_mask`,
  `old_log_probs`, `ref_log_prob`, `values`, `token_level_scores`, `token_level_rewards`, `advantages`,
  `returns`); `compute_log_prob` / `compute_values` fill it with no-grad passes over micro-batches
  (`log_prob_micro_batch_size` = the mini-batch size), the log-probs cast to float32 where the model is
  float32 (verl computes logits in float32 under bf16 autocast: here a no-op, never a down-cast).
- `apply_kl_penalty` shapes the rewards (ex6's kl_shaped_rewards with the contract's placement) and
  computes `current_kl`; unlike verl (token mean per sequence) the controller gets the contract's
  units, the mean over sequences of the summed KL, and it is updated after the updates, as the stub fixes.
- `compute_advantage` calls core_algos' `compute_gae_advantage_return`, which in verl whitens the
  advantages after computing returns = A + V (ex4's compute_gae, then ex4's whiten).
- `update_policy`: ppo_epochs × mini-batches, `policy_loss = ppo_loss(...)` (ex3; its masked means are verl's
  `agg_loss(..., loss_agg_mode="token-mean")`, which `agg_loss` here uses for the metrics), the loss
  divided by the gradient accumulation, `_optimizer_step` = clip_grad_norm_ + step; metrics appended per
  mini-batch to lists (`append_to_dict`) and reduced by their mean.
"""
EXERCISE = "ex7_ppo_step"
DESCRIPTION = "ppo_step as verl: DataProto-style dict, micro-batched compute_log_prob, apply_kl_penalty, agg_loss metrics"

import time
from collections import defaultdict

import torch

import ex1_ratio
import ex3_full_loss
import ex4_gae
import ex5_rollout_buffer
import ex6_kl_reward


def agg_loss(loss_mat: torch.Tensor, loss_mask: torch.Tensor, loss_agg_mode: str = "token-mean") -> torch.Tensor:
    """verl's agg_loss, token-mean only (the contract's masked mean over the batch's real tokens)."""
    if loss_agg_mode != "token-mean":
        raise ValueError(f"only token-mean aggregation is the contract's, got {loss_agg_mode!r}")
    mask = loss_mask.bool()
    return torch.where(mask, loss_mat, torch.zeros_like(loss_mat)).sum() / mask.sum()


def append_to_dict(data: dict, new_data: dict) -> None:
    for key, val in new_data.items():
        data[key].append(val)


def compute_log_prob_and_values(model, queries, responses, temperature, micro_batch_size):
    """No-grad log-probs (float32 when the model is float32) and values, micro-batch by micro-batch."""
    log_probs, values = [], []
    with torch.no_grad():
        for q, r in zip(queries.split(micro_batch_size), responses.split(micro_batch_size)):
            logits, v = model.forward_response(q, r, temperature)
            if logits.dtype in (torch.float16, torch.bfloat16):
                logits = logits.float()
            log_probs.append(ex1_ratio.logprobs_from_logits(logits, r))
            values.append(v)
    return torch.cat(log_probs, dim=0), torch.cat(values, dim=0)


def compute_gae_advantage_return(token_level_rewards, values, response_mask, gamma, lam):
    """core_algos' GAE: advantages and returns = A + V, then the advantages whitened over the real tokens."""
    with torch.no_grad():
        advantages, returns = ex4_gae.compute_gae(token_level_rewards, values, response_mask, gamma, lam)
        advantages = ex4_gae.whiten(advantages, response_mask)
    return advantages, returns


def apply_kl_penalty(batch: dict, beta: float, placement: str) -> float:
    """token_level_rewards from token_level_scores and the KL to the reference; returns current_kl (nats/seq)."""
    response_mask = batch["response_mask"]
    batch["token_level_rewards"] = ex6_kl_reward.kl_shaped_rewards(
        batch["token_level_scores"], batch["old_log_probs"], batch["ref_log_prob"], response_mask, beta, placement)
    kld = ex6_kl_reward.per_token_kl(batch["old_log_probs"], batch["ref_log_prob"], response_mask)
    return torch.mean(kld.sum(dim=-1), dim=0).item()


def ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator):
    timing_raw = {}
    t0 = time.perf_counter()
    gen_batch_output = policy.generate(queries, config.max_new_tokens, config.temperature, config.top_p, generator)
    timing_raw["gen"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    batch = {"prompts": queries, "responses": gen_batch_output.responses, "response_mask": gen_batch_output.mask}
    reward_tensor = reward_fn(batch["responses"], batch["response_mask"])
    batch["old_log_probs"], batch["values"] = compute_log_prob_and_values(
        policy, queries, batch["responses"], config.temperature, config.mini_batch_size)
    batch["ref_log_prob"], _ = compute_log_prob_and_values(
        ref_policy, queries, batch["responses"], config.temperature, config.mini_batch_size)
    batch["token_level_scores"] = torch.as_tensor(reward_tensor).to(
        device=batch["old_log_probs"].device, dtype=batch["old_log_probs"].dtype)

    beta = kl_ctl.value
    current_kl = apply_kl_penalty(batch, beta, config.kl_placement)
    if config.whiten_rewards:
        batch["token_level_rewards"] = ex4_gae.whiten(batch["token_level_rewards"], batch["response_mask"],
                                                      shift_mean=False)
    batch["advantages"], batch["returns"] = compute_gae_advantage_return(
        batch["token_level_rewards"], batch["values"], batch["response_mask"], config.gamma, config.lam)

    data = ex5_rollout_buffer.RolloutBuffer()
    data.add(queries=batch["prompts"], responses=batch["responses"], mask=batch["response_mask"],
             logp_old=batch["old_log_probs"], values=batch["values"], advantages=batch["advantages"],
             returns=batch["returns"])
    data.start_training()

    metrics = defaultdict(list)
    gradient_accumulation = config.gradient_accumulation_steps
    for _ in range(config.ppo_epochs):
        for batch_idx, mini_batch in enumerate(data.minibatches(config.mini_batch_size, generator)):
            response_mask = mini_batch["mask"]
            logits, vpreds = policy.forward_response(mini_batch["queries"], mini_batch["responses"],
                                                     config.temperature)
            log_prob = ex1_ratio.logprobs_from_logits(logits, mini_batch["responses"])
            policy_loss, stats = ex3_full_loss.ppo_loss(
                log_prob, mini_batch["logp_old"], mini_batch["advantages"], vpreds, mini_batch["values"],
                mini_batch["returns"], logits, response_mask, clip_eps=config.cliprange,
                clip_range_value=config.cliprange_value, vf_coef=config.vf_coef, ent_coef=config.ent_coef)
            loss = policy_loss / gradient_accumulation
            loss.backward()
            if (batch_idx + 1) % gradient_accumulation == 0:  # _optimizer_step
                torch.nn.utils.clip_grad_norm_(policy.parameters(), max_norm=config.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad()
            with torch.no_grad():
                logp_all = torch.log_softmax(logits.detach(), dim=-1)
                entropy = -(logp_all.exp() * logp_all).sum(dim=-1)
                vf_loss = ex3_full_loss.clipped_value_loss(vpreds.detach(), mini_batch["values"],
                                                           mini_batch["returns"], response_mask, config.cliprange_value)
            append_to_dict(metrics, {"actor/pg_loss": policy_loss.detach().item(),
                                     "actor/ppo_kl": float(stats["approx_kl"]),
                                     "actor/pg_clipfrac": float(stats["clipfrac"]),
                                     "critic/vf_loss": vf_loss.item(),
                                     "actor/entropy": agg_loss(entropy, response_mask, "token-mean").item()})

    kl_ctl.update(current_kl, queries.shape[0])
    data.purge()
    timing_raw["update_actor"] = time.perf_counter() - t0

    mean = {k: sum(v) / len(v) for k, v in metrics.items()}
    return {
        "ppo/mean_scores": batch["token_level_scores"].mean().item(),
        "objective/kl": current_kl,
        "objective/kl_coef": float(beta),
        "ppo/policy/approx_kl": mean["actor/ppo_kl"],
        "ppo/policy/clipfrac": mean["actor/pg_clipfrac"],
        "ppo/loss/total": mean["actor/pg_loss"],
        "ppo/loss/value": mean["critic/vf_loss"],
        "ppo/policy/entropy": mean["actor/entropy"],
        "time/ppo/generation": timing_raw["gen"],
        "time/ppo/training": timing_raw["update_actor"],
    }
