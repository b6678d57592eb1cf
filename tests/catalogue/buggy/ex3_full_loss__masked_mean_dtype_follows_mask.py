"""Buggy: the given masked_mean rewritten as (x * mask).sum() / mask.sum(), so a float64 mask beside float32 data
gives float64 losses (found by the lead while closing unseen6's x16, the same habit in exercise 2).

Clause broken: “Output dtype follows the data tensors, never the mask” (CONTRACT.md)
Graded as: mask_dtype_unsupported (landing 10's grader gave full marks).
"""
import torch

EXERCISE = "ex3_full_loss"
DIAGNOSIS = "mask_dtype_unsupported"
DESCRIPTION = "masked_mean is (x * mask).sum() / mask.sum(): the loss takes a float64 mask's dtype beside float32 data"
SEEN_IN = "the x*mask masked-mean habit (TRL's masked_mean), found beside unseen6's x16"


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum() / mask.sum()
