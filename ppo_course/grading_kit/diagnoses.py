"""Diagnosis ids and the plain-words message a student can act on (student side).

A *diagnosis* names a known mistake; the feedback of `ppo-course check` and of
the hidden graders reports the id and the message below. The ids are stable:
the mistake catalogue, the class report and the feedback all use them, so never
rename or remove one (add new ones freely). The instructor side re-exports this
table as `grader.mistakes.diagnose.DIAGNOSES`; it lives here because the student bundle
ships `ppo_course` but not `grader`. Messages are generic hints and hold no
hidden input or expected value.

Sources: Book eq. 5.1, 5.2, 5.9, 5.13, 5.20, §5.5-5.8 (chapter 5 · PPO) and the
contract's tensor conventions.
"""

from __future__ import annotations

# id -> message a student can act on. Messages say what the code did and what
# the book / contract asks for instead, without revealing any hidden input.
DIAGNOSES: dict[str, str] = {
    # --- exercise 1: log-probs and the ratio (Book §5.7, eq. 5.18-5.20) ---
    "ratio_in_probability_space": (
        "Your ratio divides probabilities (exp(logp_new) / exp(logp_old)); with log-probs "
        "around -1000 both underflow to 0 and you get NaN. Compute exp(logp_new - logp_old) "
        "in log space (Book eq. 5.20)."
    ),
    "log_of_softmax": (
        "You take log(softmax(logits)); for large logits softmax underflows to 0 and the log "
        "gives -inf. Use torch.log_softmax (or logits - logsumexp) before gathering (Book §5.7.3)."
    ),
    "logprobs_misaligned": (
        "Your log-probs are shifted by one position: logits[:, t] already produced tokens[:, t] "
        "(the inputs are aligned), so gather at the same t without shifting."
    ),
    "ratio_inverted": (
        "Your ratio is inverted: r = pi_new / pi_old = exp(logp_new - logp_old), not "
        "exp(logp_old - logp_new) (Book eq. 5.20)."
    ),
    "ratio_detached": (
        "No gradient reaches logp_new: the ratio was detached (.detach(), .item(), torch.no_grad "
        "or a numpy round trip). The loss must be differentiable in logp_new (Book eq. 5.9)."
    ),
    "softmax_wrong_dim": (
        "Your log-softmax normalises over the wrong dimension: normalise over the vocabulary "
        "(the last dimension, V) and gather the token's entry."
    ),
    "ratio_clamped": (
        "Your ratio clamps the log-ratio (e.g. to [-20, 20]) before exp; r = exp(logp_new - logp_old) "
        "exactly: the PPO clip acts on r itself (Book eq. 5.1), and log space already avoids overflow."
    ),
    # --- exercise 2: the clipped surrogate (Book eq. 5.1, 5.9) ---
    "max_instead_of_min": (
        "You take the max of the clipped and unclipped terms; PPO's bound is pessimistic: "
        "min(r*A, clip(r, 1-eps, 1+eps)*A) (Book eq. 5.1)."
    ),
    "clipped_advantage": (
        "You clip the advantage (or the product r*A) instead of the ratio: clip r to "
        "[1-eps, 1+eps] and then multiply by A (Book eq. 5.1)."
    ),
    "loss_sign_flipped": (
        "The sign of your loss is flipped: eq. 5.1 is an objective to maximise, so the loss "
        "to minimise is its negative, -masked_mean(min(...))."
    ),
    "per_row_mean": (
        "You average each row first and then average the rows; the contract's masked mean is "
        "token-level: the sum over all real tokens of the batch / the number of real tokens."
    ),
    "per_row_sum": (
        "You sum each row and average the sums over rows (no division by the number of real "
        "tokens); the masked mean is the sum over all real tokens / their number."
    ),
    "padding_in_mean": (
        "Padding positions enter your mean (a plain .mean(), or the sum divided by B*T). "
        "Average over real tokens only: sum(x*mask) / sum(mask)."
    ),
    "wrong_clip_bounds": (
        "Your clip bounds are wrong: clip r to [1 - clip_eps, 1 + clip_eps] and use the "
        "clip_eps argument rather than a hard-coded 0.2 (Book eq. 5.1)."
    ),
    "ignores_hyperparameter": (
        "A hyper-parameter argument is ignored: your result does not change when it is passed "
        "with a non-default value. Use the argument, not a hard-coded default."
    ),
    # --- exercise 3: value loss, entropy, full loss (Book eq. 5.2) ---
    "value_loss_min_instead_of_max": (
        "Your clipped value loss takes the min of the two squared errors; like TRL it must take "
        "the max (the pessimistic choice) of (V-R)^2 and (V_clipped-R)^2."
    ),
    "value_clip_around_returns": (
        "Your value loss is effectively unclipped: either there is no clip, or the clip is around "
        "the returns (which changes nothing). Clip around the OLD values: "
        "V_clipped = V_old + clip(V - V_old, -c, c)."
    ),
    "value_loss_half_factor": (
        "Your value loss has a factor 1/2 (as TRL writes it); the contract follows the book's "
        "eq. 5.2 without the 1/2: masked_mean(max((V-R)^2, (V_clipped-R)^2))."
    ),
    "value_loss_unclipped": (
        "Your value loss is not clipped: use max((V-R)^2, (V_old + clip(V-V_old, -c, c) - R)^2)."
    ),
    "entropy_sign": (
        "The entropy term has the wrong sign: entropy is -sum p log p (positive), and the loss "
        "SUBTRACTS ent_coef * entropy so that minimising the loss rewards spread-out policies "
        "(Book eq. 5.2)."
    ),
    "entropy_unmasked": (
        "Your entropy averages over padding positions too; take the masked mean over real tokens."
    ),
    "entropy_unstable": (
        "Your entropy is not numerically stable (NaN/inf for large logits or near-one-hot "
        "distributions): compute p from softmax and log p from log_softmax, never log(softmax)."
    ),
    "vf_coef_wrong": (
        "The value loss or the entropy enters the total with the wrong coefficient (swapped, or "
        "missing): loss = policy loss + vf_coef * value loss - ent_coef * entropy (Book eq. 5.2)."
    ),
    "entropy_from_sampled_token": (
        "Your entropy bonus uses -logp of the sampled tokens; the bonus is the entropy of the whole "
        "distribution, -sum_v p_v log p_v, from the logits (entropy_from_logits)."
    ),
    "approx_kl_wrong": (
        "stats['approx_kl'] is not TRL's definition: the masked mean of 0.5 * (logp_new - logp_old)^2."
    ),
    "clipfrac_wrong": (
        "stats['clipfrac'] is wrong: it is the masked mean of [A*clip(r, 1-eps, 1+eps) < A*r], "
        "the fraction of real tokens where the clip binds (TRL's pg_losses2 > pg_losses)."
    ),
    "stats_not_floats": (
        "stats values must be plain Python floats (use float(x) or x.item())."
    ),
    # --- exercise 4: GAE and whitening (Book §5.5, §5.7) ---
    "gae_bootstraps_from_padding": (
        "Your GAE reads V (or A) past a row's last real token; the response ends there, so treat "
        "V and A beyond it as 0 (nothing is bootstrapped from padding, even without EOS)."
    ),
    "gae_ignores_mask": (
        "Your GAE ignores the mask: it runs the recursion through the padding, so the padding rewards "
        "flow back into the real advantages and the last real token bootstraps from a padding value. "
        "Treat r, V and A past each row's last real token as 0 (multiply by the mask, Book §5.5)."
    ),
    "gae_wrong_timestep": (
        "Your TD error uses the wrong time step: delta_t = r_t + gamma*V_{t+1} - V_t "
        "(the NEXT value, the CURRENT reward)."
    ),
    "gae_runs_forward": (
        "Your GAE recursion runs forward in time; it must run backward: "
        "A_t = delta_t + gamma*lambda*A_{t+1}, from the last token to the first."
    ),
    "gae_missing_gamma": (
        "gamma is missing from your GAE: use it both in delta_t (gamma*V_{t+1}) and in the "
        "recursion (gamma*lambda*A_{t+1})."
    ),
    "gae_shifted_by_one": (
        "Your advantages are shifted by one position: A_t holds A_{t+1} (and the last real token 0), as when "
        "the loop stores the running advantage before updating it. Update first: A_t = delta_t + "
        "gamma*lambda*A_{t+1}, then store it at t (Book §5.5)."
    ),
    "gae_missing_lambda": (
        "lambda is missing from your GAE recursion: A_t = delta_t + gamma*lambda*A_{t+1}."
    ),
    "returns_not_a_plus_v": (
        "Your returns are not advantages + values (the critic's target is A_t + V_t)."
    ),
    "gae_not_detached": (
        "Gradient flows through your advantages or returns; compute them without grad "
        "(torch.no_grad() or .detach()): they are constants for the losses."
    ),
    "whiten_biased_variance": (
        "Your whitening uses the biased variance (divide by n); use the unbiased one "
        "(divide by n-1), as TRL's masked_var does."
    ),
    "whiten_padding_in_stats": (
        "Padding positions enter your whitening statistics; compute the mean and variance "
        "over real tokens only."
    ),
    "whiten_shift_mean_ignored": (
        "shift_mean=False must add the mean back: return (x - mean)/std + mean."
    ),
    "whiten_no_error_for_one_element": (
        "whiten must raise ValueError when the mask selects fewer than 2 elements (the unbiased "
        "variance is undefined)."
    ),
    "whiten_missing_eps": (
        "Whiten with sqrt(var + 1e-8), as the contract (and TRL) does, not sqrt(var) or var + eps "
        "outside the root."
    ),
    # --- exercise 5: the rollout buffer (Book eq. 5.13, §5.5) ---
    "buffer_add_during_train": (
        "Your buffer accepts add() in the train phase; raise RuntimeError: the data of one cycle "
        "must stay fixed while training on it (Book §5.5)."
    ),
    "buffer_minibatches_during_collect": (
        "Your buffer yields mini-batches in the collect phase; raise RuntimeError until "
        "start_training() has been called."
    ),
    "buffer_use_after_purge": (
        "Purged data can still be used: after purge() the buffer must be empty and back in "
        "the collect phase, and an iterator made before the purge must raise RuntimeError "
        "when advanced (stale data breaks the clip, Book §5.5)."
    ),
    "buffer_wrong_minibatch_order": (
        "Your mini-batch order differs: perm = torch.randperm(len(buf), generator=generator), then "
        "consecutive chunks perm[i:i+mini_batch_size] (the last may be smaller)."
    ),
    "buffer_aliases_inputs": (
        "Your buffer stores the caller's tensors themselves; store copies so that later changes "
        "to the caller's tensors do not change the buffer."
    ),
    "buffer_wrong_length": (
        "len(buffer) must be the number of sequences stored (rows over all add() calls)."
    ),
    "buffer_no_validation": (
        "Your buffer accepts inconsistent adds (different batch sizes, keys or trailing shapes) "
        "or an empty add(); raise ValueError."
    ),
    "buffer_start_training_empty": (
        "start_training() on an empty buffer (or outside the collect phase) must raise RuntimeError."
    ),
    # --- exercise 6: KL and shaped rewards (Book §5.6, §5.7) ---
    "kl_wrong_direction": (
        "Your KL is reversed: the per-token estimate is logp - ref_logp (policy minus reference)."
    ),
    "kl_wrong_estimator": (
        "Your per-token KL uses another estimator (e.g. GRPO's k3 = exp(r) - r - 1); the contract's is "
        "k1 = logp - ref_logp (TRL's default kl_penalty='kl')."
    ),
    "kl_unmasked": (
        "Your per-token KL is not 0 on padding; multiply by the mask."
    ),
    "score_on_padding": (
        "The score is placed on a padding position; put it on each row's LAST REAL token "
        "(mask.sum(1) - 1), not at index T-1."
    ),
    "score_on_every_token": (
        "The score is added to every token; it belongs on the last real token only."
    ),
    "score_on_first_token": (
        "The score is placed on the first token; it belongs on each row's last real token."
    ),
    "last_token_sum_instead_of_mean": (
        "With placement='last_token' the penalty uses the MEAN of the row's KL over real tokens "
        "(R = r_RM - 0.05 x mean_KL, Book §5.6), not the sum."
    ),
    "kl_penalty_sign": (
        "The KL penalty has the wrong sign (added, or computed from ref_logp - logp): rewards get "
        "-kl_coef * (logp - ref_logp); the penalty is subtracted."
    ),
    "adaptive_kl_no_clip": (
        "The adaptive controller must clip the proportional error: e = clip(kl/target - 1, -0.2, 0.2)."
    ),
    "adaptive_kl_wrong_update": (
        "The adaptive controller's update is wrong: value <- value * (1 + e * n_steps / horizon), "
        "with e = clip(current_kl / target - 1, -0.2, 0.2) (TRL's AdaptiveKLController)."
    ),
    "rewards_not_zero_on_padding": (
        "kl_shaped_rewards must be exactly 0 on padding positions: mask the per-token KL before using "
        "it (an unmasked KL leaks the padding's junk into the rewards, and into the row mean for "
        "placement='last_token')."
    ),
    "buffer_inconsistent_fields": (
        "add() must raise ValueError when a call of the same cycle has other keys, trailing shapes or "
        "dtypes than the first one (the fields of one rollout must stack into one tensor each)."
    ),
    "buffer_bad_minibatch_size": (
        "minibatches(mini_batch_size) must raise ValueError for a size below 1 (or not an int), when called."
    ),
    "buffer_errors_not_at_call": (
        "minibatches() must raise its errors when it is CALLED (validate before returning the iterator), "
        "not at the first next(): write it as a normal method that checks, then returns a generator."
    ),
    "buffer_keeps_graph": (
        "add() stores tensors that still carry the caller's autograd graph; store detached copies "
        "(value.detach().clone())."
    ),
    # --- exercise 7: the PPO step (Book fig. 5.1, §5.8) ---
    "ppo_step_no_advantage_whitening": (
        "Your PPO step does not whiten the advantages before the updates (TRL whitens them "
        "to zero mean and unit variance, Book §5.6)."
    ),
    "ppo_step_no_grad_clip": (
        "Your PPO step does not clip the gradient norm (max_grad_norm) before optimizer.step()."
    ),
    "ppo_step_no_accumulation_scaling": (
        "Your PPO step does not divide the loss by gradient_accumulation_steps before backward(); "
        "one optimizer step must average over the accumulated mini-batches."
    ),
    "ppo_step_no_purge": (
        "Your PPO step does not purge the buffer at the end (collect -> train -> purge, Book §5.5)."
    ),
    "ppo_step_accumulation_broken": (
        "Your PPO step zeroes the gradients inside an accumulation group (only the last mini-batch "
        "counts): call optimizer.zero_grad() only after each optimizer.step()."
    ),
    "ppo_step_logp_old_recomputed": (
        "Your PPO step recomputes logp_old from the live policy during training, which resets the "
        "ratio to 1 and disables the clip; logp_old is stored once at rollout time (Book §5.7)."
    ),
    "ppo_step_wrong_epochs": (
        "Your PPO step runs a different number of epochs over the rollout than config.ppo_epochs."
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
    # --- exercise 7, by stage: the first intermediate that departs from the stub's step (issue 21, item 13) ---
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
    # --- any exercise ---
    "advantages_renormalised": (
        "Your loss standardises the advantages again over its mini-batch (SB3's normalize_advantage); "
        "use them as given: the PPO step whitens them once over the whole rollout."
    ),
    "surrogate_not_clipped": (
        "Your surrogate does not clip the ratio at all (a plain -mean(r*A)); eq. 5.1 takes "
        "min(r*A, clip(r, 1-eps, 1+eps)*A)."
    ),
    "gradient_into_constants": (
        "Gradient flows into advantages, returns, logp_old or old_values; they are constants for "
        "the loss: use .detach() on them (Book eq. 5.9 differentiates through the ratio only)."
    ),
    "placement_ignored": (
        "kl_shaped_rewards ignores `placement`: 'per_token' spreads -kl_coef*kl over every real "
        "token (plus the score on the last one); 'last_token' puts score - kl_coef*mean_kl on the "
        "last real token only."
    ),
    "grader_error": (
        "The grader itself failed on this test (not your fault); your instructor will look at it."
    ),
    "wrong_type": (
        "The function returned the wrong kind of value (see the docstring for what it returns)."
    ),
    "modifies_input": (
        "Your function modifies one of its inputs in place (e.g. x[mask == 0] = 0, x.mul_(...)); "
        "work on a copy."
    ),
    "wrong_dtype": (
        "The output dtype is wrong: it must follow the data tensors (float32 in -> float32 out, "
        "float64 in -> float64 out), never the mask's dtype."
    ),
    "wrong_device": (
        "The output is on a different device than the inputs; create new tensors with "
        "device=x.device (e.g. torch.zeros_like)."
    ),
    "wrong_shape": (
        "The output has the wrong shape; see the docstring for the expected shape."
    ),
    "not_scalar": (
        "A loss must be a 0-dim tensor (a scalar), not a [B, T] tensor or a Python float."
    ),
    "mask_dtype_unsupported": (
        "Your code fails for bool (or int) masks; convert with mask.to(x.dtype) before arithmetic."
    ),
    "not_finite": (
        "Your output holds NaN or inf where the exact answer is finite; use a numerically stable "
        "formulation (log space, log_softmax)."
    ),
    "not_implemented": (
        "This function is not implemented yet (it raises NotImplementedError)."
    ),
    "missing_name": (
        "The module does not define a name the exercise asks for (check the spelling)."
    ),
    "module_missing": (
        "This exercise's module file is not in the submission."
    ),
    "module_broken": (
        "This exercise's module cannot be imported (syntax error or an exception at import time)."
    ),
    "missing_documented_error": (
        "The docstring promises a ValueError for this malformed call (e.g. mismatched shapes); your "
        "function accepted it or raised another error. Check the shapes first and raise ValueError."
    ),
    "iterator_ended_early": (
        "Your iterator ended (StopIteration) where the docstring asks for another item or an error; "
        "check when your generator returns."
    ),
    "raises_error": (
        "Your code raised an exception on a valid input."
    ),
    "out_of_memory": (
        "Your code tried to allocate more memory than the grader allows (e.g. a [B, T, V, V] tensor or a "
        "dense one-hot in float64); work with [B, T, V] at most and gather instead of building one-hots."
    ),
    "timeout": (
        "Your code ran past the time limit (an infinite loop, or a very slow implementation)."
    ),
    "wrong_signature": (
        "A function's parameters differ from the stub's (an extra required parameter, a missing or "
        "renamed one, or a missing default), so it was not run; keep the stub's signature."
    ),
    "prints_too_much": (
        "Your code printed more than 32 MiB while one test ran (a print in a loop?), so it was "
        "stopped; remove debug prints."
    ),
    "crash": (
        "The process running your code was stopped: it crashed, ran out of memory or hit the CPU-time "
        "limit (an endless loop?); after repeated failures the remaining calls of this exercise are "
        "not run."
    ),
    "wrong_value": (
        "Wrong value, and it matches none of the known mistakes: compare your code with the "
        "formula in the exercise docstring."
    ),
}



def message(diagnosis_id: str) -> str:
    """The student-facing message for a diagnosis id.

    Raises:
        KeyError: if `diagnosis_id` is not a known id (a typo in a grader is a bug).
    """
    try:
        return DIAGNOSES[diagnosis_id]
    except KeyError:
        raise KeyError(
            f"unknown diagnosis id {diagnosis_id!r}; the known ids are the keys of DIAGNOSES "
            "in ppo_course/grading_kit/diagnoses.py"
        ) from None


def describe(diagnosis_id: str) -> str:
    """`"[id] message"`, the one-line form used in feedback."""
    return f"[{diagnosis_id}] {message(diagnosis_id)}"
