"""Diagnosis ids and the plain-words message a student can act on (student side).

A *diagnosis* names a known mistake; the feedback of `ppo-course check` and of
the hidden graders reports the id and the message below. The ids are stable:
the mistake catalogue, the class report and the feedback all use them, so never
rename or remove one (add new ones freely). The instructor side re-exports this
table as `grader.mistakes.diagnose.DIAGNOSES`; it lives here because the student bundle
ships `ppo_course` but not `grader`. Messages are generic hints and hold no
hidden input or expected value.

The table is assembled here from three parts in this order (the ids' order is the table's): exercises
1-6 (`diagnoses_ex1_ex6`), exercise 7 (`diagnoses_ex7`), then the ids of any exercise below.

Sources: Book eq. 5.1, 5.2, 5.9, 5.13, 5.20, §5.5-5.8 (chapter 5 · PPO) and the
contract's tensor conventions.
"""

from __future__ import annotations

from ppo_course.grading_kit.diagnoses_ex1_ex6 import EX1_TO_EX6
from ppo_course.grading_kit.diagnoses_ex7 import EX7

# id -> message a student can act on, for a mistake or state of any exercise.
_ANY_EXERCISE: dict[str, str] = {
    # --- any exercise ---
    "advantages_renormalised": (
        "Your loss standardises the advantages again over its mini-batch (SB3's normalize_advantage); "
        "use them as given: the PPO step whitens them once over the whole rollout."
    ),
    "surrogate_clipped_term_only": (
        "Your objective is clip(r, 1-eps, 1+eps)*A alone; eq. 5.1 takes the MINIMUM of the unclipped r*A and the "
        "clipped term, so that the objective is a pessimistic bound (the clip only removes the incentive to move "
        "further, never the penalty for moving the wrong way)."
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
        "The output dtype is wrong: it must follow the floating-point inputs (float32 in -> float32 out, "
        "float64 in -> float64 out), never an integer or bool input's (a mask, token ids)."
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
        "Your code depends on the mask's dtype: it fails (raises, or gives other values or another output dtype) "
        "with a mask of one dtype and is right with another; bool, int and float 0/1 masks are all allowed. Select "
        "with mask.bool() (torch.where(mask.bool(), x, 0)) so that the mask never decides the values or the dtype."
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
    "computes_nothing": (
        "Your function returned zeros or one of its inputs unchanged (on two different inputs): "
        "nothing of the computation the docstring asks for shows yet."
    ),
    "rewards_keep_gradient": (
        "A KL or reward output keeps its autograd graph (into logp, ref_logp or the scores): rewards "
        "are constants of the PPO loss, so build them under torch.no_grad() or .detach() them "
        "(Book §5.6; a score with a graph would put the reward model in the policy's loss)."
    ),
}

# id -> message a student can act on. Messages say what the code did and what
# the book / contract asks for instead, without revealing any hidden input.
DIAGNOSES: dict[str, str] = {**EX1_TO_EX6, **EX7, **_ANY_EXERCISE}



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
