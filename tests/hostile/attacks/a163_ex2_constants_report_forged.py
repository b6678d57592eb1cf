"""A loss that lets gradient into the advantages but makes the child report none there (issue 31, class 1).

Tries: the twin's clipped surrogate (``ex2_clipped_loss__gradient_into_advantages``: the advantages and
logp_old are not detached) with two ways to make the child's gradient measurement say "no gradient reached
the constants", the ideas of a161 and a162 applied to exercise 2:

* the caller: when the per-argument gradient runner (``call_with_grad`` of ``ppo_course/sandbox/harness.py``)
  is on the call stack, the loss detaches the advantages and logp_old, so that their leaves get no gradient;
* the closure cells: at import, every trusted gradient runner reachable through ``gc`` (``call_with_grad``,
  ``tied_grad``) gets its ``run_backward`` cell replaced by one that reports no gradient for any leaf past the
  first (the per-argument runner's first leaf is logp_new, its constants come after).

Both made exercise 2's "no gradient into the constants" point a free "None" when it read the gradient of each
constant. Must achieve: nothing. The check is a value now (``grader.hidden.tied``): every float input hangs
on one leaf θ, and the reply dL/dθ must equal the reference's with the constants detached; the leak adds a
term to that one gradient, which neither trick removes, so the attack scores as its twin.
"""

TARGET = "ex2_clipped_loss"
TWIN = "ex2_gradient_into_advantages.py"

import gc
import sys
import types

import twin_code

masked_mean = twin_code.masked_mean


def _per_argument_runner_is_calling() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "call_with_grad" and code.co_filename.endswith("harness.py"):
            return True
        frame = frame.f_back
    return False


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    if _per_argument_runner_is_calling():
        logp_old, advantages = logp_old.detach(), advantages.detach()
    return twin_code.clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps)


def _first_leaf_only(run_backward):
    def run(outputs, seeds, keep, create, leaves, *rest):
        got = list(run_backward(outputs, seeds, keep, create, leaves, *rest))
        return tuple(got[:1] + [None] * (len(got) - 1))
    return run


for _obj in gc.get_objects():
    if isinstance(_obj, types.FunctionType) and _obj.__code__.co_name in ("call_with_grad", "tied_grad") \
            and _obj.__closure__:
        for _name, _cell in zip(_obj.__code__.co_freevars, _obj.__closure__):
            if _name == "run_backward":
                _cell.cell_contents = _first_leaf_only(_cell.cell_contents)
