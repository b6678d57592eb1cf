"""Known buggy variants of the exercise functions, as small trusted functions.

When a student's output differs from the reference, the hidden graders
evaluate these variants on the same input; a variant whose output matches the
student's names the mistake (its key is a diagnosis id of
`grader/mistakes/diagnose.py`). Each variant takes exactly the arguments of the
function it mimics and is written the way the mistake is usually made, so the
numbers (including NaN/inf) come out the same.

`VARIANTS[function_name]` is an ordered list of (diagnosis id, variant); the
first match wins, so more specific mistakes come first. The variants themselves are
in `variants_ex1_ex3` and `variants_ex4_ex6` (the adaptive KL controller's, which
are values after updates, not functions, in the latter); this module is the lookup.

Sources: Book eq. 5.1, 5.2, 5.9, 5.20, §5.5-5.7; TRL 0.11 `trl/core.py` and
`PPOTrainer` for the placements and the adaptive KL controller.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import torch

from grader.mistakes.variants_ex1_ex3 import (CSL_VARIANTS, CVL_VARIANTS, ENTROPY_VARIANTS, LOGPROBS_VARIANTS,
                                              PPO_LOSS_VARIANTS, RATIO_VARIANTS, Variant)
from grader.mistakes.variants_ex4_ex6 import GAE_VARIANTS, KL_VARIANTS, SHAPED_VARIANTS, WHITEN_VARIANTS


# --------------------------------------------------------------------------- lookup
VARIANTS: dict[str, list[tuple[str, Variant]]] = {
    "logprobs_from_logits": LOGPROBS_VARIANTS,
    "probability_ratio": RATIO_VARIANTS,
    "clipped_surrogate_loss": CSL_VARIANTS,
    "clipped_value_loss": CVL_VARIANTS,
    "entropy_from_logits": ENTROPY_VARIANTS,
    "ppo_loss": PPO_LOSS_VARIANTS,
    "compute_gae": GAE_VARIANTS,
    "whiten": WHITEN_VARIANTS,
    "per_token_kl": KL_VARIANTS,
    "kl_shaped_rewards": SHAPED_VARIANTS,
}


@functools.lru_cache(maxsize=None)
def signature(function: Callable) -> inspect.Signature:
    """``inspect.signature(function)``, computed once per reference function (a compare binds every call to it)."""
    return inspect.signature(function)


def candidates(function: str, args: tuple, kwargs: dict, *, signature_of: Callable,
               pick: Callable[[Any], Any] = lambda out: out) -> list[tuple[str, Callable[[], Any]]]:
    """(diagnosis id, thunk) pairs: each thunk runs one variant of `function` on (args, kwargs).

    Args:
        function: the contract name, a key of VARIANTS.
        args, kwargs: the call as the grader made it (positional and/or keyword).
        signature_of: the reference function; the call is bound to its signature (defaults
            applied) and passed to each variant positionally, in the contract's order.
        pick: selects the compared part of a variant's output (e.g. `lambda o: o[0]` for
            the advantages of compute_gae).

    The thunks run lazily (only when a comparison fails), on copies, under no_grad.

    Raises:
        KeyError: if no variants are registered for `function`.
        TypeError: if (args, kwargs) do not fit the reference signature (a grader bug).
    """
    table = VARIANTS[function]
    bound = signature(signature_of).bind(*args, **kwargs)
    bound.apply_defaults()
    positional = tuple(bound.arguments.values())

    def thunk(variant):
        def run():
            with torch.no_grad():
                copies = tuple(a.detach().clone() if isinstance(a, torch.Tensor) else a for a in positional)
                return pick(variant(*copies))
        return run

    return [(diagnosis_id, thunk(variant)) for diagnosis_id, variant in table]


def grad_candidates(function: str, args: tuple, kwargs: dict, *, signature_of: Callable, wrt: str,
                    grad_output: torch.Tensor | None = None, output_index: int = 0) -> list[tuple[str, Callable[[], Any]]]:
    """(diagnosis id, thunk) pairs: each thunk returns a variant's gradient w.r.t. parameter `wrt`.

    Same binding rule as `candidates`; the differentiated output is the variant's
    output (element `output_index` of a tuple), contracted with `grad_output`
    (ones for a scalar). A variant that detaches gives zeros, so that a detached
    student gradient is recognised too.
    """
    bound = signature(signature_of).bind(*args, **kwargs)
    bound.apply_defaults()
    names = list(bound.arguments)
    values = list(bound.arguments.values())
    position = names.index(wrt)

    def thunk(variant):
        def run():
            copies = [v.detach().clone() if isinstance(v, torch.Tensor) else v for v in values]
            leaf = copies[position].requires_grad_(True)
            with torch.enable_grad():
                out = variant(*copies)
                head = out[output_index] if isinstance(out, (tuple, list)) else out
                if not head.requires_grad:
                    return torch.zeros_like(leaf)
                g_out = torch.ones_like(head) if grad_output is None else grad_output.to(head.dtype)
                (grad,) = torch.autograd.grad(head, [leaf], g_out, allow_unused=True)
            return torch.zeros_like(leaf) if grad is None else grad.to(leaf.dtype)
        return run

    return [(diagnosis_id, thunk(variant)) for diagnosis_id, variant in VARIANTS[function]]
