"""The reference side of ``ppo-course train --mine`` on an instructor's (or self-learner's) install.

``ReferenceTrainSide`` gives the student-side run (``ppo_course.training``)
what only the reference has: its pieces (for a stub to fall back to), its
``ppo_step`` reading the student's pieces (for a stub exercise 7), its own
run (the curves beside the student's) and the replay of one step's batch
that names the student's first piece to differ from the reference's.

The replay (``diagnose``) reuses exercise 7's grading machinery: the step is
run once by the student's code in the harness with the observer's deep mode
(``ppo_course.sandbox.harness.run_ppo_step``) and once by the reference
(``grader.mistakes.buggy_ppo_step.run_reference_step``) from the same
payload; then each of the student's ex1–ex6 pieces is called on the inputs
the reference's trace shows for its stage, in the order the step uses them
(log-probs, per-token KL and shaped rewards, GAE and whitening, the loss, the
buffer, the KL controller) and compared with the reference's; the first
that differs is named, with the catalogued mistake its output matches
(``grader.mistakes.buggy_variants``). When every piece agrees, exercise 7's
own stage comparison (``ppo_step_diagnosis.diagnose``, then
``ppo_step_stages.first_departing_stage``) names the step's stage. The words
are ``ppo-course check``'s (``ppo_course.grading_kit.diagnoses``).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import torch

import ppo_reference
from grader.mistakes import buggy_variants
from grader.mistakes.buggy_ppo_step import run_reference_step
from grader.mistakes.ppo_step_diagnosis import ATOL, RTOL, diagnose as diagnose_step
from grader.mistakes.ppo_step_stages import STAGES, first_departing_stage, same_gradients
from ppo_course.grading_kit.compare import close, params_close
from ppo_course.training.diagnosis import Finding

__all__ = ["ReferenceTrainSide", "STEP_PIECES"]

#: The names the reference's ``ppo_step`` module reads at call time, and the exercise that owns each.
STEP_PIECES: dict[str, str] = {
    "logprobs_from_logits": "ex1_ratio",
    "ppo_loss": "ex3_full_loss",
    "compute_gae": "ex4_gae",
    "whiten": "ex4_gae",
    "RolloutBuffer": "ex5_rollout_buffer",
    "per_token_kl": "ex6_kl_reward",
    "kl_shaped_rewards": "ex6_kl_reward",
}
#: Parameters after a replayed step: exercise 7's parity tolerance (grader/hidden/test_ex7_ppo_step.py).
PARAM_ATOL = 2e-5


class ReferenceTrainSide:
    """``ppo_course.training.pieces.ReferenceSide`` backed by ``ppo_reference`` and the grader's step diagnosis."""

    def __init__(self) -> None:
        from ppo_course import __version__

        self.version = f"ppo_reference {__version__}"

    def piece(self, name: str) -> Any:
        """The reference's object for a contract name (``ppo_reference``'s top level)."""
        return getattr(ppo_reference, name)

    def step_with(self, modules: dict[str, Any]) -> Callable[..., dict[str, float]]:
        """``ppo_reference.ppo_step`` with each piece of ``STEP_PIECES`` read from ``modules`` at call time."""
        import importlib

        # The module, not the function of the same name that ppo_reference's top level exports.
        step_module = importlib.import_module("ppo_reference.ppo_step")

        def ppo_step(*args: Any, **kwargs: Any) -> dict[str, float]:
            saved = {name: getattr(step_module, name) for name in STEP_PIECES}
            try:
                for name, stem in STEP_PIECES.items():
                    setattr(step_module, name, getattr(modules[stem], name))
                return step_module.ppo_step(*args, **kwargs)
            finally:
                for name, value in saved.items():
                    setattr(step_module, name, value)

        return ppo_step

    def run(self, config: Any, steps: int, *, device: str, console: Any, show_progress: bool) -> list[dict]:
        """The reference's run (``ppo_reference.train.train``), no per-step lines."""
        from ppo_reference.train import train

        return train(config, steps, device=device, log_every=0, console=console, show_progress=show_progress)

    def diagnose(self, inputs: Any, config: Any, mine: Any) -> Finding:
        """Replay the step that ``inputs`` started with the student's pieces and the reference's; name the first
        of the student's pieces that differs (see the module docstring). Never raises: a replay that fails says so.

        Args:
            inputs: a ``ppo_course.training.loop.StepInputs``.
            config: the run's ``PPOConfig``.
            mine: the run's ``ppo_course.training.pieces.MinePieces``.
        """
        from ppo_course import toy_task

        payload = {"model_config": toy_task.policy_config().model_dump(), "state_dict": inputs.state_dict,
                   "ref_state_dict": inputs.ref_state_dict, "queries": inputs.queries,
                   "ppo_config": config.model_dump(), "seed": int(config.seed) + inputs.step,
                   "kl_coef": inputs.kl_coef}
        try:
            want = run_reference_step(dict(payload))
        except Exception as exc:  # noqa: BLE001 - the reference failing here is a bug to show, not the student's
            return Finding(inputs.step, None, None, None, f"the reference's replay failed ({type(exc).__name__}: {exc})")
        found = _first_piece(payload, want, config, mine.modules)
        if found is not None:
            return Finding(inputs.step, *found)
        if "ppo_step" in mine.fallen_back.get("ex7_ppo_step", []):
            others = [f"{stem}.{name}" for stem, names in mine.fallen_back.items() for name in names
                      if name != "ppo_step"]
            return Finding(inputs.step, None, None, None, "exercise 7's ppo_step is still a stub, so the reference's "
                           "step ran in its place" + (f" (and the reference's {', '.join(others)} in place of those "
                                                      "stubs, not compared)" if others else "")
                           + "; so the runs drifted apart by float rounding or the hyper-parameters")
        own = {stem: types.SimpleNamespace(**{n: getattr(ppo_reference, n) for n, s in STEP_PIECES.items() if s == stem})
               for stem in set(STEP_PIECES.values())}
        return _step_finding(inputs.step, payload, want, config, mine, self.step_with(own))


def _step_finding(step: int, payload: dict, want: dict, config: Any, mine: Any, reference_step: Callable) -> Finding:
    """Exercise 7's own verdict when every ex1–ex6 piece agrees: the named mistake or the first departing stage.

    ``reference_step`` (the reference's step with its own pieces) is run in the same deep harness as the student's,
    so that the gradient norms at each optimizer step compare like with like (``same_gradients``).
    """
    from ppo_course.sandbox.harness import run_ppo_step

    try:
        got = run_ppo_step(types.SimpleNamespace(ppo_step=mine.ppo_step), {**payload, "observe": "deep"})
    except Exception as exc:  # noqa: BLE001 - the student's step raised on its own batch
        return Finding(step, "ex7_ppo_step", "ppo_step", None, f"it raised {type(exc).__name__}: {str(exc)[:300]}")
    named = _quiet(lambda: diagnose_step(got, want, config.model_dump()))
    if named:
        return Finding(step, "ex7_ppo_step", "ppo_step", named, "every one of your ex1-ex6 pieces agrees with the "
                       "reference's here; the step itself does something the stub's order does not")
    stage = first_departing_stage(got, want)
    # Every stage up to the losses agrees and so do the gradients at each optimizer step: what is left is rounding,
    # which Adam's per-coordinate normalisation amplifies on near-zero gradients (ppo_step_stages.same_gradients).
    if params_close(got["state_dict"], want["state_dict"], atol=PARAM_ATOL) or (stage == STAGES[-1][1] and _quiet(
            lambda: same_gradients(got, run_ppo_step(types.SimpleNamespace(ppo_step=reference_step),
                                                     {**payload, "observe": "deep"})))):
        return Finding(step, None, None, None, "your step agrees with the reference's stage by stage and gradient by "
                       "gradient; the runs drifted apart by float rounding (two implementations round differently, "
                       "and one sampled token that flips changes the rest of the run), or the hyper-parameters did it")
    where = (f"the step first departs from the reference's at its stage '{stage.removeprefix('ppo_step_stage_')}'"
             if stage else "the step's parameters afterwards are not the reference's")
    return Finding(step, "ex7_ppo_step", "ppo_step", stage, where)


def _quiet(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:  # noqa: BLE001 - a diagnosis never fails the run; say less instead
        return None


def _event(want: dict, ev: str) -> dict:
    return next(e for e in want["trace"] if e.get("ev") == ev)


def _named(function: str, args: tuple, got: Any, variant_pick: Callable[[Any], Any] = lambda o: o,
           mask: torch.Tensor | None = None) -> str | None:
    """The catalogued mistake of ``function`` whose output on ``args`` (``variant_pick`` of it) matches ``got``."""
    try:
        table = buggy_variants.candidates(function, args, {}, signature_of=getattr(ppo_reference, function),
                                          pick=variant_pick)
    except (KeyError, TypeError):
        return None
    for diagnosis, thunk in table:
        if _quiet(lambda: close(got, thunk(), rtol=RTOL, atol=ATOL, mask=mask)):
            return diagnosis
    return None


def _compare(stem: str, name: str, modules: dict, args: tuple, mask: torch.Tensor | None = None) -> tuple | None:
    """(stem, name, diagnosis, detail) when the student's ``name`` differs from the reference's on ``args``.

    A tuple output (GAE's advantages and returns) is compared element by element; a catalogued mistake is
    looked for on the first element that differs.
    """
    want = getattr(ppo_reference, name)(*args)
    got = getattr(modules[stem], name)(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    if isinstance(want, tuple):
        ok = [isinstance(got, tuple) and len(got) == len(want) and close(got[i], w, rtol=RTOL, atol=ATOL, mask=mask)
              for i, w in enumerate(want)]
        same, i = all(ok), ok.index(False) if not all(ok) else 0
        named = None if same or not isinstance(got, tuple) else _named(name, args, got[i], lambda o: o[i], mask)
    else:
        same = close(got, want, rtol=RTOL, atol=ATOL, mask=mask)
        named = None if same else _named(name, args, got, mask=mask)
    if same:
        return None
    return stem, name, named, f"{name} on this step's inputs gives other values than the reference's"


def _first_piece(payload: dict, want: dict, config: Any, modules: dict) -> tuple | None:
    """The first of the student's ex1–ex6 pieces that differs on the reference's intermediates, or None."""
    from ppo_course.sandbox.harness import build_setting

    gen, reward, kr, gae, add = (_event(want, e) for e in ("generate", "reward", "kl_rewards", "gae", "add"))
    mask, fields = gen["mask"], add["fields"]
    policy = build_setting(payload)[0]
    with torch.no_grad():
        logits, _ = policy.forward_response(payload["queries"], gen["responses"], config.temperature)
    checks: list[tuple[str, str, Callable[[], tuple | None]]] = [
        ("ex1_ratio", "logprobs_from_logits",
         lambda: _compare("ex1_ratio", "logprobs_from_logits", modules, (logits, gen["responses"]))),
        ("ex6_kl_reward", "per_token_kl",
         lambda: _compare("ex6_kl_reward", "per_token_kl", modules, (kr["logp"], kr["ref_logp"], mask), mask=mask)),
        ("ex6_kl_reward", "kl_shaped_rewards",
         lambda: _compare("ex6_kl_reward", "kl_shaped_rewards", modules,
                          (reward["scores"], kr["logp"], kr["ref_logp"], mask, kr["kl_coef"], kr["placement"]), mask=mask)),
        ("ex4_gae", "compute_gae",
         lambda: _compare("ex4_gae", "compute_gae", modules,
                          (gae["rewards"], gae["values"], mask, gae["gamma"], gae["lam"]), mask=mask)),
        ("ex4_gae", "whiten", lambda: _compare("ex4_gae", "whiten", modules, (gae["advantages"], mask, True), mask=mask)),
        ("ex3_full_loss", "entropy_from_logits",
         lambda: _compare("ex3_full_loss", "entropy_from_logits", modules, (logits, mask))),
        ("ex3_full_loss", "clipped_value_loss",
         lambda: _compare("ex3_full_loss", "clipped_value_loss", modules,
                          (_moved(fields["values"], 1), fields["values"], fields["returns"], mask, config.cliprange_value))),
        ("ex3_full_loss", "ppo_loss", lambda: _loss(modules, fields, logits, config)),
        ("ex5_rollout_buffer", "RolloutBuffer", lambda: _buffer(modules, fields, config)),
        ("ex6_kl_reward", "AdaptiveKLController", lambda: _controller(modules, want, payload, config)),
    ]
    if config.whiten_rewards:
        checks.insert(3, ("ex4_gae", "whiten",
                          lambda: _compare("ex4_gae", "whiten", modules, (kr["out"], mask, False), mask=mask)))
    for stem, name, check in checks:
        try:
            found = check()
        except Exception as exc:  # noqa: BLE001 - the student's piece raised on the reference's inputs
            found = (stem, name, None, f"it raised {type(exc).__name__} on this step's inputs: {str(exc)[:300]}")
        if found is not None:
            return found
    return None


def _moved(x: torch.Tensor, seed: int) -> torch.Tensor:
    """``x`` plus seeded noise of scale 0.3: a policy or critic that has moved since the rollout (r ≠ 1)."""
    return x + 0.3 * torch.randn(x.shape, generator=torch.Generator().manual_seed(seed), dtype=x.dtype)


def _loss(modules: dict, fields: dict, logits: torch.Tensor, config: Any) -> tuple | None:
    """The student's ``ppo_loss`` against the reference's on the buffer's fields, with a moved policy (r ≠ 1)."""
    logp_new, values = _moved(fields["logp_old"], 0), _moved(fields["values"], 1)
    args = (logp_new, fields["logp_old"], fields["advantages"], values, fields["values"], fields["returns"], logits,
            fields["mask"], config.cliprange, config.cliprange_value, config.vf_coef, config.ent_coef)
    want_loss, want_stats = ppo_reference.ppo_loss(*args)
    got_loss, got_stats = modules["ex3_full_loss"].ppo_loss(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    bad = [] if close(got_loss, want_loss, rtol=RTOL, atol=ATOL) else ["the loss"]
    bad += [k for k in ("approx_kl", "clipfrac", "entropy", "value_loss")
            if k in want_stats and not close(_float(got_stats, k), float(want_stats[k]), rtol=RTOL, atol=ATOL)]
    if not bad:
        return None
    named = _named("ppo_loss", args, got_loss) if "the loss" in bad else None
    return "ex3_full_loss", "ppo_loss", named, f"ppo_loss differs in {', '.join(bad)} on this step's mini-batch data"


def _float(stats: Any, key: str) -> Any:
    try:
        return float(stats[key])
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def _buffer(modules: dict, fields: dict, config: Any) -> tuple | None:
    """The student's ``RolloutBuffer`` against the reference's: one epoch of mini-batches from one seed."""
    batches = []
    for cls in (ppo_reference.RolloutBuffer, modules["ex5_rollout_buffer"].RolloutBuffer):
        buf = cls()
        buf.add(**{k: v.clone() for k, v in fields.items()})
        buf.start_training()
        batches.append(list(buf.minibatches(config.mini_batch_size, torch.Generator().manual_seed(1))))
        buf.purge()
    want, got = batches
    same = len(got) == len(want) and all(set(g) == set(w) and all(close(g[k], w[k], rtol=0.0, atol=0.0) for k in w)
                                         for g, w in zip(got, want))
    return None if same else ("ex5_rollout_buffer", "RolloutBuffer", None,
                              "its mini-batches (one epoch, one seed) are not the reference's")


def _controller(modules: dict, want: dict, payload: dict, config: Any) -> tuple | None:
    """The student's ``AdaptiveKLController`` after this step's update against the reference's."""
    update = _event(want, "kl_update")
    values = []
    for cls in (ppo_reference.AdaptiveKLController, modules["ex6_kl_reward"].AdaptiveKLController):
        ctl = cls(payload["kl_coef"], config.target_kl, config.kl_horizon)
        ctl.update(update["current"], update["n_steps"])
        values.append(ctl.value)
    if close(_float({"v": values[1]}, "v"), float(values[0]), rtol=1e-9, atol=1e-12):
        return None
    return ("ex6_kl_reward", "AdaptiveKLController", None,
            f"after this step's update its value is {values[1]!r}, the reference's {values[0]:.6g}")
