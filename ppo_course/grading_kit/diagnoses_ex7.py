"""Diagnosis ids of exercise 7 (the PPO step) and their plain-words messages (student side).

Part of the one table `ppo_course.grading_kit.diagnoses.DIAGNOSES` (see its docstring for the rules:
stable ids, generic hints, no hidden input or expected value): the named step mistakes, the stage
ids of the diagnosis by stage (`grader/mistakes/ppo_step_stages.py`) and the
earlier exercises a step needs.

Sources: Book fig. 5.1, §5.5-5.8 (chapter 5 · PPO); TRL's `PPOTrainer` for the stats and units.
"""

from __future__ import annotations

# id -> message a student can act on (what the step did and what the book / stub asks for instead).
EX7: dict[str, str] = {
    # --- exercise 7: the PPO step (Book fig. 5.1, §5.8) ---
    "ppo_step_no_advantage_whitening": (
        "Your PPO step does not whiten the advantages once over the whole batch before the updates (they are "
        "not whitened, or whitened per mini-batch inside the loop): whiten them once, to zero mean and unit "
        "variance over the batch's real tokens, before they go into the buffer (TRL, Book §5.6)."
    ),
    "ppo_step_no_grad_clip": (
        "Your PPO step does not clip the gradient norm (max_grad_norm) before optimizer.step()."
    ),
    "ppo_step_no_accumulation_scaling": (
        "Your PPO step does not divide the loss by gradient_accumulation_steps before backward(); "
        "one optimizer step must average over the accumulated mini-batches."
    ),
    "ppo_step_reference_updated": (
        "Your PPO step changes the reference policy (copies the policy into it, or lets the optimizer reach it): "
        "π_ref is the frozen SFT model the KL penalty measures against at every step, not π_θold (Book §5.6); "
        "once it follows the policy the KL penalty is 0 and nothing holds the policy near the SFT model."
    ),
    "ppo_step_no_purge": (
        "Your PPO step does not purge the buffer at the end (collect -> train -> purge, Book §5.5)."
    ),
    "ppo_step_gradients_never_zeroed": (
        "Your PPO step never zeroes the gradients after an optimizer step, so every step also applies the earlier "
        "steps' gradients again: call optimizer.zero_grad() after each optimizer.step()."
    ),
    "ppo_step_old_values_live": (
        "ppo_loss's old_values must be the values stored at rollout time (the mini-batch's \"values\"); you passed "
        "the live value predictions, so the value clip around them never binds (V is kept within "
        "clip_range_value of V_old, TRL's cliprange_value)."
    ),
    "ppo_step_accumulation_broken": (
        "Your PPO step zeroes the gradients inside an accumulation group (only the last mini-batch "
        "counts): call optimizer.zero_grad() only after each optimizer.step()."
    ),
    "ppo_step_logp_old_recomputed": (
        "Your PPO step recomputes logp_old from the live policy during training, which resets the "
        "ratio to 1 and disables the clip; logp_old is stored once at rollout time (Book §5.7)."
    ),
    "ppo_step_zero_gradient_steps": (
        "Every optimizer.step() of your PPO step ran on a zero gradient, so the weights never moved: "
        "call optimizer.zero_grad() after optimizer.step() (or before backward()), never between "
        "backward() and step()."
    ),
    "ppo_step_advantages_recomputed": (
        "Your PPO step computes the advantages (compute_gae) more than once: they are computed once per "
        "step, from the rollout's rewards and values, before the epochs (steps 5-6 of the stub)."
    ),
    "ppo_step_wrong_epochs": (
        "Your PPO step's epochs differ from the stub's: config.ppo_epochs epochs, each drawing its own "
        "mini-batches with one buf.minibatches(...) call (a fresh permutation) and training on every one."
    ),
    "ppo_step_kl_units": (
        "Your PPO step feeds the KL controller the wrong units: current_kl is the batch mean of each "
        "sequence's SUMMED per-token KL (nats per sequence), n_steps the number of sequences."
    ),
    "ppo_step_whiten_rewards_shifted": (
        "With whiten_rewards your PPO step shifts the rewards' mean; whiten them with "
        "shift_mean=False (only the scale changes, as TRL does)."
    ),
    "ppo_step_temperature_ignored": (
        "Your PPO step recomputes log-probs without the sampling temperature: pass config.temperature to "
        "forward_response (rollout log-probs, reference log-probs and training), so that r = 1 before "
        "the first update."
    ),
    "ppo_step_wrong_order": (
        "Your PPO step does its steps in a different order (or draws a different number of random "
        "numbers) than the stub fixes, so it cannot match the reference: follow the stub's order."
    ),
    "ppo_step_generation_differs": (
        "The responses your PPO step samples differ from the stub's: call policy.generate(queries, "
        "config.max_new_tokens, config.temperature, config.top_p, generator) once, first, with the given "
        "generator (not the global RNG, not a new generator) and the config's temperature and top_p."
    ),
    "ppo_step_scores_wrong": (
        "Your PPO step scores something other than the sampled responses: scores = reward_fn(responses, mask) "
        "on the generated batch."
    ),
    "ppo_step_logp_old_from_reference": (
        "Your logp_old comes from the reference policy; logp_old is the log-prob of the sampled tokens under "
        "the policy itself (before any update), and ref_policy gives only ref_logp, the KL anchor (Book §5.7)."
    ),
    "ppo_step_logp_old_wrong": (
        "The log-probs you store in the buffer (logp_old) are not the policy's no-grad log-probs of the "
        "sampled tokens at the config's temperature, taken before any update (Book §5.7)."
    ),
    "ppo_step_values_wrong": (
        "The values you store (and feed to GAE) are not the policy's value head on the rollout, taken "
        "without gradient before any update."
    ),
    "ppo_step_kl_coef_wrong": (
        "The shaped rewards use a different KL coefficient than kl_ctl.value at the start of the step "
        "(read the controller's value once, before updating it)."
    ),
    "ppo_step_rewards_wrong": (
        "The rewards your PPO step feeds to GAE differ from the stub's: kl_shaped_rewards(scores, logp_old, "
        "ref_logp, mask, kl_ctl.value, config.kl_placement) (KL of logp_old against ref_logp, the config's "
        "placement), then, only if config.whiten_rewards, whiten(rewards, mask, shift_mean=False)."
    ),
    "ppo_step_returns_wrong": (
        "The returns your PPO step stores (the value head's targets) are not compute_gae's returns "
        "(advantages + values, taken before the advantages are whitened): keep them as compute_gae gives "
        "them and whiten only the advantages."
    ),
    "ppo_step_gae_arguments": (
        "Your PPO step calls compute_gae with other arguments than (rewards, values, mask, config.gamma, "
        "config.lam): check the order and that gamma and lam come from the config."
    ),
    "ppo_step_optimizer_steps": (
        "Your PPO step calls optimizer.step() a different number of times than the stub fixes: once after "
        "every gradient_accumulation_steps mini-batches ((i + 1) % gas == 0), for config.ppo_epochs epochs."
    ),
    "ppo_step_minibatch_size": (
        "Your PPO step does not train on mini-batches of config.mini_batch_size sequences from "
        "buf.minibatches(config.mini_batch_size, generator)."
    ),
    "ppo_step_loss_hyperparameters": (
        "Your PPO step passes other hyper-parameters to ppo_loss than the config's: clip_eps=config.cliprange, "
        "clip_range_value=config.cliprange_value, vf_coef=config.vf_coef, ent_coef=config.ent_coef."
    ),
    "ppo_step_kl_controller_not_updated": (
        "Your PPO step never calls kl_ctl.update (once per step, after the updates: the adaptive KL "
        "controller must see this step's KL)."
    ),
    "ppo_step_kl_coef_reported_after_update": (
        "stats['objective/kl_coef'] must be the coefficient used for this step's rewards, read before "
        "kl_ctl.update(...): you report the updated one."
    ),
    "ppo_step_stats_inconsistent": (
        "A returned stat does not agree with what your step actually did (ppo/mean_scores is the mean "
        "reward of the generated batch, objective/kl the mean summed KL of the rollout, the ppo/* means "
        "over all mini-batches of all epochs)."
    ),
    "ppo_step_stats_missing": (
        "Your PPO step does not return all the TRL-named stats the stub lists (float values)."
    ),
    "ppo_step_no_learning": (
        "A short training run with your PPO step does not raise the mean score; check the sign of "
        "the loss and that optimizer.step() is actually reached."
    ),
    "ppo_step_own_pieces_differ": (
        "Your PPO step matches the reference with trusted building blocks, but not with your own "
        "earlier exercises; the difference comes from those modules (see their feedback)."
    ),
    # --- exercise 7, by stage: the first intermediate that departs from the stub's step ---
    "ppo_step_params_outside_optimizer": (
        "Your PPO step changes the weights outside optimizer.step() (by hand, or after the last step); every "
        "update must come from the optimizer on the accumulated, clipped gradient (step 7 of the stub)."
    ),
    "ppo_step_stage_rollout": (
        "Your PPO step first departs from the stub at the rollout: the sampled responses differ. Call "
        "policy.generate(queries, config.max_new_tokens, config.temperature, config.top_p, generator) once, "
        "first, with the given generator (step 1 of the stub)."
    ),
    "ppo_step_stage_scores": (
        "Your PPO step first departs from the stub at the scores: reward_fn(responses, mask) of the generated "
        "batch (step 2 of the stub)."
    ),
    "ppo_step_stage_kl": (
        "Your PPO step first departs from the stub at the KL: the log-probs fed to kl_shaped_rewards differ "
        "(logp_old of the policy and ref_logp of ref_policy, no gradient, at config.temperature; step 3)."
    ),
    "ppo_step_stage_rewards": (
        "Your PPO step first departs from the stub at the shaped rewards fed to GAE (kl_shaped_rewards with "
        "kl_ctl.value and config.kl_placement, then whiten(..., shift_mean=False) only if config.whiten_rewards; "
        "step 4)."
    ),
    "ppo_step_stage_gae": (
        "Your PPO step first departs from the stub at GAE: the advantages or returns differ although the rewards "
        "match (compute_gae(rewards, values, mask, config.gamma, config.lam); step 5)."
    ),
    "ppo_step_stage_whitening": (
        "Your PPO step first departs from the stub at the advantages stored in the buffer: whiten(advantages, "
        "mask) once over the whole rollout, after GAE (step 5)."
    ),
    "ppo_step_stage_losses": (
        "Your PPO step first departs from the stub in the training losses: the rollout matches, but the "
        "mini-batch losses of the K epochs differ (mini-batch order, epochs, ppo_loss arguments or an update "
        "between them; step 7)."
    ),
    "ppo_step_stage_weights": (
        "Your PPO step matches the stub up to every mini-batch loss, yet the weights after the step differ: "
        "look at how the gradients reach optimizer.step() (scaling by gradient_accumulation_steps, zero_grad, "
        "gradient clipping, weights changed outside the optimizer; step 7)."
    ),
    "ex7_needs_ex1": (
        "ex1_ratio is not implemented yet (a stub raises NotImplementedError) and exercise 7 uses it: your step "
        "itself may be fine. Finish ex1_ratio; the graded step also runs with trusted pieces."
    ),
    "ex7_needs_ex2": (
        "ex2_clipped_loss is not implemented yet (a stub raises NotImplementedError) and exercise 7 uses it: your step "
        "itself may be fine. Finish ex2_clipped_loss; the graded step also runs with trusted pieces."
    ),
    "ex7_needs_ex3": (
        "ex3_full_loss is not implemented yet (a stub raises NotImplementedError) and exercise 7 uses it: your step "
        "itself may be fine. Finish ex3_full_loss; the graded step also runs with trusted pieces."
    ),
    "ex7_needs_ex4": (
        "ex4_gae is not implemented yet (a stub raises NotImplementedError) and exercise 7 uses it: your step "
        "itself may be fine. Finish ex4_gae; the graded step also runs with trusted pieces."
    ),
    "ex7_needs_ex5": (
        "ex5_rollout_buffer is not implemented yet (a stub raises NotImplementedError) and exercise 7 uses it: your step "
        "itself may be fine. Finish ex5_rollout_buffer; the graded step also runs with trusted pieces."
    ),
    "ex7_needs_ex6": (
        "ex6_kl_reward is not implemented yet (a stub raises NotImplementedError) and exercise 7 uses it: your step "
        "itself may be fine. Finish ex6_kl_reward; the graded step also runs with trusted pieces."
    ),
}
