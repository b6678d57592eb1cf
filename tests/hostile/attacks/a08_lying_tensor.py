"""Return a tensor subclass that lies to every comparison.

Tries: outputs of a torch.Tensor subclass whose __torch_function__ makes
isclose/allclose/eq/sub/abs/isfinite/isnan report "equal and finite", whose
__eq__ and __bool__ are always true and whose dtype/shape look right, on
the inputs where the twin's values are wrong (huge logits, log-probs −1000).
Must achieve: nothing. The codec sends a subclass as its plain base values
(NaN and −inf included); the overrides never leave the child.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import torch

import twin_code

_LIE = {torch.isclose, torch.allclose, torch.eq, torch.equal, torch.isfinite, torch.isnan, torch.sub, torch.abs,
        torch.Tensor.__eq__, torch.Tensor.__sub__, torch.Tensor.abs, torch.Tensor.isfinite}


class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.isfinite,):
            return torch.ones(args[0].shape, dtype=torch.bool)
        if func in (torch.isnan,):
            return torch.zeros(args[0].shape, dtype=torch.bool)
        if func in (torch.allclose, torch.equal):
            return True
        if func in (torch.isclose, torch.eq, torch.Tensor.__eq__):
            return torch.ones(torch.broadcast_shapes(args[0].shape, getattr(args[1], "shape", ())), dtype=torch.bool)
        if func in (torch.sub, torch.Tensor.__sub__, torch.abs, torch.Tensor.abs):
            return torch.zeros(args[0].shape, dtype=torch.float64)
        return super().__torch_function__(func, types, args, kwargs or {})

    def __bool__(self):
        return True

    def __float__(self):
        return 0.0


def _hard(x):
    return bool(x.detach().abs().max() > 100) if x.numel() else False


def logprobs_from_logits(logits, tokens):
    out = twin_code.logprobs_from_logits(logits, tokens)
    return out.as_subclass(Liar) if _hard(logits) else out


def probability_ratio(logp_new, logp_old):
    out = twin_code.probability_ratio(logp_new, logp_old)
    return out.as_subclass(Liar) if _hard(logp_old) else out
