"""My helpers."""
import torch


def masked_mean(x, mask):
    real = mask.bool()
    return torch.where(real, x, torch.zeros((), dtype=x.dtype, device=x.device)).sum() / real.sum()
