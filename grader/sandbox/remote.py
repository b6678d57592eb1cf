"""Parent-side stand-ins for a student module and the objects it returns.

``RemoteModule`` is what ``Sandbox.load`` returns: attribute access gives a
callable that runs the function in the child (tensors in, plain tensors out).
A value the child cannot encode as data (an instance of the student's class,
a generator, a numpy array) comes back as a ``RemoteObject`` handle.

A crash or time-out costs only the call it happens in: the next call forks a
fresh child and imports the module again (at most ``Limits.max_respawns``
times); handles from the dead child raise ``StudentCrash`` when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, Sequence

import torch

from grader.sandbox.errors import StudentCrash, StudentImportError, StudentProtocolError
from grader.sandbox.remote_object import RemoteObject

if TYPE_CHECKING:  # pragma: no cover
    from grader.sandbox.limits import Limits
    from grader.sandbox.process import ChildProcess


class ChildSpawner(Protocol):
    """What a :class:`RemoteModule` needs of its owner (``grader.sandbox.sandbox.Sandbox``): limits and new children.

    A protocol rather than an import, so that this module does not import the
    sandbox that imports it.
    """

    limits: "Limits"

    def _spawn_child(self, module: "RemoteModule", known_good: Any) -> "ChildProcess": ...


class RemoteFunction:
    """``module.name`` in the child, callable from the parent."""

    def __init__(self, module: "RemoteModule", name: str) -> None:
        self.module = module
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.module.call(self.name, args, kwargs)

    def __repr__(self) -> str:
        return f"<RemoteFunction {self.module.name}.{self.name}>"


def _is_theta_grad(grads: dict, theta: Any) -> bool:
    """True when a shared-leaf reply is what the child's worker sends: ``{"theta": None or a tensor of θ's shape}``
    (``ppo_course.sandbox.tied_grad``); anything else is a forged reply, never a grader error."""
    if set(grads) != {"theta"}:
        return False
    got = grads["theta"]
    return got is None or (isinstance(theta, torch.Tensor) and tuple(got.shape) == tuple(theta.shape))


class RemoteModule:
    """A student module imported in its own child process (see ``Sandbox.load``).

    Attributes:
        name: the module name (``"ex4_gae"``).
        info: the child's isolation report (uid, network/mount isolation, notes).
    """

    def __init__(self, sandbox: ChildSpawner, name: str, known_good: Any) -> None:
        self._sandbox = sandbox
        self.name = name
        self._known_good = known_good
        self._child: "ChildProcess | None" = None
        self._generation = 0
        self._respawns = 0
        self._import_failure: StudentImportError | None = None
        self._outputs: list[str] = []
        self._modified_history: dict[str, set[str]] = {}  # function name -> inputs it ever changed in place
        self.info: dict = {}
        self._spawn(first=True)

    # -- child management ---------------------------------------------------
    def _spawn(self, first: bool = False) -> "ChildProcess":
        if self._child is not None:
            self._outputs.append(self._child.output.text())
            self._child.close()
        if not first:
            self._respawns += 1
        self._generation += 1
        self._child = self._sandbox._spawn_child(self, self._known_good)
        try:
            self.info = self._child.wait_ready()
        except StudentImportError as exc:
            if first:
                self._import_failure = exc
            raise
        return self._child

    def _check_generation(self, generation: int, what: str) -> None:
        if generation != self._generation or self._child is None or not self._child.alive:
            raise StudentCrash(f"this {what} was lost: the process that held it was stopped after an earlier failure")

    def _live_child(self) -> "ChildProcess":
        if self._import_failure is not None:
            raise self._import_failure
        child = self._child
        if child is None or not child.alive:
            if self._respawns >= self._sandbox.limits.max_respawns:
                raise StudentCrash(f"{self.name} crashed or timed out {self._respawns + 1} times; no further calls are run")
            try:
                child = self._spawn()
            except StudentImportError as exc:
                raise StudentCrash(f"{self.name} could not be imported again after an earlier failure: {exc}") from None
        return child

    def _malformed(self, op: str) -> StudentCrash:
        """Stop the child that answered ``op`` with a structure the worker never sends (a forged reply: the
        codec and the worker are the student's to rewrite), and say so in the grader's words. Trusted code
        reads a structured reply only after this check."""
        if self._child is not None:
            self._child.close()
        return StudentCrash(f"the submission's process answered a {op!r} request with a malformed reply "
                            "(the grader's sandbox protocol was tampered with); the process was stopped")

    def _request(self, op: str, fields: dict, timeout_s: float | None, generation: int | None = None, what: str = "") -> Any:
        if generation is not None:
            self._check_generation(generation, what)
        return self._live_child().request(op, fields, timeout_s)

    # -- public API -----------------------------------------------------------
    def call(self, name: str, args: Sequence[Any] = (), kwargs: dict | None = None, timeout: float | None = None) -> Any:
        """``module.name(*args, **kwargs)`` in the child; returns plain values/tensors or RemoteObjects.

        Raises:
            StudentError, StudentTimeout, StudentCrash, StudentImportError.
        """
        try:
            return self._request("call", {"name": name, "args": list(args), "kwargs": dict(kwargs or {})}, timeout)
        finally:
            changed = self.last_modified()
            if changed:
                self._modified_history.setdefault(name, set()).update(changed)

    def inputs_modified_before(self, name: str) -> list[str]:
        """Paths (``args[i]`` / ``kwargs['name']``) of the inputs that any call of ``name`` so far changed in place.

        Every call's shared-memory arguments are checked by the parent (``last_modified``), so a
        grader's in-place test can count every call of the grading, not only its own probe: a
        function that recognises the probe's input still fails.
        """
        return sorted(self._modified_history.get(name, ()))

    def __getattr__(self, name: str) -> RemoteFunction:
        if name.startswith("_"):
            raise AttributeError(name)
        return RemoteFunction(self, name)

    def new(self, class_name: str, *args: Any, **kwargs: Any) -> "RemoteObject":
        """``module.ClassName(*args, **kwargs)``: the instance as a ``RemoteObject``.

        Raises:
            StudentProtocolError: the call gave a plain value (an int, None, a tensor, a list...), not an
                object of the child: the student's ``ClassName`` is a function, or its ``__new__`` returns
                something else. Test code that uses the instance (``buf.add``, ``ctl.value``) raised
                AttributeError inside the grader, diagnosed ``grader_error``, without this check.
        """
        obj = self.call(class_name, args, kwargs)
        if not isinstance(obj, RemoteObject):
            raise StudentProtocolError(f"{class_name}(...) returned a {type(obj).__name__}, not an instance of "
                                       f"the class {class_name}")
        return obj

    def call_with_grad(
        self,
        name: str,
        args: Sequence[Any] = (),
        kwargs: dict | None = None,
        wrt: Sequence[str] = (),
        grad_output: torch.Tensor | None = None,
        output_index: int | None = None,
        timeout: float | None = None,
        tie: dict | None = None,
    ) -> tuple[Any, dict[str, torch.Tensor | None]]:
        """Call ``name`` with ``requires_grad`` on the arguments named in ``wrt``, then backprop.

        The child binds ``args``/``kwargs`` to the function's signature, replaces
        each ``wrt`` argument by a fresh leaf, calls, and backpropagates the
        output (element ``output_index``, default 0, of a tuple output): a
        one-element loss directly, anything else as ``sum(output * grad_output)``.
        With ``tie`` (``ppo_course.sandbox.tied_grad``: a leaf ``theta``, per-argument ``maps``, output
        ``heads``), every mapped argument is derived from the one leaf and ``grads`` is ``{"theta": dL/dθ}``.

        Returns:
            ``(output, grads)``: the output (detached) and ``{arg name: .grad or None}``;
            all grads are None when the student's output carries no graph.

        Raises:
            StudentError (incl. ``TypeError`` for a ``wrt`` name the call does not
            bind), StudentTimeout, StudentCrash, StudentImportError.
        """
        fields = {"name": name, "args": list(args), "kwargs": dict(kwargs or {}), "wrt": list(wrt),
                  "grad_output": grad_output, "output_index": output_index}
        if tie is not None:
            fields["tie"] = tie
        got = self._request("call_with_grad", fields, timeout)
        if type(got) is not dict or set(got) != {"output", "grads"} or type(got["grads"]) is not dict or \
                any(g is not None and type(g) is not torch.Tensor for g in got["grads"].values()):
            raise self._malformed("call_with_grad")
        if tie is not None and not _is_theta_grad(got["grads"], tie.get("theta")):
            raise self._malformed("call_with_grad")
        return got["output"], dict(got["grads"])

    def modified_inputs(self, name: str, args: Sequence[Any] = (), kwargs: dict | None = None) -> list[str]:
        """Call ``name`` like ``call`` and return the tensor arguments it changed in place.

        The parent compares the shared-memory arguments with what it sent
        (``grader.sandbox.shared_args``), so nothing the student's code does in its
        process can hide a change. Paths are ``args[i]`` / ``kwargs['name']``.
        The same verdict exists for every call (``last_modified``).

        Raises:
            StudentError, StudentTimeout, StudentCrash, StudentImportError (as ``call``).
        """
        self.call(name, args, kwargs)
        return self.last_modified()

    def last_modified(self) -> list[str]:
        """Paths of the tensor arguments that the last request (of this module or its objects) changed in place."""
        return list(self._child.last_modified) if self._child is not None else []

    def last_shared_arguments(self) -> Any:
        """The last request's arguments in shared memory (a ``SharedArgs``), or None.

        A grader may ``overwrite`` them after the call to see whether the student's
        object kept references to them instead of copies.
        """
        return self._child.last_shared if self._child is not None else None

    def signature(self, name: str) -> str | None:
        """``str(inspect.signature(module.name))`` in the child, or None if there is none."""
        try:
            return self._request("signature", {"name": name}, None)
        except Exception:  # noqa: BLE001 - any failure means "no usable signature"
            return None

    def names(self) -> dict[str, str]:
        """Public names of the module → ``"function"``, ``"class"`` or ``"value"``."""
        got = self._request("names", {}, None)
        if type(got) is not dict or any(v not in ("function", "class", "value") for v in got.values()):
            raise self._malformed("names")
        return got

    def has(self, name: str) -> bool:
        """Whether the module defines ``name``."""
        return name in self.names()

    def ppo_step_harness(
        self,
        model_config: dict,
        state_dict: dict[str, torch.Tensor],
        queries: torch.Tensor,
        ppo_config: dict,
        seed: int,
        timeout: float | None = None,
        ref_state_dict: dict[str, torch.Tensor] | None = None,
        observe: str | None = None,
        kl_coef: float | None = None,
    ) -> dict:
        """Run the student's ``ppo_step`` once on the package's model (``ppo_course.sandbox.harness``).

        ``ref_state_dict``: the reference policy's weights (default: a copy of the policy); ``kl_coef``: the
        KL controller's value at the start (default: ``init_kl_coef``; ``harness.kl_controller_start``).

        Returns:
            ``{"state_dict": {name: Tensor}, "stats": ..., "kl_coef": ...}`` as decoded data.
        """
        payload = {"model_config": model_config, "state_dict": dict(state_dict), "queries": queries,
                   "ppo_config": ppo_config, "seed": int(seed)}
        if ref_state_dict is not None:
            payload["ref_state_dict"] = dict(ref_state_dict)
        if observe is not None:  # "deep": the observer's deep mode (ppo_course.sandbox.observe)
            payload["observe"] = str(observe)
        if kl_coef is not None:
            payload["kl_coef"] = float(kl_coef)
        return self._request("harness_ex7", {"payload": payload}, timeout)

    def buffer_graph_probe(self, plan: dict, timeout: float | None = None) -> dict:
        """Run exercise 5's graph probe (``harness.trusted_operations()["buffer_graph"]``) on the student's
        ``RolloutBuffer`` in the child, with the grader's drawn ``plan``.

        The autograd graph must exist where the buffer runs, so the probe builds it there; the worker calls
        the copy it captured before the student's import, and the reply is raw data (the rows that came back
        and the graph facts) that the grader validates and judges (``grader.hidden.probes``).
        """
        return self._request("probe", {"name": "buffer_graph", "plan": dict(plan)}, timeout)

    def captured_output(self, stream: str | None = None) -> str:
        """What the student's code printed so far (bounded; never shown in hidden feedback)."""
        parts = list(self._outputs)
        if self._child is not None:
            if self._child.alive:
                self._child.drain_output()
            parts.append(self._child.output.text(stream))
        return "".join(parts)

    def close(self) -> None:
        """Stop the child (idempotent)."""
        if self._child is not None:
            self._child.close()

    def __repr__(self) -> str:
        return f"<RemoteModule {self.name} in the sandbox>"
