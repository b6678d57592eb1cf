"""Correct variant: ppo_step written as OpenRLHF writes PPO (openrlhf/trainer/ppo_utils/experience_maker.py,
openrlhf/models/loss.py, openrlhf/models/utils.py).

- An `Experience` dataclass per micro-batch of rollouts; `make_experience_list` runs the no-grad forward
  passes of the actor and the initial (reference) model micro-batch by micro-batch (micro_rollout_batch_size
  = the mini-batch size) and `Experience.concat` joins them before the rewards are shaped (one
  kl_shaped_rewards, one compute_gae and one whiten over the whole batch, as the stub fixes: OpenRLHF also
  normalises the advantages across all experiences at once, though with its own biased variance, which the
  contract does not allow, so ex4's whiten does it).
- The per-token KL is `compute_approx_kl(..., "k1")` = log π − log π_ref, reduced with OpenRLHF's
  `masked_mean(tensor, mask, dim)` for the per-sequence info and summed per sequence for the controller.
- A `PPOLoss` nn.Module in the style of `PolicyLoss`/`ValueLoss` holds the clip ranges and coefficients and
  delegates to ex3's ppo_loss; a small `Strategy` (DeepSpeed's role) owns backward scaling by the
  accumulation steps and the clipped optimizer step; per-mini-batch `status` dicts are averaged at the end.
"""
EXERCISE = "ex7_ppo_step"
DESCRIPTION = "ppo_step as OpenRLHF: Experience dataclass, micro-batched make_experience, PPOLoss module, Strategy"

import time
from dataclasses import dataclass, field
from typing import Optional

import torch

import ex1_ratio
import ex3_full_loss
import ex4_gae
import ex5_rollout_buffer
import ex6_kl_reward


def masked_mean(tensor: torch.Tensor, mask: Optional[torch.Tensor], dim: int = None) -> torch.Tensor:
    """OpenRLHF's masked_mean: Σ(tensor·mask) / Σ mask over `dim` (all positions when None)."""
    if mask is None:
        return tensor.mean(dim=dim)
    mask = mask.to(tensor.dtype)
    return (tensor * mask).sum(dim=dim) / mask.sum(dim=dim)


def compute_approx_kl(log_probs: torch.Tensor, log_probs_base: torch.Tensor, kl_estimator: str = "k1") -> torch.Tensor:
    """The per-token KL estimate (only k1, the contract's: log π − log π_ref)."""
    if kl_estimator != "k1":
        raise ValueError(f"only the k1 estimator is used here, got {kl_estimator!r}")
    return log_probs - log_probs_base


@dataclass
class Experience:
    """One micro-batch of rollouts (OpenRLHF's Experience, trimmed to this contract's fields)."""

    queries: torch.Tensor
    sequences: torch.Tensor
    action_mask: torch.Tensor
    action_log_probs: torch.Tensor
    base_action_log_probs: torch.Tensor
    values: torch.Tensor
    info: dict = field(default_factory=dict)

    @staticmethod
    def concat(experiences: list["Experience"]) -> "Experience":
        names = ["queries", "sequences", "action_mask", "action_log_probs", "base_action_log_probs", "values"]
        return Experience(**{n: torch.cat([getattr(e, n) for e in experiences]) for n in names})


class NaiveExperienceMaker:
    """Runs the actor and the initial model over the rollouts, micro-batch by micro-batch, without gradient."""

    def __init__(self, actor, initial_model, temperature: float, micro_rollout_batch_size: int):
        self.actor, self.initial_model = actor, initial_model
        self.temperature, self.micro_rollout_batch_size = temperature, micro_rollout_batch_size

    @torch.no_grad()
    def make_experience_list(self, queries, sequences, action_mask) -> list[Experience]:
        experiences = []
        for i in range(0, sequences.shape[0], self.micro_rollout_batch_size):
            q = queries[i:i + self.micro_rollout_batch_size]
            s = sequences[i:i + self.micro_rollout_batch_size]
            m = action_mask[i:i + self.micro_rollout_batch_size]
            logits, value = self.actor.forward_response(q, s, self.temperature)
            action_log_probs = ex1_ratio.logprobs_from_logits(logits, s)
            base_logits, _ = self.initial_model.forward_response(q, s, self.temperature)
            base_action_log_probs = ex1_ratio.logprobs_from_logits(base_logits, s)
            kl = compute_approx_kl(action_log_probs, base_action_log_probs, "k1")
            experiences.append(Experience(q, s, m, action_log_probs, base_action_log_probs, value,
                                          info={"kl": masked_mean(kl, m, dim=-1)}))
        return experiences


class PPOLoss(torch.nn.Module):
    """Clipped policy + clipped value − entropy loss with the config's ranges (OpenRLHF's PolicyLoss/ValueLoss
    pair, one module here because the policy and the value head share one model); ex3's ppo_loss computes it."""

    def __init__(self, clip_eps: float, value_clip: float, vf_coef: float, ent_coef: float):
        super().__init__()
        self.clip_eps, self.value_clip, self.vf_coef, self.ent_coef = clip_eps, value_clip, vf_coef, ent_coef

    def forward(self, log_probs, old_log_probs, advantages, values, old_values, returns, logits, action_mask):
        return ex3_full_loss.ppo_loss(
            log_probs, old_log_probs, advantages, values, old_values, returns, logits, action_mask,
            clip_eps=self.clip_eps, clip_range_value=self.value_clip, vf_coef=self.vf_coef, ent_coef=self.ent_coef)


class Strategy:
    """DeepSpeed's part: the loss scaled by the accumulation steps, the clipped step after each full group."""

    def __init__(self, accumulated_gradient: int, max_norm: float):
        self.accumulated_gradient, self.max_norm = accumulated_gradient, max_norm

    def backward(self, loss: torch.Tensor) -> None:
        (loss / self.accumulated_gradient).backward()

    def optimizer_step(self, optimizer, model, micro_step: int) -> None:
        if (micro_step + 1) % self.accumulated_gradient == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), self.max_norm)
            optimizer.step()
            optimizer.zero_grad()


def ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator):
    start_time = time.perf_counter()
    samples = policy.generate(queries, config.max_new_tokens, config.temperature, config.top_p, generator)
    sequences, action_mask = samples.responses, samples.mask
    generate_time = time.perf_counter() - start_time

    start_time = time.perf_counter()
    rewards = reward_fn(sequences, action_mask)
    maker = NaiveExperienceMaker(policy, ref_policy, config.temperature, config.mini_batch_size)
    experience = Experience.concat(maker.make_experience_list(queries, sequences, action_mask))
    r = torch.as_tensor(rewards).to(device=experience.action_log_probs.device, dtype=experience.action_log_probs.dtype)

    kl_coef = kl_ctl.value
    with torch.no_grad():
        shaped = ex6_kl_reward.kl_shaped_rewards(r, experience.action_log_probs, experience.base_action_log_probs,
                                                 action_mask, kl_coef, config.kl_placement)
        if config.whiten_rewards:
            shaped = ex4_gae.whiten(shaped, action_mask, shift_mean=False)
        advantages, returns = ex4_gae.compute_gae(shaped, experience.values, action_mask, config.gamma, config.lam)
        advantages = ex4_gae.whiten(advantages, action_mask)

    replay_buffer = ex5_rollout_buffer.RolloutBuffer()
    replay_buffer.add(queries=experience.queries, responses=experience.sequences, mask=experience.action_mask,
                      logp_old=experience.action_log_probs, values=experience.values,
                      advantages=advantages, returns=returns)
    replay_buffer.start_training()

    loss_fn = PPOLoss(config.cliprange, config.cliprange_value, config.vf_coef, config.ent_coef)
    strategy = Strategy(config.gradient_accumulation_steps, config.max_grad_norm)
    status_list = []
    for _epoch in range(config.ppo_epochs):
        for micro_step, batch in enumerate(replay_buffer.minibatches(config.mini_batch_size, generator)):
            logits, values = policy.forward_response(batch["queries"], batch["responses"], config.temperature)
            log_probs = ex1_ratio.logprobs_from_logits(logits, batch["responses"])
            loss, stats = loss_fn(log_probs, batch["logp_old"], batch["advantages"], values, batch["values"],
                                  batch["returns"], logits, batch["mask"])
            strategy.backward(loss)
            strategy.optimizer_step(optimizer, policy, micro_step)
            with torch.no_grad():  # the contract fixes only approx_kl and clipfrac in ppo_loss's stats
                critic_loss = ex3_full_loss.clipped_value_loss(values.detach(), batch["values"], batch["returns"],
                                                               batch["mask"], config.cliprange_value)
                entropy = ex3_full_loss.entropy_from_logits(logits.detach(), batch["mask"])
            status_list.append({"total": loss.item(), "ppo_kl": float(stats["approx_kl"]),
                                "clip_ratio": float(stats["clipfrac"]), "critic_loss": critic_loss.item(),
                                "entropy": entropy.item()})

    kl = compute_approx_kl(experience.action_log_probs, experience.base_action_log_probs, "k1")
    kl_per_sequence = torch.where(action_mask.bool(), kl, torch.zeros_like(kl)).sum(dim=-1)
    current_kl = kl_per_sequence.mean().item()
    kl_ctl.update(current_kl, queries.shape[0])
    replay_buffer.purge()
    train_time = time.perf_counter() - start_time

    status_mean = {k: sum(s[k] for s in status_list) / len(status_list) for k in status_list[0]}
    return {
        "ppo/mean_scores": r.mean().item(),
        "objective/kl": current_kl,
        "objective/kl_coef": float(kl_coef),
        "ppo/policy/approx_kl": status_mean["ppo_kl"],
        "ppo/policy/clipfrac": status_mean["clip_ratio"],
        "ppo/loss/total": status_mean["total"],
        "ppo/loss/value": status_mean["critic_loss"],
        "ppo/policy/entropy": status_mean["entropy"],
        "time/ppo/generation": generate_time,
        "time/ppo/training": train_time,
    }
