"""When several known mistakes fit a failing example: tell them apart on a rich fixed probe (hidden graders).

A small failing example often cannot tell two catalogued mistakes apart (a
1×1 batch cannot tell a max from a min; swapped clip bounds and a clipped
product both stop the gradient where r·Â is large). `disambiguate` (outputs)
and `disambiguate_grads` (gradients) then run the student's function, the
reference and the matching variants of `grader.mistakes.buggy_variants` once more on
`probe_args`'s rich input with the same hyper-parameters and keep the first
variant that still matches, so that a mistake gets its own name. Trusted code:
it runs in the grading process, the student's function through the provider.
"""

from __future__ import annotations

import inspect

import torch

from grader.mistakes import buggy_variants
from grader.hidden.calls import reference_call, reference_grads, student_grads
from ppo_course.grading_kit.feedback import matching
from ppo_course.grading_kit.public_probe import LENGTHS, PADDED_LENGTHS  # the row lengths both probes share




def probe_args(name: str, dtype: torch.dtype, mask_dtype: torch.dtype, *,
               padded: bool = False) -> tuple[tuple, torch.Tensor] | None:
    """(args, bool mask) of a rich fixed input for `name`: 4 rows of 7 tokens with lengths (7, 1, 4, 6),
    both signs of Â, ratios on both sides of the clip, junk at padding, in the failing call's dtypes.
    Used to tell apart known mistakes that coincide on a small example; None without a probe.
    ``padded``: the same tensors under the mask of `PADDED_LENGTHS` (no full row: for a function that
    raises on a full row, the probe it can run)."""
    g = torch.Generator().manual_seed(20261130)
    B, T, V = 4, 7, 5
    m = torch.arange(T)[None, :] < torch.tensor(LENGTHS)[:, None]  # (B, T) bool
    if padded:
        mask_m = torch.arange(T)[None, :] < torch.tensor(PADDED_LENGTHS)[:, None]
    else:
        mask_m = m
    mask = mask_m.to(mask_dtype)

    def data(scale=1.0, shift=0.0):
        x = torch.randn(B, T, generator=g, dtype=torch.float64) * scale + shift
        junk = (torch.rand(B, T, generator=g, dtype=torch.float64) * 2 - 1) * 20
        return torch.where(m, x, junk).to(dtype)

    logp_old = -data().abs() - 0.1
    logp_new = logp_old + data(0.5)
    logits = (torch.randn(B, T, V, generator=g, dtype=torch.float64) * 2).to(dtype)
    table = {
        "logprobs_from_logits": lambda: (logits, torch.randint(0, V, (B, T), generator=g)),
        "probability_ratio": lambda: (logp_new, logp_old),
        "clipped_surrogate_loss": lambda: (logp_new, logp_old, data(), mask),
        "clipped_value_loss": lambda: (data(), data(), data(), mask),
        "entropy_from_logits": lambda: (logits, mask),
        "ppo_loss": lambda: (logp_new, logp_old, data(), data(), data(), data(), logits, mask),
        "compute_gae": lambda: (data(), data(), mask),
        "whiten": lambda: (data(2.0, 1.0), mask),
        "per_token_kl": lambda: (logp_new, logp_old, mask),
        "kl_shaped_rewards": lambda: (torch.randn(B, generator=g, dtype=torch.float64).to(dtype), logp_new,
                                      logp_old, mask),
    }
    return (table[name](), mask_m) if name in table else None


def probe_like(reference, name: str, args: tuple, kwargs: dict | None, *, padded: bool = False):
    """(probe args, bool mask, the call's hyper-parameters) of `probe_args` in the failing call's dtypes, or None
    (``padded``: `probe_args`'s every-row-padded form)."""
    bound = inspect.signature(getattr(reference, name)).bind(*args, **(kwargs or {}))
    tensors = [v for v in bound.arguments.values() if isinstance(v, torch.Tensor) and v.is_floating_point()]
    given_mask = bound.arguments.get("mask")
    probe = probe_args(name, tensors[0].dtype if tensors else torch.float64,
                       given_mask.dtype if isinstance(given_mask, torch.Tensor) else torch.bool, padded=padded)
    if probe is None:
        return None
    extra = {k: v for k, v in bound.arguments.items() if not isinstance(v, torch.Tensor)}  # hyper-parameters
    return probe[0], probe[1], extra


def disambiguate(first: str, student, reference, name, got_part, want, candidates, args, kwargs, pick,
                 variant_pick, rtol, atol, mask) -> str:
    """When several known mistakes match a failing example, keep the first that also matches on a rich probe
    (same hyper-parameters); a small example often cannot tell, e.g., a max from an ignored clip_eps."""
    ids = matching(got_part, want, candidates, mask, rtol, atol)
    if len(ids) < 2:
        return first
    probe = probe_like(reference, name, args, kwargs)
    if probe is None:
        return first
    probe_call, probe_mask, extra = probe
    try:
        got2 = pick(getattr(student, name)(*probe_call, **extra))
        want2 = pick(reference_call(reference, name, probe_call, extra))
    except Exception:  # the student's code fails on the probe: keep the first diagnosis
        return first
    cands2 = [(d, c) for d, c in buggy_variants.candidates(name, probe_call, extra,
                                                           signature_of=getattr(reference, name), pick=variant_pick)
              if d in ids]
    ids2 = matching(got2, want2, cands2, probe_mask if mask is not None else None, rtol, atol)
    return ids2[0] if ids2 else first


def disambiguate_grads(first: str, student, reference, name, got, want, candidates, args, kwargs, param,
                       grad_output, rtol, atol, mask) -> str:
    """`disambiguate` for a gradient: when several known mistakes give the failing example's gradient, keep the
    first that also gives the student's gradient on the rich probe (same hyper-parameters). A small example
    often cannot tell them apart (swapped clip bounds and a clipped product both stop the gradient where
    r·Â is large)."""
    ids = matching(got, want, candidates, mask, rtol, atol)
    if len(ids) < 2 or name not in buggy_variants.VARIANTS:
        return first
    probe = probe_like(reference, name, args, kwargs)
    if probe is None:
        return first
    probe_call, probe_mask, extra = probe
    g_out = None
    if grad_output is not None:  # an upstream gradient of the probe's output shape ([B, T] outputs)
        g_out = torch.linspace(-1.0, 1.0, probe_mask.numel(), dtype=grad_output.dtype).reshape(probe_mask.shape)
    try:
        _, got2 = student_grads(student, name, probe_call, extra, (param,), g_out, name)
        want2 = reference_grads(reference, name, probe_call, extra, (param,), g_out)[param]
    except Exception:  # the student's code fails on the probe: keep the first diagnosis
        return first
    got2 = got2.get(param)
    if want2 is None or got2 is None:
        return first
    cands2 = [(d, c) for d, c in buggy_variants.grad_candidates(name, probe_call, extra,
                                                                signature_of=getattr(reference, name), wrt=param,
                                                                grad_output=g_out) if d in ids]
    ids2 = matching(got2, want2, cands2, probe_mask if mask is not None else None, rtol, atol)
    return ids2[0] if ids2 else first
