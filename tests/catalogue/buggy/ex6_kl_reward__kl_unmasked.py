"""Buggy: per-token KL is not zeroed on padding."""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "kl_unmasked"
DESCRIPTION = "per_token_kl returns logp - ref_logp everywhere: padding junk is not zeroed"
SEEN_IN = "huggingface/trl#6803 (objective/kl sums padding positions); radixark/miles#1383 (unmasked KL leaks into returns)"
ALSO = "rewards_not_zero_on_padding"  # the unmasked KL reaches the padding of the rewards

import torch


def per_token_kl(logp, ref_logp, mask):
    return (logp - ref_logp).detach()
