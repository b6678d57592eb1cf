"""Replace the grader's exercise-5 graph probe from inside the child (issue 19, class 3).

Tries: the detached-copies test (``test_buffer_stores_detached``) needs an autograd
graph where the buffer runs, so a probe runs in the child beside this module. Before
the fix the worker looked the probe up as ``harness.buffer_graph_probe`` at call time
and trusted its two-field answer, so one line (rebinding it to return
``{"fields": 2, "keeps_graph": False}``) earned the point with a buffer that keeps the
graph. This attack, at import:

1. rebinds ``buffer_graph_probe``, ``trusted_operations`` and ``run_ppo_step`` of
   ``ppo_course.sandbox.harness`` and replaces the module in ``sys.modules``;
2. walks ``gc`` for every dict that maps ``"buffer_graph"`` to a callable (the
   worker's table of captured measurements) and swaps in the one-line forgery;
3. makes ``torch.Tensor.requires_grad`` / ``grad_fn`` lie (always False / None).

Must achieve: nothing. The worker calls the probe it captured before this import
(1), the grader judges raw data only, rejecting a reply without the drawn rows (2),
and the probe reads the graph through ``torch._C.TensorBase``'s descriptors (3): the
test fails as it does for the honest twin (the same buffer without the attack).
"""

TARGET = "ex5_rollout_buffer"
TWIN = "ex5_stores_graph.py"

import gc
import sys
import types

import torch

import twin_code

RolloutBuffer = twin_code.RolloutBuffer


def _forged(*args, **kwargs):
    return {"fields": 2, "keeps_graph": False}


_harness = sys.modules.get("ppo_course.sandbox.harness")
if _harness is not None:
    _harness.buffer_graph_probe = _forged
    _harness.trusted_operations = lambda: {"buffer_graph": _forged, "ppo_step": _forged}
    _fake = types.ModuleType(_harness.__name__)
    _fake.__dict__.update({k: v for k, v in vars(_harness).items() if not k.startswith("__")})
    _fake.buffer_graph_probe = _forged
    sys.modules[_harness.__name__] = _fake
for _obj in gc.get_objects():
    if isinstance(_obj, dict) and "buffer_graph" in _obj and callable(_obj.get("buffer_graph")):
        _obj["buffer_graph"] = _forged
torch.Tensor.requires_grad = property(lambda self: False)
torch.Tensor.grad_fn = property(lambda self: None)
