"""Structured replies the worker never sends (red-team attack a99): the child's encoder is the student's
to rewrite, so every structure trusted code reads from a reply is checked first, and a forged one is the
student's crash (`StudentCrash`, the child stopped), never an exception inside the grader."""

from __future__ import annotations

import pytest
import torch

from grader.sandbox import StudentCrash

FORGER = '''
import torch
from sandbox_child import codec

_plain = codec.Encoder.encode
FORGE = {}


def _forged(self, value, depth=0):
    if depth == 0 and type(value) is dict and FORGE.get("on") in value:
        return FORGE["as"]
    return _plain(self, value, depth)


codec.Encoder.encode = _forged


def forge(key, node):
    FORGE["on"], FORGE["as"] = key, node


def square(x):
    return x * x


class Box:
    size = 3
'''

FORGERIES = [("callable", "not a dict"), ("callable", {"t": "dict", "v": {"callable": "yes", "value": None}}),
             ("grads", ["output", "grads"]), ("grads", {"t": "dict", "v": {"output": 1, "grads": [1, 2]}}),
             ("grads", {"t": "dict", "v": {"output": 1, "grads": {"t": "dict", "v": {"x": "no tensor"}}}})]


@pytest.mark.parametrize("key,node", FORGERIES, ids=["getattr-str", "getattr-flag", "grad-list", "grads-list",
                                                     "grads-values"])
def test_a_forged_structured_reply_is_a_student_crash(load, key, node):
    mod = load({"forger.py": FORGER}, "forger")
    mod.forge(key, node)
    with pytest.raises(StudentCrash, match="malformed reply"):
        if key == "callable":
            mod.new("Box").size
        else:
            mod.call_with_grad("square", (torch.ones(2, dtype=torch.float64),), {}, wrt=("x",),
                               grad_output=torch.ones(2, dtype=torch.float64))


def test_forged_names_are_a_student_crash(load):
    mod = load({"forger.py": FORGER}, "forger")
    mod.forge("square", {"t": "dict", "v": {"square": "a weapon"}})
    with pytest.raises(StudentCrash, match="malformed reply"):
        mod.names()


def test_honest_replies_still_pass_the_checks(load):
    mod = load({"forger.py": FORGER}, "forger")
    assert mod.new("Box").size == 3
    out, grads = mod.call_with_grad("square", (torch.tensor([1.0, 2.0], dtype=torch.float64),), {}, wrt=("x",),
                                    grad_output=torch.ones(2, dtype=torch.float64))
    assert torch.equal(grads["x"], torch.tensor([2.0, 4.0], dtype=torch.float64))  # d(x²)/dx = 2x
    assert mod.names()["square"] == "function" and mod.names()["Box"] == "class"
