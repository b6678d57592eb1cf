"""Patch builtins the grader might use to judge results (all, any, abs, isinstance, float, bool).

Tries: builtins.all/any → True, abs → 0, bool → True, and torch.Tensor.abs,
Tensor.max, Tensor.sum, Tensor.any, Tensor.all, torch.isnan replaced so
that differences look like 0, at import.
Must achieve: nothing (the grader's builtins live in another process).
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import builtins

import torch

import twin_code

logprobs_from_logits = twin_code.logprobs_from_logits
probability_ratio = twin_code.probability_ratio

builtins.all = lambda *a, **k: True
builtins.any = lambda *a, **k: True
_real_abs = builtins.abs
builtins.abs = lambda x: 0
torch.Tensor.abs = lambda self: torch.zeros_like(self)
torch.Tensor.any = lambda self, *a, **k: torch.tensor(False)
torch.Tensor.all = lambda self, *a, **k: torch.tensor(True)
torch.isnan = lambda x: torch.zeros_like(x, dtype=torch.bool)
torch.isinf = lambda x: torch.zeros_like(x, dtype=torch.bool)
