"""Buggy: torch.where(mask, ...) with the mask as given.

torch.where needs a bool condition: this works for bool masks and raises
RuntimeError for the int and float masks the contract also accepts.
"""
EXERCISE = "ex6_kl_reward"
DIAGNOSIS = "mask_dtype_unsupported"
DESCRIPTION = "per_token_kl calls torch.where(mask, kl, 0): raises for int and float masks"
SEEN_IN = "classroom mistake (torch.where requires a bool condition)"

import torch


def per_token_kl(logp, ref_logp, mask):
    kl = (logp - ref_logp).detach()
    return torch.where(mask, kl, torch.zeros_like(kl))
