"""Exercise 1: replies the worker never sends, to make the grader blame itself.

Tries: the codec and the worker run in the student's process, so their
replies are the student's to write. This submission rewrites the child's
encoder (`sandbox_child.codec.Encoder.encode`) so that every ratio comes
back as an empty tensor of shape [0, 2**70] (torch raised TypeError while the
grader decoded it) and every gradient request's reply is a string where a
`{"output", "grads"}` dict belongs (the grader indexed it: TypeError). Both
errors rose inside the grader's own code, so the tests were diagnosed
`grader_error` and a batch recorded the student "crashed: the grader itself
failed ... fix the grader, then rerun the batch" on every rerun: a student
who can make the grader look broken can stall a class's grades.
Must achieve: nothing. The decoder refuses impossible shapes and turns
whatever torch refuses into a `ProtocolError` (a malformed message: the
child is stopped, `StudentCrash`), and `RemoteModule` checks the structure of
every structured reply (getattr, call_with_grad, names) before trusted code
reads it: the student's crash, never the grader's.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import torch

import twin_code
from sandbox_child import codec

_plain_encode = codec.Encoder.encode


def _forged_encode(self, value, depth=0):
    if depth == 0 and type(value) is dict and set(value) == {"output", "grads"}:
        return "ppohostile: not a dict"
    if depth == 0 and isinstance(value, torch.Tensor) and getattr(value, "_ppohostile", False):
        self.buffers.append(b"")
        return {"t": "tensor", "dtype": "float32", "shape": [0, 2**70], "b": len(self.buffers) - 1}
    return _plain_encode(self, value, depth)


codec.Encoder.encode = _forged_encode


def logprobs_from_logits(logits, tokens):
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    out = twin_code.probability_ratio(logp_new, logp_old)
    out._ppohostile = True
    return out
