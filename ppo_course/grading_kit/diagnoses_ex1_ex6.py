"""Diagnosis ids of exercises 1-6 and their plain-words messages (student side).

Part of the one table `ppo_course.grading_kit.diagnoses.DIAGNOSES` (see its docstring for the rules:
stable ids, generic hints, no hidden input or expected value), split by exercise to keep each module
short: exercises 1-6 here, exercise 7 in `diagnoses_ex7`, the ids of any exercise in `diagnoses`.

Sources: Book eq. 5.1, 5.2, 5.9, 5.13, 5.20, §5.5-5.7 (chapter 5 · PPO) and the contract's tensor conventions.
"""

from __future__ import annotations

# id -> message a student can act on (what the code did and what the book / contract asks for instead).
EX1_TO_EX6: dict[str, str] = {
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
    "logprobs_negated": (
        "Your log-probabilities have the wrong sign: cross_entropy / nll_loss return the NEGATIVE log-likelihood "
        "-log pi(token). Return log pi itself: log_softmax over the vocabulary, gathered at the tokens (<= 0)."
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
        "Average over real tokens only: their sum / their number, with torch.where(mask, x, 0) rather than "
        "x * mask (junk such as NaN in the padding survives a multiplication by 0)."
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
    "value_clip_uses_clip_eps": (
        "ppo_loss clips the value with the policy's clip_eps; the value clip has its own range, "
        "clip_range_value (both 0.2 by default, so only other values show it): pass clip_range_value to the value loss."
    ),
    "value_clip_old_values_not_added": (
        "Your clipped value is clip(V - V_old, -c, c) alone: add the old value back, "
        "V_clipped = V_old + clip(V - V_old, -c, c), so that the new value stays within c of V_old (Book eq. 5.2)."
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
    "entropy_mean_over_vocab": (
        "Your entropy is divided by the vocabulary size: H = -sum_v p_v log p_v SUMS over the vocabulary "
        "(.sum(-1), not .mean(-1)); only the tokens are averaged (the masked mean)."
    ),
    "value_loss_detached": (
        "No gradient reaches the values through your ppo_loss: its value-loss term is computed on detached "
        "values (.detach(), .item() or torch.no_grad()). Only old_values and returns are constants; the critic "
        "learns through vf_coef * value loss (Book eq. 5.2)."
    ),
    "entropy_detached": (
        "No gradient reaches the logits through your ppo_loss's entropy term: it is computed on detached "
        "logits (.detach() or torch.no_grad()), so the entropy bonus does nothing in training (Book eq. 5.2)."
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
    "gae_lambda_in_td_error": (
        "Your TD error discounts V_{t+1} by lambda: delta_t = r_t + gamma*V_{t+1} - V_t uses gamma; lambda only "
        "enters the recursion A_t = delta_t + gamma*lambda*A_{t+1}."
    ),
    "gae_skips_last_step": (
        "Your backward loop never visits the last time step (range(T - 1) instead of range(T)): a row whose last "
        "real token is the tensor's last position gets A = 0 there, and its TD error is missing from every "
        "earlier advantage. Run t from T-1 down to 0 (Book §5.5)."
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
    "buffer_drops_last_minibatch": (
        "The last, smaller mini-batch is missing: yield every chunk perm[i:i+mini_batch_size] in order, "
        "the last may be smaller (no drop_last: its sequences would never be trained on)."
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
    "last_token_batch_mean": (
        "With placement='last_token' each row's penalty uses THAT row's mean KL over its own real tokens "
        "(R = r_RM - 0.05 x mean_KL, Book §5.6); you used one mean over the whole batch for every row."
    ),
    "last_token_keeps_per_token_penalty": (
        "With placement='last_token' only each row's last real token is non-zero (score - kl_coef x the row's mean "
        "KL, Book §5.6); your rewards also keep the per-token penalties -kl_coef x kl_t, so the KL is charged twice."
    ),
    "last_token_of_full_row": (
        "A row with no padding (a truncated response) has its last real token at the last column, mask.sum(1) - 1; "
        "your code finds it from the first padding position, which such a row lacks, and puts the score (and the "
        "last_token penalty) on token 0."
    ),
    "score_replaces_kl_penalty": (
        "On the last real token the reward is the score PLUS that token's KL penalty (score - kl_coef * kl_t); "
        "you wrote the score over the penalty (scatter for scatter_add, = for +=)."
    ),
    "kl_penalty_sign": (
        "The KL penalty has the wrong sign (added, or computed from ref_logp - logp): rewards get "
        "-kl_coef * (logp - ref_logp); the penalty is subtracted."
    ),
    "adaptive_kl_clip_one_sided": (
        "The controller clips its error kl/target - 1 on one side only: clip it to [-0.2, 0.2], both ways, "
        "so that a KL far below the target cannot shrink beta faster than a KL far above it grows it (TRL)."
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
    "buffer_stores_no_rows": (
        "Your mini-batches do not hold the sequences that were added (no row at all, or a field's row that no add() "
        "gave): add() must keep every row of every field, and minibatches() yield them (Book §5.5)."
    ),
    "buffer_keeps_graph": (
        "add() stores tensors that still carry the caller's autograd graph; store detached copies "
        "(value.detach().clone())."
    ),
    # --- parametrised families (a fitted parameter; the feedback's finding names its value) ---
    "hyperparameter_value_wrong": (
        "Your code uses another value of a hyper-parameter (clip_eps, clip_range_value, vf_coef, ent_coef, "
        "gamma, lam or kl_coef) than the one passed: the finding says which and the value that fits your "
        "output. Use the argument, never a constant of your own."
    ),
    "wrong_reduction": (
        "Your loss reduces its per-token terms another way than the token-level masked mean "
        "(sum over real tokens / number of real tokens, Book eq. 5.1); the finding says which."
    ),
    "off_by_one_token": (
        "A quantity is one token off: it lands at position t-1 or t+1 instead of t (the finding says "
        "which); check the index where it is stored or read."
    ),
    "gae_no_bootstrap": (
        "Your GAE drops the bootstrap term: delta_t = r_t + gamma*V_{t+1} - V_t, with V = 0 past each row's "
        "last real token (Book §5.5)."
    ),
    "whiten_per_row": (
        "Your whitening takes the mean and variance per row; whiten over the real tokens of the whole "
        "batch at once (Book §5.5)."
    ),
}
