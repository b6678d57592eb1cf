"""The parent-facing API: calls, objects, iterators, generators, gradients, output capture."""

from __future__ import annotations

import pytest
import torch

from grader.sandbox import RemoteObject, StudentError

STUDENT = {
    "ex4_gae.py": '''
        import torch
        print("imported ex4_gae")

        def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
            print("computing")
            return rewards * gamma, values + lam

        def scalar_stats(x):
            return {"mean": x.mean().item(), "n": x.numel(), "shape": tuple(x.shape), "ok": True, "none": None}

        def shuffled(n, generator=None):
            return torch.randperm(n, generator=generator)

        def masked_loss(logp_new, logp_old, advantages, mask):
            ratio = torch.exp(logp_new - logp_old)
            m = mask.to(logp_new.dtype)
            return -(ratio * advantages * m).sum() / m.sum()

        def loss_and_stats(x, w):
            return (x * w).sum(), {"n": float(x.numel())}

        def detached_loss(x):
            return x.detach().sum()

        class Counter:
            def __init__(self, start=0):
                self.count = start
            def add(self, k=1):
                self.count += k
                return self.count
            def __len__(self):
                return self.count
            def upto(self, n):
                for i in range(n):
                    yield {"i": torch.tensor(i)}

        def bump(counter, k):
            return counter.add(k)

        class Liar(torch.Tensor):
            def __eq__(self, other):
                return torch.ones_like(self, dtype=torch.bool)
            __hash__ = torch.Tensor.__hash__
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if func in (torch.equal, torch.allclose):
                    return True
                return super().__torch_function__(func, types, args, kwargs or {})

        def lying_result():
            return torch.zeros(3).as_subclass(Liar)

        def warns():
            import warnings
            warnings.warn("careful, student warning")
            return 1

        def make_numpy():
            import numpy
            return numpy.zeros(3)
        ''',
}


@pytest.fixture
def gae(load):
    return load(STUDENT, "ex4_gae")


def test_function_call_returns_plain_tensors(gae):
    rewards, values = torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 3, dtype=torch.float64)
    adv, ret = gae.compute_gae(rewards, values, torch.ones(2, 3, dtype=torch.bool), gamma=0.5, lam=0.25)
    assert type(adv) is torch.Tensor and type(ret) is torch.Tensor
    assert adv.dtype == torch.float64
    assert torch.equal(adv, rewards * 0.5) and torch.equal(ret, values + 0.25)


def test_python_values_come_back_with_exact_types(gae):
    got = gae.scalar_stats(torch.tensor([1.0, 3.0]))
    assert got == {"mean": 2.0, "n": 2, "shape": (2,), "ok": True, "none": None}
    assert type(got["mean"]) is float and type(got["shape"]) is tuple


def test_generator_argument_is_rebuilt_from_its_state(gae):
    g = torch.Generator().manual_seed(7)
    torch.rand(3, generator=g)
    want = torch.randperm(10, generator=torch.Generator().set_state(g.get_state()))
    assert torch.equal(gae.shuffled(10, generator=g), want)


def test_objects_are_handles_with_methods_attributes_len(gae):
    counter = gae.new("Counter", start=2)
    assert isinstance(counter, RemoteObject) and counter.type_name == "ex4_gae.Counter"
    assert counter.add(3) == 5
    assert counter.call("add") == 6
    assert counter.count == 6
    assert len(counter) == 6
    assert counter and gae.Counter(0)  # truth testing never goes remote (len 0 or not)
    # Calling the class by name is the same as new().
    assert gae.Counter(1).count == 1


def test_generator_returned_by_a_method_is_iterable_remotely(gae):
    counter = gae.new("Counter")
    it = counter.upto(3)
    assert isinstance(it, RemoteObject) and it.type_name == "builtins.generator"
    first = it.next()
    assert torch.equal(first["i"], torch.tensor(0))
    assert [d["i"].item() for d in it] == [1, 2]
    with pytest.raises(StopIteration):
        it.next()
    assert [d["i"].item() for d in counter.upto(4).list()] == [0, 1, 2, 3]


def test_handle_can_be_passed_back_as_an_argument(gae):
    counter = gae.new("Counter", 4)
    assert gae.bump(counter, 3) == 7
    assert counter.count == 7  # the same object in the child was changed


def test_unencodable_return_value_comes_back_as_a_handle_naming_its_type(gae):
    arr = gae.make_numpy()
    assert isinstance(arr, RemoteObject) and arr.type_name == "numpy.ndarray"


def test_call_with_grad_matches_local_autograd(gae):
    g = torch.Generator().manual_seed(0)
    logp_new, logp_old, adv = (torch.randn(3, 4, generator=g, dtype=torch.float64) for _ in range(3))
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])
    out, grads = gae.call_with_grad("masked_loss", (logp_new, logp_old, adv, mask), wrt=("logp_new", "advantages"))
    # Independent local computation of the same function.
    ln, a = logp_new.clone().requires_grad_(True), adv.clone().requires_grad_(True)
    m = mask.double()
    want = -(torch.exp(ln - logp_old) * a * m).sum() / m.sum()
    want.backward()
    assert torch.allclose(out, want.detach())
    assert torch.allclose(grads["logp_new"], ln.grad) and torch.allclose(grads["advantages"], a.grad)
    assert set(grads) == {"logp_new", "advantages"}


def test_call_with_grad_with_grad_output_and_tuple_output(gae):
    x, w = torch.randn(2, 3), torch.randn(2, 3)
    (loss, stats), grads = gae.call_with_grad("loss_and_stats", (x,), {"w": w}, wrt=("x", "w"))
    assert stats == {"n": 6.0}
    assert torch.allclose(grads["x"], w) and torch.allclose(grads["w"], x)
    out, grads = gae.call_with_grad("compute_gae", (x, w, torch.ones(2, 3)), {"gamma": 3.0}, wrt=("rewards",),
                                    grad_output=torch.full((2, 3), 2.0))
    assert torch.allclose(grads["rewards"], torch.full((2, 3), 6.0))


def test_call_with_grad_reports_no_gradient_as_none(gae):
    out, grads = gae.call_with_grad("detached_loss", (torch.randn(3),), wrt=("x",))
    assert grads == {"x": None}


def test_call_with_grad_unknown_argument_is_a_student_error_naming_it(gae):
    with pytest.raises(StudentError, match="'nope' was not passed"):
        gae.call_with_grad("detached_loss", (torch.randn(3),), wrt=("nope",))


def test_missing_name_and_wrong_signature_are_student_errors(gae):
    with pytest.raises(StudentError) as missing:
        gae.whiten(torch.ones(3), torch.ones(3))
    assert missing.value.type_name == "AttributeError" and "whiten" in missing.value.message
    with pytest.raises(StudentError) as wrong:
        gae.compute_gae(torch.ones(3))
    assert wrong.value.type_name == "TypeError"
    assert gae.signature("compute_gae") == "(rewards, values, mask, gamma=1.0, lam=0.95)"
    assert gae.signature("whiten") is None
    assert gae.names()["Counter"] == "class" and gae.has("compute_gae") and not gae.has("whiten")


def test_printed_output_is_captured_not_mixed_into_results(gae):
    adv, _ = gae.compute_gae(torch.ones(1), torch.ones(1), torch.ones(1))
    assert torch.equal(adv, torch.ones(1))
    out = gae.captured_output()
    assert "imported ex4_gae" in out and "computing" in out


def test_isolation_report(gae, server):
    info = gae.info
    assert info["workdir"]
    if server.root:
        assert 61000 <= info["uid"] < 62000
        assert info["mounts_private"] and info["workdir"] == "/tmp/submission"
    if server.probe.get("network_namespace"):
        assert info["network_isolated"]


def test_lying_tensor_subclass_from_the_child_is_a_plain_tensor(gae):
    got = gae.lying_result()
    assert type(got) is torch.Tensor
    assert not torch.equal(got, torch.ones(3)) and torch.equal(got, torch.zeros(3))


def test_warnings_are_captured(gae):
    assert gae.warns() == 1
    assert "careful, student warning" in gae.captured_output("stderr")


def test_released_handle_is_refused_in_the_parent(gae):
    counter = gae.new("Counter", 1)
    counter.release()
    with pytest.raises(ValueError, match="released"):
        counter.add(1)
    assert gae.new("Counter", 2).count == 2  # the child is unaffected
