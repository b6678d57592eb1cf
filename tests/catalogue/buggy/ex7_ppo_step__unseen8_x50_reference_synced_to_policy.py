"""Buggy (x50 of the unseen8 set, written outside the project from the docstrings alone):
Ppo_step copies the policy into ref_policy at the end of the step.

Clause broken: “ref_policy: the frozen SFT model (Book §5.6)”
Expected diagnosis (the set's manifest): the reference must stay the frozen SFT model (it is not π_θold)
Graded as: ppo_step_reference_updated (landing 12's grader said only wrong_value).
"""
import torch

EXERCISE = "ex7_ppo_step"
DIAGNOSIS = "ppo_step_reference_updated"
DESCRIPTION = "ppo_step copies the policy into ref_policy at the end of the step"
SEEN_IN = "the unseen8 set (x50), written outside the project from the docstrings alone"


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
    ref_policy.load_state_dict(policy.state_dict())  # the old policy for the next step
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
