"""What one ``ppo_step`` did, observed from outside its code (exercise 7's intermediate quantities).

The grader compares a student's step with the reference's not only by the
parameters after the step but stage by stage (Book fig. 5.1): the sampled
responses, the scores, ``logp_old``/``values``/``advantages``/``returns`` as
stored in the rollout buffer, the KL coefficient and placement of the shaped
rewards, ``gamma``/``lam`` of GAE, the temperatures of every forward pass, the
mini-batch sizes, the loss hyper-parameters, each optimizer step's gradient
norm and the controller's update. That tells *which* stage went wrong.

Nothing the student writes changes: :class:`StepObserver` wraps the objects
the caller hands to ``ppo_step`` (the policies' ``generate`` and
``forward_response``, the reward function, the optimizer through
``register_step_pre_hook``, the KL controller) and, for the duration of the
call, the functions of the sibling modules (``ex1_ratio`` ... ``ex6_kl_reward``,
looked up as module attributes, as the stub does). A step that imported the
functions by name (``from ex4_gae import whiten``) is observed less; the
grader then says less.

The same observer runs around the reference's step in the grading process
(``grader.mistakes.buggy_ppo_step``), so both traces have one format. In the child
the trace is data the student could forge: the grader uses it to *name* a
mistake, never to award a point.

Trace: a list of events, each a dict with ``"ev"`` and plain fields (floats,
ints, bools, strings, detached CPU tensor copies):

=================  ===============================================================
``generate``       ``temperature, top_p, max_new_tokens, given_generator, responses, mask``
``reward``         ``same_responses`` (bool: the generated responses and mask), ``scores``
``forward``        ``who`` ("policy" | "ref"), ``temperature``, ``grad`` (bool), ``rows``
``kl_rewards``     ``kl_coef, placement, logp, ref_logp, out``
``whiten``         ``shift_mean``, ``out``
``gae``            ``gamma, lam, rewards, values, advantages, returns``
``add``            ``fields`` ({name: tensor})
``minibatches``    ``size``, ``given_generator``
``loss``           ``rows, old_is_new, clip_eps, clip_range_value, vf_coef, ent_coef, loss``
``step``           ``grad_norm`` (total 2-norm of the gradients when ``optimizer.step()`` runs)
``zero_grad``      (nothing)
``kl_update``      ``current, n_steps, value_before``
``purge``          (nothing)
=================  ===============================================================

With ``deep=True`` (the public test of ``ppo-course check``) the
observer also measures what only instrumentation shows (``Tensor.backward`` and
``torch.nn.utils.clip_grad_norm_`` are wrapped for the duration of the call):

=================  ===============================================================
``forward``        also ``logp`` (log-softmax of the logits at the response tokens) and
                   ``values`` of a no-grad pass (the rollout's own quantities)
``step``           also ``moved`` (bool: a parameter changed since the previous
                   optimizer step, outside the optimizer)
``backward``       ``value`` (the scalar ``Tensor.backward()`` was called on: with the
                   last ``loss`` event it shows the accumulation scaling)
``clip``           ``max_norm, total_norm`` (``torch.nn.utils.clip_grad_norm_``: the
                   norm before clipping)
``end``            ``moved`` (a parameter changed after the last optimizer step)
=================  ===============================================================
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

#: Positional parameter names of the contract's functions (shared/CONTRACT.md), to read a call's arguments
#: however they were passed.
SIGNATURES: dict[str, tuple[str, ...]] = {
    "ppo_loss": ("logp_new", "logp_old", "advantages", "values", "old_values", "returns", "logits", "mask",
                 "clip_eps", "clip_range_value", "vf_coef", "ent_coef"),
    "kl_shaped_rewards": ("scores", "logp", "ref_logp", "mask", "kl_coef", "placement"),
    "compute_gae": ("rewards", "values", "mask", "gamma", "lam"),
    "whiten": ("x", "mask", "shift_mean"),
    "generate": ("queries", "max_new_tokens", "temperature", "top_p", "generator"),
    "forward_response": ("queries", "responses", "temperature"),
}
DEFAULTS: dict[str, dict[str, Any]] = {
    "ppo_loss": {"clip_eps": 0.2, "clip_range_value": 0.2, "vf_coef": 0.1, "ent_coef": 0.01},
    "kl_shaped_rewards": {"kl_coef": 0.05, "placement": "per_token"},
    "compute_gae": {"gamma": 1.0, "lam": 0.95},
    "whiten": {"shift_mean": True},
    "generate": {"temperature": 1.0, "top_p": 1.0, "generator": None},
    "forward_response": {"temperature": 1.0},
}
#: The names the stub reaches through each sibling module.
MODULE_NAMES: dict[str, tuple[str, ...]] = {
    "ex3_full_loss": ("ppo_loss",),
    "ex4_gae": ("compute_gae", "whiten"),
    "ex5_rollout_buffer": ("RolloutBuffer",),
    "ex6_kl_reward": ("kl_shaped_rewards",),
}
MAX_EVENTS = 2000  # a step of the graders' configs makes < 200; a runaway loop is cut off


def _arguments(name: str, args: tuple, kwargs: dict) -> dict[str, Any]:
    names = SIGNATURES[name]
    got = dict(DEFAULTS.get(name, {}))
    got.update(zip(names, args))
    got.update({k: v for k, v in kwargs.items() if k in names})
    return got


def _tensor(x: Any) -> torch.Tensor | None:
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu").clone()
    return None


def _number(x: Any) -> float | None:
    if isinstance(x, torch.Tensor):
        x = x.detach()
    try:
        return float(x)
    except Exception:  # noqa: BLE001 - a tensor of several values, None, a string: not a number
        return None


class _ObservedBuffer:
    """Delegates to the real buffer; records ``add``, ``minibatches`` and ``purge``."""

    def __init__(self, observer: "StepObserver", inner: Any) -> None:
        object.__setattr__(self, "_observer", observer)
        object.__setattr__(self, "_inner", inner)

    def add(self, *args: Any, **fields: Any) -> Any:
        self._observer.record("add", fields={k: t for k, v in fields.items() if (t := _tensor(v)) is not None})
        return self._inner.add(*args, **fields)

    def minibatches(self, *args: Any, **kwargs: Any) -> Any:
        size = args[0] if args else kwargs.get("mini_batch_size")
        gen = args[1] if len(args) > 1 else kwargs.get("generator")
        self._observer.record("minibatches", size=size if isinstance(size, int) else _number(size),
                              given_generator=gen is self._observer.generator)
        return self._inner.minibatches(*args, **kwargs)

    def purge(self, *args: Any, **kwargs: Any) -> Any:
        self._observer.record("purge")
        return self._inner.purge(*args, **kwargs)

    def __len__(self) -> int:
        return len(self._inner)

    def __iter__(self) -> Any:
        return iter(self._inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)


class _ObservedController:
    """Delegates to the KL controller; records ``update`` (with the value it had before)."""

    def __init__(self, observer: "StepObserver", inner: Any) -> None:
        object.__setattr__(self, "_observer", observer)
        object.__setattr__(self, "_inner", inner)

    @property
    def value(self) -> Any:
        return self._inner.value

    def update(self, *args: Any, **kwargs: Any) -> Any:
        current = args[0] if args else kwargs.get("current")
        n_steps = args[1] if len(args) > 1 else kwargs.get("n_steps")
        self._observer.record("kl_update", current=_number(current), n_steps=_number(n_steps),
                              value_before=_number(self._inner.value))
        return self._inner.update(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)


class StepObserver:
    """Wraps one step's setting and sibling modules; ``events`` is the trace (see the module docstring).

    Args:
        policy, ref_policy, optimizer, generator: the setting of ``harness.build_setting``.
        reward_fn: the reward function handed to the step.
        kl_ctl: the KL controller handed to the step.
        modules: ``{stem: module or namespace}`` whose functions (``MODULE_NAMES``) are wrapped
            while the observer is active (``with observer: ...``).

    Use ``observer.reward_fn`` and ``observer.kl_ctl`` as the step's arguments.
    """

    def __init__(self, policy: Any, ref_policy: Any, optimizer: Any, generator: torch.Generator,
                 reward_fn: Callable, kl_ctl: Any, modules: dict[str, Any], deep: bool = False) -> None:
        self.events: list[dict] = []
        self.deep = deep
        self._params = [p for p in policy.parameters()]
        self._snapshot: list[torch.Tensor] = []

        self.generator = generator
        self._policy, self._ref_policy, self._optimizer = policy, ref_policy, optimizer
        self._modules = modules
        self._saved: list[tuple[Any, str, Any]] = []
        self._hook: Any = None
        self._post_hook: Any = None
        self._last_responses: torch.Tensor | None = None
        self._last_mask: torch.Tensor | None = None
        self.reward_fn = self._wrap_reward(reward_fn)
        self.kl_ctl = _ObservedController(self, kl_ctl)

    # -- recording ----------------------------------------------------------------
    def record(self, ev: str, **fields: Any) -> None:
        """Append one event (dropped past ``MAX_EVENTS``)."""
        if len(self.events) < MAX_EVENTS:
            self.events.append({"ev": ev, **fields})

    def _wrap_reward(self, reward_fn: Callable) -> Callable:
        def reward(responses: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
            scores = reward_fn(responses, mask, *rest, **kw)
            last, last_mask = self._last_responses, self._last_mask
            same = isinstance(responses, torch.Tensor) and last is not None and responses.shape == last.shape \
                and bool(torch.equal(responses.detach().cpu(), last)) and isinstance(mask, torch.Tensor) \
                and last_mask is not None and mask.shape == last_mask.shape \
                and bool(torch.equal(mask.detach().cpu().bool(), last_mask.bool()))
            self.record("reward", same_responses=same, scores=_tensor(scores))
            return scores
        return reward

    def _wrap_generate(self, fn: Callable) -> Callable:
        def generate(*args: Any, **kwargs: Any) -> Any:
            a = _arguments("generate", args, kwargs)
            out = fn(*args, **kwargs)
            responses, mask = getattr(out, "responses", None), getattr(out, "mask", None)
            self._last_responses, self._last_mask = _tensor(responses), _tensor(mask)
            self.record("generate", temperature=_number(a.get("temperature")), top_p=_number(a.get("top_p")),
                        max_new_tokens=_number(a.get("max_new_tokens")),
                        given_generator=a.get("generator") is self.generator, responses=_tensor(responses),
                        mask=_tensor(mask))
            return out
        return generate

    def _wrap_forward(self, fn: Callable, who: str) -> Callable:
        def forward_response(*args: Any, **kwargs: Any) -> Any:
            a = _arguments("forward_response", args, kwargs)
            rows = a.get("queries").shape[0] if isinstance(a.get("queries"), torch.Tensor) else None
            grad = torch.is_grad_enabled()
            out = fn(*args, **kwargs)
            extra: dict[str, Any] = {}
            if self.deep and not grad:
                extra = self._rollout_quantities(out, a.get("responses"))
            self.record("forward", who=who, temperature=_number(a.get("temperature")), grad=grad, rows=rows, **extra)
            return out
        return forward_response

    @staticmethod
    def _rollout_quantities(out: Any, responses: Any) -> dict[str, Any]:
        """``logp`` and ``values`` of a no-grad forward pass (deep mode), or {} when they cannot be read."""
        try:
            logits, values = out
            with torch.no_grad():
                logp = torch.log_softmax(logits.double(), dim=-1).gather(-1, responses.unsqueeze(-1)).squeeze(-1)
            return {"logp": _tensor(logp), "values": _tensor(values)}
        except Exception:  # noqa: BLE001 - an odd output is the step's to fail on, not the observer's
            return {}

    def _wrap_function(self, name: str, fn: Callable) -> Callable:
        def observed(*args: Any, **kwargs: Any) -> Any:
            a = _arguments(name, args, kwargs)
            out = fn(*args, **kwargs)
            if name == "ppo_loss":
                loss = out[0] if isinstance(out, (tuple, list)) and out else None
                rows = a.get("mask").shape[0] if isinstance(a.get("mask"), torch.Tensor) else None
                new, old = a.get("logp_new"), a.get("logp_old")
                old_is_new = isinstance(new, torch.Tensor) and isinstance(old, torch.Tensor) \
                    and new.shape == old.shape and bool(torch.equal(new.detach(), old.detach()))
                self.record("loss", rows=rows, old_is_new=old_is_new, clip_eps=_number(a.get("clip_eps")),
                            clip_range_value=_number(a.get("clip_range_value")), vf_coef=_number(a.get("vf_coef")),
                            ent_coef=_number(a.get("ent_coef")), loss=_number(loss))

            elif name == "kl_shaped_rewards":
                self.record("kl_rewards", kl_coef=_number(a.get("kl_coef")), placement=str(a.get("placement")),
                            logp=_tensor(a.get("logp")), ref_logp=_tensor(a.get("ref_logp")), out=_tensor(out))
            elif name == "whiten":
                self.record("whiten", shift_mean=bool(a.get("shift_mean")), out=_tensor(out))
            elif name == "compute_gae":
                adv, ret = (out[0], out[1]) if isinstance(out, (tuple, list)) and len(out) == 2 else (None, None)
                self.record("gae", gamma=_number(a.get("gamma")), lam=_number(a.get("lam")),
                            rewards=_tensor(a.get("rewards")), values=_tensor(a.get("values")),
                            advantages=_tensor(adv), returns=_tensor(ret))
            return out
        return observed

    def _wrap_buffer_class(self, cls: Any) -> Callable:
        def make(*args: Any, **kwargs: Any) -> Any:
            return _ObservedBuffer(self, cls(*args, **kwargs))
        return make

    def _pre_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        total = 0.0
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    total += float(p.grad.detach().double().pow(2).sum())
        if not self.deep:
            self.record("step", grad_norm=math.sqrt(total))
            return
        self.record("step", grad_norm=math.sqrt(total), moved=self._moved())

    def _post_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._snapshot = [p.detach().clone() for p in self._params]

    def _moved(self) -> bool:
        """A parameter differs from the last snapshot (taken at entry and after every optimizer step)."""
        return any(not torch.equal(p.detach(), s) for p, s in zip(self._params, self._snapshot))

    def _wrap_backward(self, fn: Callable) -> Callable:
        observer = self

        def backward(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(tensor, torch.Tensor) and tensor.numel() == 1:
                observer.record("backward", value=_number(tensor))
            return fn(tensor, *args, **kwargs)
        return backward

    def _wrap_clip(self, fn: Callable) -> Callable:
        def clip_grad_norm_(parameters: Any, max_norm: Any, *args: Any, **kwargs: Any) -> Any:
            total = fn(parameters, max_norm, *args, **kwargs)
            self.record("clip", max_norm=_number(max_norm), total_norm=_number(total))
            return total
        return clip_grad_norm_

    # -- activation -----------------------------------------------------------------
    def _patch(self, owner: Any, name: str, value: Any) -> None:
        had = name in vars(owner) if hasattr(owner, "__dict__") else False
        self._saved.append((owner, name, vars(owner)[name] if had else _MISSING))
        setattr(owner, name, value)

    def __enter__(self) -> "StepObserver":
        self._patch(self._policy, "generate", self._wrap_generate(self._policy.generate))
        self._patch(self._policy, "forward_response", self._wrap_forward(self._policy.forward_response, "policy"))
        self._patch(self._ref_policy, "forward_response",
                    self._wrap_forward(self._ref_policy.forward_response, "ref"))
        self._hook = self._optimizer.register_step_pre_hook(self._pre_step)
        if self.deep:
            self._snapshot = [p.detach().clone() for p in self._params]
            self._post_hook = self._optimizer.register_step_post_hook(self._post_step)
            self._patch(torch.nn.utils, "clip_grad_norm_", self._wrap_clip(torch.nn.utils.clip_grad_norm_))
            self._patch(torch.Tensor, "backward", self._wrap_backward(torch.Tensor.backward))
        zero_grad = self._optimizer.zero_grad

        def observed_zero_grad(*args: Any, **kwargs: Any) -> Any:
            self.record("zero_grad")
            return zero_grad(*args, **kwargs)

        self._patch(self._optimizer, "zero_grad", observed_zero_grad)
        for stem, names in MODULE_NAMES.items():
            module = self._modules.get(stem)
            if module is None:
                continue
            for name in names:
                fn = getattr(module, name, None)
                if fn is None:
                    continue
                wrapped = self._wrap_buffer_class(fn) if name == "RolloutBuffer" else self._wrap_function(name, fn)
                self._patch(module, name, wrapped)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._hook is not None:
            self._hook.remove()
        if self._post_hook is not None:
            self._post_hook.remove()
            self.record("end", moved=self._moved())
        for owner, name, old in reversed(self._saved):
            try:
                if old is _MISSING:
                    delattr(owner, name)
                else:
                    setattr(owner, name, old)
            except AttributeError:  # the student's code removed it already
                pass
        self._saved.clear()


_MISSING = object()
