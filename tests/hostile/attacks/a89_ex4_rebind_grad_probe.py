"""Forge the child's gradient measurement for exercise 4 (issue 19, class 3).

Tries: ``test_gae_carries_no_gradient`` asks the child to backpropagate through
``compute_gae`` (the worker's ``call_with_grad``) and fails a function whose outputs
carry a gradient into ``rewards``/``values``. The attack keeps the twin's undetached
GAE and, at import, rebinds ``Worker.call_with_grad`` and ``Worker.handle`` of
``sandbox_child.worker`` (class attributes, reached through ``sys.modules``) so that
every gradient the child reports is None, and makes ``torch.autograd.backward``,
``torch.autograd.grad`` and ``torch.Tensor.backward`` do nothing.

Must achieve: nothing. The worker bound its request handler and its gradient
measurement before this import (``worker.run_child``, ``harness._make_grad_runner``:
autograd's C engine, ``TensorBase``'s own methods), so rebinding a module or class
attribute changes nothing it runs: the test fails as it does for the honest twin.
"""

TARGET = "ex4_gae"
TWIN = "ex4_not_detached.py"

import sys

import torch

import twin_code

compute_gae = twin_code.compute_gae
whiten = twin_code.whiten

_worker = sys.modules.get("sandbox_child.worker")
if _worker is not None:
    _Worker = _worker.Worker
    _real = _Worker.call_with_grad
    _real_handle = _Worker.handle

    def _forged(self, req, buffers):
        got = _real(self, req, buffers)
        return {"output": got["output"], "grads": {name: None for name in got["grads"]}}

    def _handle(self, req, buffers):
        if req.get("op") == "call_with_grad":
            return "ok", _forged(self, req, buffers)
        return _real_handle(self, req, buffers)

    _Worker.call_with_grad = _forged
    _Worker.handle = _handle

torch.autograd.backward = lambda *args, **kwargs: None
torch.autograd.grad = lambda outputs, inputs, *args, **kwargs: tuple(None for _ in inputs)
torch.Tensor.backward = lambda self, *args, **kwargs: None
