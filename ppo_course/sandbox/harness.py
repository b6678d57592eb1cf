"""The exercise-7 harness: one student ``ppo_step`` on the package's own model, inside the child.

The parent sends only data (``PolicyConfig`` and ``PPOConfig`` as dicts, a
state dict, queries, a seed); everything else is built here from the public
package, exactly as ARCHITECTURE.md ("Exercise 7") has the caller build it, so
that the grader can run ``ppo_reference.ppo_step`` on the same inputs in the
parent and compare parameters after one step:

* ``policy = CausalLMWithValueHead(PolicyConfig(**model_config))`` loaded with the state dict;
* ``ref_policy``: a frozen deep copy (``eval()``, ``requires_grad_(False)``), or, when the payload
  has ``ref_state_dict``, a frozen model loaded with those weights (so that the KL is not 0);
* ``optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)``;
* ``generator = torch.Generator().manual_seed(seed)``;
* ``reward_fn = ppo_course.toy_task.score`` (the toy reward model);
* ``kl_ctl = ex6_kl_reward.AdaptiveKLController(kl_controller_start(payload, config), config.target_kl,
  config.kl_horizon)`` (the student's own ex6, or the known-good proxy): it starts at ``config.init_kl_coef``,
  or at the payload's ``kl_coef`` (a controller that has already adapted, as after earlier steps of a run).
"""

from __future__ import annotations

import copy
import importlib
import warnings
from typing import Any

import torch


def build_setting(payload: dict) -> tuple:
    """(policy, ref_policy, optimizer, generator, config, queries) for one ex7 step, from data only.

    The one place that builds the exercise-7 setting: the child's harness and the
    grader's reference run (``grader.mistakes.buggy_ppo_step``) both call it, so the two
    sides cannot drift apart. Nothing here runs student code.

    Args:
        payload: as for :func:`run_ppo_step`.

    Raises:
        ``KeyError``/``pydantic.ValidationError`` on a malformed payload.
    """
    from ppo_course.config import PPOConfig
    from ppo_course.model import CausalLMWithValueHead, PolicyConfig

    with warnings.catch_warnings():
        # The grader chose this config (often a tiny one); its band warnings are not the student's output.
        warnings.simplefilter("ignore")
        config = PPOConfig.model_validate(payload["ppo_config"])
    policy = CausalLMWithValueHead(PolicyConfig.model_validate(payload["model_config"]))
    policy.load_state_dict(payload["state_dict"])
    policy.train()
    if payload.get("ref_state_dict") is not None:
        # A reference that differs from the policy (KL ≠ 0 on this step), e.g. the SFT weights.
        ref_policy = CausalLMWithValueHead(PolicyConfig.model_validate(payload["model_config"]))
        ref_policy.load_state_dict(payload["ref_state_dict"])
        ref_policy.eval()
    else:
        ref_policy = copy.deepcopy(policy).eval()
    ref_policy.requires_grad_(False)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)
    generator = torch.Generator().manual_seed(int(payload["seed"]))
    return policy, ref_policy, optimizer, generator, config, payload["queries"]


def kl_controller_start(payload: dict, config: Any) -> float:
    """The adaptive KL controller's value when the step starts: the payload's ``kl_coef`` if given, else
    ``config.init_kl_coef`` (TRL's ``AdaptiveKLController(init_kl_coef, ...)`` at the run's first step).

    A ``kl_coef`` that differs from ``config.init_kl_coef`` stands for a controller that has already moved
    (Book §5.6: β adapts every step), so that a step reading β from the config instead of ``kl_ctl.value``
    differs from the reference. Shared by the child's harness and the grader's reference runs.

    Raises:
        TypeError/ValueError: when ``kl_coef`` is not a number.
    """
    start = payload.get("kl_coef")
    return float(config.init_kl_coef if start is None else start)


def _make_buffer_graph_probe() -> Any:
    """Exercise 5's "stores detached copies" probe, with every primitive it uses bound now.

    Called before the student's module is imported (:func:`trusted_operations`): the probe keeps the
    torch functions, the ``TensorBase`` descriptors of ``requires_grad``/``grad_fn`` (a C type, which no
    code can change) and the torch-function switch in its closure, so that rebinding a module
    attribute afterwards (``harness.buffer_graph_probe = ...``, ``torch.Tensor.requires_grad = ...``,
    ``torch.rand = ...``) changes nothing it does.
    """
    base = torch._C.TensorBase.__dict__
    requires_grad, grad_fn = base["requires_grad"].__get__, base["grad_fn"].__get__
    plain_tensor, tensor_base = torch.Tensor, torch._C.TensorBase
    no_torch_function = torch._C.DisableTorchFunction
    detach, clone, requires_grad_ = base["detach"], base["clone"], base["requires_grad_"]
    rand, mul, arange, Generator = torch.rand, torch.mul, torch.arange, torch.Generator
    float64, exact_type, is_instance, as_list, as_str = torch.float64, type, isinstance, list, str
    to_bool, to_int, to_float, no_grad_fn = bool, int, float, None

    def probe(module: Any, plan: dict) -> dict:
        """Add a field that carries a graph, read it back through the student's buffer; return raw data.

        Args:
            module: the student's imported ``ex5_rollout_buffer``.
            plan: ``{"rows": int, "cols": int, "seed": int, "scale": float, "mbs": int, "mb_seed": int}``,
                drawn by the grader (``grader.hidden.probes.buffer_graph_plan``).

        Returns:
            ``{"batches": [[[name, Tensor | None, requires_grad, has_grad_fn, plain], ...], ...]}``: per
            mini-batch, per field, a detached copy of what came back and three facts read through the
            C descriptors. The grader judges it (``grader.hidden.probes.judge_buffer_graph``).

        Raises:
            Whatever the student's code raises.
        """
        rows, cols = to_int(plan["rows"]), to_int(plan["cols"])
        leaf = rand(rows, cols, generator=Generator().manual_seed(to_int(plan["seed"])), dtype=float64)
        requires_grad_(leaf, True)
        buf = module.RolloutBuffer()
        buf.add(ids=arange(rows), values=mul(leaf, to_float(plan["scale"])))
        buf.start_training()
        out = []
        mb_generator = Generator().manual_seed(to_int(plan["mb_seed"]))
        for mb in as_list(buf.minibatches(to_int(plan["mbs"]), generator=mb_generator)):
            fields = []
            items = as_list(mb.items()) if is_instance(mb, dict) else []
            for name, value in items:
                with no_torch_function():
                    if is_instance(value, tensor_base):
                        fields.append([as_str(name), clone(detach(value)), to_bool(requires_grad(value)),
                                       grad_fn(value) is not no_grad_fn, exact_type(value) is plain_tensor])
                    else:
                        fields.append([as_str(name), None, False, False, False])
            out.append(fields if is_instance(mb, dict) else None)
        return {"batches": out}

    return probe


def _make_grad_runner() -> Any:
    """The gradient measurement of ``call_with_grad`` (exercises 1-6), with its primitives bound now.

    Made before the student's import (:func:`trusted_operations`): backpropagation goes through autograd's
    C engine (``torch._C._EngineBase.run_backward``, an immutable type) and ``TensorBase``'s own methods,
    so rebinding ``torch.autograd.backward``, ``torch.Tensor.backward``/``requires_grad`` or
    ``inspect.signature`` afterwards changes nothing it measures. The gradients it
    returns are compared with the reference's in the parent.
    """
    import inspect

    base = torch._C.TensorBase.__dict__
    run_backward = torch.autograd.variable.Variable._execution_engine.run_backward
    requires_grad, is_floating = base["requires_grad"].__get__, base["is_floating_point"]
    detach, clone, requires_grad_, numel = base["detach"], base["clone"], base["requires_grad_"], base["numel"]
    reshape, to_dtype, dtype_of = base["reshape"], base["to"], base["dtype"].__get__
    set_grad_enabled, is_grad_enabled = torch._C._set_grad_enabled, torch._C.is_grad_enabled
    no_torch_function, tensor_base, ones = torch._C.DisableTorchFunction, torch._C.TensorBase, torch.ones
    signature, is_instance, as_str, as_int, as_list, as_tuple = inspect.signature, isinstance, str, int, list, tuple

    def call_with_grad(fn: Any, args: list, kwargs: dict, wrt: list, grad_output: Any, output_index: Any) -> dict:
        """``fn`` called with fresh leaves on the ``wrt`` arguments, then backpropagated.

        The function receives a (non-leaf) copy of each leaf. The differentiated output is the returned
        tensor, or element ``output_index`` (default 0) of a returned tuple/list; without ``grad_output``
        it must hold one element (a loss), otherwise ``sum(output * grad_output)`` is backpropagated.

        Returns:
            ``{"output": <what fn returned>, "grads": {name: Tensor or None}}`` (None: no gradient reached it).

        Raises:
            TypeError: a ``wrt`` name the call does not bind, or not a floating-point tensor; ValueError: a
            non-scalar output without ``grad_output``; whatever the student's code raises.
        """
        bound = signature(fn).bind(*args, **kwargs)
        names = [as_str(w) for w in wrt]
        leaves = []
        for name in names:
            if name not in bound.arguments:
                raise TypeError(f"call_with_grad: argument {name!r} was not passed")
            value = bound.arguments[name]
            with no_torch_function():
                if not is_instance(value, tensor_base) or not is_floating(value):
                    raise TypeError(f"call_with_grad: argument {name!r} is not a floating-point tensor")
                leaf = requires_grad_(clone(detach(value)), True)
                # A non-leaf copy: an in-place change of it is then not autograd's error.
                bound.arguments[name] = clone(leaf)
            leaves.append(leaf)
        previous = is_grad_enabled()
        set_grad_enabled(True)
        try:
            output = fn(*bound.args, **bound.kwargs)
        finally:
            set_grad_enabled(previous)
        diff = output
        if is_instance(output, (list, tuple)) and not is_instance(output, tensor_base):
            diff = output[0 if output_index is None else as_int(output_index)] if len(output) else None
        grads: list = [None] * len(leaves)
        with no_torch_function():
            if leaves and is_instance(diff, tensor_base) and requires_grad(diff):
                if grad_output is None:
                    if numel(diff) != 1:
                        raise ValueError("call_with_grad: the output is not a single loss value")
                    diff, seed = reshape(diff, ()), ones((), dtype=dtype_of(diff))
                else:
                    seed = to_dtype(grad_output, dtype_of(diff))
                grads = as_list(run_backward(as_tuple([diff]), as_tuple([seed]), False, False, as_tuple(leaves),
                                             True, False))
        return {"output": output, "grads": dict(zip(names, grads))}

    return call_with_grad


#: ``ppo-course check`` (the student's own process) and the local grader call it from here; the
#: sandbox's children use the copy captured before the student's import (:func:`trusted_operations`).
buffer_graph_probe = _make_buffer_graph_probe()


def trusted_operations() -> dict[str, Any]:
    """The child's measurements, made now (before the student's import) and kept by the worker.

    ``{"buffer_graph": probe(module, plan), "ppo_step": run_ppo_step, "call_with_grad": ...,
    "tied_grad": ...}`` (``ppo_course.sandbox.tied_grad``): the worker
    calls these objects,
    never the module attributes, so that a submission that rebinds ``ppo_course.sandbox.harness``'s
    names (or replaces the module in ``sys.modules``) does not change what runs. What they return is
    raw data that the parent validates.
    """
    from ppo_course.sandbox.tied_grad import make_tied_runner

    return {"buffer_graph": _make_buffer_graph_probe(), "ppo_step": _make_ppo_step_runner(),
            "call_with_grad": _make_grad_runner(), "tied_grad": make_tied_runner()}



class UnfinishedController:
    """Stands for a KL controller whose class is still exercise 6's stub: any use raises the stub's own
    ``NotImplementedError``, so that a step that is itself a stub says so first, and a finished step names
    exercise 6 at its first use of ``kl_ctl`` (``step_checks.unimplemented_dependency``)."""

    def __init__(self, error: NotImplementedError) -> None:
        object.__setattr__(self, "_error", error)

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(*self._error.args)

    def __setattr__(self, name: str, value: Any) -> None:
        raise NotImplementedError(*self._error.args)


def controller_or_unfinished(kl_module: Any, start: float, config: Any) -> Any:
    """``kl_module.AdaptiveKLController(start, config.target_kl, config.kl_horizon)``, or an `UnfinishedController`
    when that class is still a stub (its ``NotImplementedError``); any other error is raised."""
    try:
        return kl_module.AdaptiveKLController(start, config.target_kl, config.kl_horizon)
    except NotImplementedError as exc:  # ex6's stub: raised at the step's first use, after its own stub
        return UnfinishedController(exc)


def _make_ppo_step_runner() -> Any:
    """Exercise 7's harness with its helpers bound now (before the student's import).

    ``build_setting``, the observer, the seeding and the toy reward are taken from their modules here,
    so rebinding ``harness.build_setting``, ``observe.StepObserver`` or ``toy_task.score`` afterwards
    changes nothing the worker's copy runs. Its result is data the parent compares with its own
    reference step (the points), or reads to name a mistake (the trace).
    """
    import sys

    from ppo_course.sandbox.observe import MODULE_NAMES, StepObserver
    from ppo_course.sandbox.seeding import seed_globals
    from ppo_course.toy_task import score

    setting, import_module, loaded, stems = build_setting, importlib.import_module, sys.modules, tuple(MODULE_NAMES)
    controller_start = kl_controller_start
    observer_class, reseed, to_int, make_controller = StepObserver, seed_globals, int, controller_or_unfinished

    def run_ppo_step(module: Any, payload: dict) -> dict:
        """Build the ex7 setting from ``payload`` and run ``module.ppo_step`` once.

        Args:
            module: the student's imported ``ex7_ppo_step``.
            payload: ``{"model_config": dict, "state_dict": {name: Tensor},
                "queries": [B, P] long Tensor, "ppo_config": dict, "seed": int}``, and optionally
                ``"ref_state_dict": {name: Tensor}`` (the reference policy's weights; default: the policy's),
                ``"kl_coef": float`` (the controller's value at the start, :func:`kl_controller_start`)
                and ``"observe": "deep"`` (the observer's deep mode, ``ppo_course.sandbox.observe``).

        Returns:
            ``{"state_dict": {name: Tensor}, "stats": <whatever ppo_step returned>,
            "kl_coef": <kl_ctl.value after the step>, "trace": <the observed stages>,
            "ref_state_dict": <the reference policy's weights after the step: frozen, so the ones given>}``
            (the trace: ``ppo_course.sandbox.observe``).

        Raises:
            Whatever the student's code raises (reported to the parent as StudentError);
            ``KeyError``/``pydantic.ValidationError`` on a malformed payload.
        """
        reseed(to_int(payload["seed"]))  # the test's own seed: a step that uses the global RNGs is reproducible
        policy, ref_policy, optimizer, generator, config, queries = setting(payload)
        kl_module = import_module("ex6_kl_reward")
        kl_ctl = make_controller(kl_module, controller_start(payload, config), config)
        # The sibling modules the step imported (the stub's `import ex4_gae` ...): observed while it runs.
        modules = {stem: loaded.get(stem) for stem in stems}
        # ``"observe": "deep"`` (the public test): also the measurements only instrumentation gives (observe.py).
        observer = observer_class(policy, ref_policy, optimizer, generator, score, kl_ctl, modules,
                                  deep=payload.get("observe") == "deep")
        with observer:
            stats = module.ppo_step(policy, ref_policy, optimizer, queries, observer.reward_fn, observer.kl_ctl,
                                    config, generator)
        return {
            "state_dict": {k: v.detach().clone() for k, v in policy.state_dict().items()},
            "stats": stats,
            "kl_coef": kl_ctl.value,
            "trace": observer.events,
            "ref_state_dict": {k: v.detach().clone() for k, v in ref_policy.state_dict().items()},
        }

    return run_ppo_step


#: ``ppo-course check`` (the student's own process) calls it from here; the sandbox's children use the
#: copy captured before the student's import (:func:`trusted_operations`).
run_ppo_step = _make_ppo_step_runner()
