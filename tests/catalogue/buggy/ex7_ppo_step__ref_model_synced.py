"""Buggy ppo_step: after the update the reference policy is synced to the policy
(ref_policy.load_state_dict(policy.state_dict())), like a DQN target network. pi_ref is the frozen SFT model
(Book §5.6): from the next step on the KL penalty measures only the last step's drift and no longer anchors the
policy. One step's own numbers are right; only the reference policy's weights after the step show it (named
`ppo_step_reference_updated` since landing 13; `wrong_value` before).
"""
EXERCISE = "ex7_ppo_step"
DIAGNOSIS = "ppo_step_reference_updated"
DESCRIPTION = 'ref_policy.load_state_dict(policy.state_dict()) after the update (the reference model is updated)'
SEEN_IN = "classroom mistake (the reference policy 'kept up to date' like a target network)"

import statistics
import time

import torch

import ex1_ratio
import ex3_full_loss
import ex4_gae
import ex5_rollout_buffer
import ex6_kl_reward

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
    
    ### BEGIN SOLUTION
    # TODO: implement the nine stages listed in the docstring, in that order, with the functions of your exercises 1-6 (generate, score, no-grad log-probs, kl_shaped_rewards, whiten, compute_gae, whiten, buffer, K epochs of accumulated mini-batch updates, kl_ctl.update, purge), and return the stats dict.
    t_start = time.perf_counter()
    # (1) collect: the live policy samples (θ_old = θ at this moment, Book table 5.1).
    gen = policy.generate(queries, config.max_new_tokens, config.temperature, config.top_p, generator)
    responses, mask = gen.responses, gen.mask  # (B, T) long, (B, T) bool
    t_generation = time.perf_counter() - t_start

    t_start = time.perf_counter()
    # (2) score with the reward model.
    scores = reward_fn(responses, mask)  # (B,)
    # (3) log π_θold and log π_ref of the sampled tokens, stored as constants (Book §5.7).
    with torch.no_grad():
        logits, values = policy.forward_response(queries, responses, config.temperature)  # (B, T, V), (B, T)
        logp_old = ex1_ratio.logprobs_from_logits(logits, responses)  # (B, T)
        ref_logits, _ = ref_policy.forward_response(queries, responses, config.temperature)
        ref_logp = ex1_ratio.logprobs_from_logits(ref_logits, responses)  # (B, T)
        del logits, ref_logits  # [B, T, V] each: not needed past here
    scores = torch.as_tensor(scores).to(dtype=logp_old.dtype, device=logp_old.device)

    # (4) final reward: score minus the KL penalty (Book fig. 5.1), optionally scale-whitened.
    kl_coef = kl_ctl.value
    rewards = ex6_kl_reward.kl_shaped_rewards(scores, logp_old, ref_logp, mask, kl_coef, config.kl_placement)
    if config.whiten_rewards:
        rewards = ex4_gae.whiten(rewards, mask, shift_mean=False)
    # (5) GAE, then whitened advantages (Book §5.5).
    advantages, returns = ex4_gae.compute_gae(rewards, values, mask, config.gamma, config.lam)
    advantages = ex4_gae.whiten(advantages, mask)

    # (6) the rollout buffer of eq. 5.13: collect, then train.
    buf = ex5_rollout_buffer.RolloutBuffer()
    buf.add(
        queries=queries, responses=responses, mask=mask, logp_old=logp_old,
        values=values, advantages=advantages, returns=returns,
    )
    buf.start_training()

    # (7) K epochs of mini-batch clipped updates; one optimizer step per `gas` mini-batches.
    gas = config.gradient_accumulation_steps
    history: dict[str, list[float]] = {"approx_kl": [], "clipfrac": [], "loss": [], "value": [], "entropy": []}
    for _epoch in range(config.ppo_epochs):
        for i, mb in enumerate(buf.minibatches(config.mini_batch_size, generator)):
            mb_logits, mb_values = policy.forward_response(mb["queries"], mb["responses"], config.temperature)
            logp = ex1_ratio.logprobs_from_logits(mb_logits, mb["responses"])  # (b, T)
            loss, stats = ex3_full_loss.ppo_loss(
                logp, mb["logp_old"], mb["advantages"], mb_values, mb["values"], mb["returns"],
                mb_logits, mb["mask"],
                clip_eps=config.cliprange, clip_range_value=config.cliprange_value,
                vf_coef=config.vf_coef, ent_coef=config.ent_coef,
            )
            # Dividing by gas makes the accumulated gradient the mean over the optimizer batch.
            (loss / gas).backward()
            if (i + 1) % gas == 0:
                torch.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad()
            # Monitoring only: the contract fixes just approx_kl and clipfrac in `stats`.
            with torch.no_grad():
                value_loss = ex3_full_loss.clipped_value_loss(
                    mb_values.detach(), mb["values"], mb["returns"], mb["mask"], config.cliprange_value
                )
                entropy = ex3_full_loss.entropy_from_logits(mb_logits.detach(), mb["mask"])
            history["approx_kl"].append(float(stats["approx_kl"]))
            history["clipfrac"].append(float(stats["clipfrac"]))
            history["loss"].append(float(loss.detach()))
            history["value"].append(float(value_loss))
            history["entropy"].append(float(entropy))

    # (8) adapt β with TRL's units: mean over sequences of each sequence's summed KL, n_steps = B.
    kl_per_sequence = ex6_kl_reward.per_token_kl(logp_old, ref_logp, mask).sum(dim=1)  # (B,)
    mean_kl = float(kl_per_sequence.mean())
    kl_ctl.update(mean_kl, queries.shape[0])
    # (9) purge: this data is stale after the update (Book §5.5.2).
    buf.purge()
    ref_policy.load_state_dict(policy.state_dict())
    t_training = time.perf_counter() - t_start

    return {
        "ppo/mean_scores": float(scores.mean()),
        "objective/kl": mean_kl,
        "objective/kl_coef": float(kl_coef),
        "ppo/policy/approx_kl": statistics.fmean(history["approx_kl"]),
        "ppo/policy/clipfrac": statistics.fmean(history["clipfrac"]),
        "ppo/loss/total": statistics.fmean(history["loss"]),
        "ppo/loss/value": statistics.fmean(history["value"]),
        "ppo/policy/entropy": statistics.fmean(history["entropy"]),
        "time/ppo/generation": t_generation,
        "time/ppo/training": t_training,
    }
    ### END SOLUTION
