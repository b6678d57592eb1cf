"""Correct variant: ppo_step written as CleanRL's single-file ppo.py writes PPO.

- `args` is the config; storage is time-major (`logprobs`, `values`, `rewards` of shape [T, B], CleanRL's
  (num_steps, num_envs)), filled from one no-grad pass and transposed to the contract's [B, T] only at the
  calls of exercises 1-6 (`b_` tensors, as CleanRL flattens into b_obs, b_logprobs, ...).
- The update loop names its tensors `mb_*`, logs scalars through a `writer`-like dict keyed
  "losses/policy_loss", "losses/approx_kl", ... and averages them at the end; `clipfracs` is a list.
- CleanRL's own choices the contract forbids are left out: its `optimizer.zero_grad()` before each backward
  (it would break the accumulation the stub fixes: here after each optimizer step), its
  `np.random.shuffle` (here the buffer's generator order), its k3 `approx_kl` and |r − 1| > ε clipfrac
  (here ppo_loss's), and its advantage normalisation per mini-batch (here one whiten over the batch).
"""
EXERCISE = "ex7_ppo_step"
DESCRIPTION = "ppo_step as CleanRL's ppo.py: time-major storage, b_/mb_ tensors, writer-style scalar log"

import time

import torch
import torch.nn as nn

import ex1_ratio
import ex3_full_loss
import ex4_gae
import ex5_rollout_buffer
import ex6_kl_reward


def ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator):
    args = config
    writer: dict[str, list[float]] = {}

    def add_scalar(tag: str, value: float) -> None:
        writer.setdefault(tag, []).append(value)

    start_time = time.perf_counter()
    rollout = policy.generate(queries, args.max_new_tokens, args.temperature, args.top_p, generator)
    actions, dones_mask = rollout.responses, rollout.mask          # [B, T]
    gen_time = time.perf_counter() - start_time

    start_time = time.perf_counter()
    score = torch.as_tensor(reward_fn(actions, dones_mask))
    with torch.no_grad():
        logits, value = policy.forward_response(queries, actions, args.temperature)
        logprobs = ex1_ratio.logprobs_from_logits(logits, actions).T.contiguous()     # [T, B], time-major
        values = value.T.contiguous()                                                   # [T, B]
        ref_logits, _ = ref_policy.forward_response(queries, actions, args.temperature)
        ref_logprobs = ex1_ratio.logprobs_from_logits(ref_logits, actions).T.contiguous()
    score = score.to(device=logprobs.device, dtype=logprobs.dtype)

    # bootstrap value and advantages (CleanRL's "with torch.no_grad(): ... GAE"), batch-major for ex4
    kl_coef = kl_ctl.value
    b_logprobs, b_values, b_ref_logprobs = logprobs.T, values.T, ref_logprobs.T
    rewards = ex6_kl_reward.kl_shaped_rewards(score, b_logprobs, b_ref_logprobs, dones_mask, kl_coef,
                                              args.kl_placement)
    if args.whiten_rewards:
        rewards = ex4_gae.whiten(rewards, dones_mask, shift_mean=False)
    b_advantages, b_returns = ex4_gae.compute_gae(rewards, b_values, dones_mask, args.gamma, args.lam)
    b_advantages = ex4_gae.whiten(b_advantages, dones_mask)

    storage = ex5_rollout_buffer.RolloutBuffer()
    storage.add(queries=queries, responses=actions, mask=dones_mask, logp_old=b_logprobs, values=b_values,
                advantages=b_advantages, returns=b_returns)
    storage.start_training()

    clipfracs = []
    for epoch in range(args.ppo_epochs):
        for i, mb in enumerate(storage.minibatches(args.mini_batch_size, generator)):
            newlogits, newvalue = policy.forward_response(mb["queries"], mb["responses"], args.temperature)
            newlogprob = ex1_ratio.logprobs_from_logits(newlogits, mb["responses"])
            mb_advantages, mb_returns, mb_mask = mb["advantages"], mb["returns"], mb["mask"]
            loss, info = ex3_full_loss.ppo_loss(
                newlogprob, mb["logp_old"], mb_advantages, newvalue, mb["values"], mb_returns, newlogits, mb_mask,
                clip_eps=args.cliprange, clip_range_value=args.cliprange_value, vf_coef=args.vf_coef,
                ent_coef=args.ent_coef)
            (loss / args.gradient_accumulation_steps).backward()
            if (i + 1) % args.gradient_accumulation_steps == 0:
                nn.utils.clip_grad_norm_(policy.parameters(), args.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad()
            with torch.no_grad():
                v_loss = ex3_full_loss.clipped_value_loss(newvalue.detach(), mb["values"], mb_returns, mb_mask,
                                                          args.cliprange_value)
                entropy_loss = ex3_full_loss.entropy_from_logits(newlogits.detach(), mb_mask)
            clipfracs += [float(info["clipfrac"])]
            add_scalar("losses/loss", loss.item())
            add_scalar("losses/value_loss", v_loss.item())
            add_scalar("losses/entropy", entropy_loss.item())
            add_scalar("losses/approx_kl", float(info["approx_kl"]))

    # time-major KL per sequence: sum over the time axis (dim 0), mean over the sequences
    kl_tm = ex6_kl_reward.per_token_kl(b_logprobs, b_ref_logprobs, dones_mask).T    # [T, B]
    mean_kl = kl_tm.sum(dim=0).mean().item()
    kl_ctl.update(mean_kl, queries.shape[0])
    storage.purge()
    train_time = time.perf_counter() - start_time

    mean = {tag: sum(v) / len(v) for tag, v in writer.items()}
    return {
        "ppo/mean_scores": score.mean().item(),
        "objective/kl": mean_kl,
        "objective/kl_coef": float(kl_coef),
        "ppo/policy/approx_kl": mean["losses/approx_kl"],
        "ppo/policy/clipfrac": sum(clipfracs) / len(clipfracs),
        "ppo/loss/total": mean["losses/loss"],
        "ppo/loss/value": mean["losses/value_loss"],
        "ppo/policy/entropy": mean["losses/entropy"],
        "time/ppo/generation": gen_time,
        "time/ppo/training": train_time,
    }
