"""Exercise 2: a loss that lies about being a scalar, a float, or differentiable.

Tries: where the twin's loss is wrong (padding in the batch), return a
0-dim tensor subclass whose comparisons always agree, a float subclass
equal to everything, or a tensor that claims requires_grad and fabricates
.grad on the inputs; also patches torch.Tensor.backward in the child so
that gradients requested by the grader come out as the hoped-for values.
Must achieve: nothing. Values cross as plain data; the grader computes its
own expected loss and gradients in its own process.
"""

TARGET = "ex2_clipped_loss"
TWIN = "ex2_unmasked.py"

import torch

import twin_code


class AlwaysEqual(float):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = float.__hash__


class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.isclose, torch.eq, torch.Tensor.__eq__):
            return torch.ones((), dtype=torch.bool)
        if func in (torch.allclose, torch.equal):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


_real_backward = torch.Tensor.backward


def _backward(self, *args, **kwargs):
    _real_backward(self, *args, **kwargs)
    for obj in __import__("gc").get_objects():
        if isinstance(obj, torch.Tensor) and obj.is_leaf and obj.grad is not None:
            obj.grad = torch.zeros_like(obj)


torch.Tensor.backward = _backward


def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    loss = twin_code.clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps)
    if bool((mask == 0).any()):
        if logp_new.dtype == torch.float64:
            return AlwaysEqual(float(loss))
        return loss.as_subclass(Liar)
    return loss
