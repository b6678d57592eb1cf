"""Helpers of exercise 7's hidden graders (grader/hidden/test_ex7_ppo_step.py), apart to keep that file short.

`Tracking`: the known-good table whose RolloutBuffer remembers what every buffer
held (the purge test); `purge_diagnosis`: the purge test's verdict on those
buffers (`_held_rollout`: whether a buffer held the reference step's own rollout); `evaluate_mean_score`: the toy task's mean
score of a policy (the training-run test); `deep_runs_agree`: the own-pieces report's
gradient check. Book fig. 5.1, §5.5.
"""

from __future__ import annotations

import torch

from grader.hidden.cache import cached
from grader.hidden.ex7_payload import is_drawn_state
from ppo_course.grading_kit import compare


class Tracking:
    """A known-good table whose RolloutBuffer (the reference's, living in this process) remembers its
    instances, so that the default parity run also shows whether the step purged its buffer."""

    def __init__(self):
        import ppo_reference
        from grader.sandbox import KnownGood

        created: list = []
        self.created = created

        class TrackingBuffer(ppo_reference.RolloutBuffer):
            def __init__(self):
                super().__init__()
                self.trained = False
                self.trained_on = 0  # sequences held when training started
                self.added: list[dict] = []  # the fields of every add (the parent's own copies)
                created.append(self)

            def add(self, **fields):
                super().add(**fields)
                self.added.append({k: v.detach().clone() for k, v in fields.items() if isinstance(v, torch.Tensor)})

            def start_training(self):
                super().start_training()
                self.trained = True
                self.trained_on = len(self)

        self.known_good = KnownGood.reference()
        self.known_good.table["ex5_rollout_buffer"]["RolloutBuffer"] = TrackingBuffer


def _held_rollout(buf, rollout: dict) -> bool:
    """True when the buffer's added fields, stacked, are the reference step's rollout on this payload: the
    same responses and mask, and logp_old and advantages within the trace tolerance (float rounding)."""
    ref_add = next((e for e in rollout["trace"] if e.get("ev") == "add"), None)
    if ref_add is None or not buf.added:
        return False
    want = ref_add["fields"]
    try:
        got = {k: torch.cat([a[k] for a in buf.added]) for k in ("responses", "mask", "logp_old", "advantages")}
    except (KeyError, RuntimeError, TypeError):
        return False
    mask = want["mask"].bool()
    if got["responses"].shape != want["responses"].shape or not torch.equal(got["responses"], want["responses"]) \
            or got["mask"].shape != mask.shape or not torch.equal(got["mask"].bool(), mask):
        return False
    return all(got[k].shape == want[k].shape and compare.close(got[k].double(), want[k].double(), rtol=1e-4,
                                                               atol=1e-4, mask=mask)
               for k in ("logp_old", "advantages"))


def purge_diagnosis(created: list, rollout: dict) -> tuple[str, str] | None:
    """The purge test's verdict on the buffers a step created: None when it passes, else (diagnosis, detail).

    A buffer that started training must have held this step's own rollout (`_held_rollout`), and every
    buffer the step created must end empty, in the collect phase (Book eq. 5.13's purge). A trained buffer
    whose fields do not read as the rollout (another field name, extra rows) must end purged too, so that a
    purged copy of the rollout beside it earns nothing.

    Args:
        created: the step's `Tracking` buffers (`Tracking.created`), in creation order.
        rollout: the reference step's result with its ``trace`` (the ``add`` event's fields).

    Returns:
        None, ``("wrong_value", why)`` when no trained buffer held the rollout, or ``("ppo_step_no_purge", "")``.
    """
    if not any(b.trained and _held_rollout(b, rollout) for b in created):
        return "wrong_value", "no rollout buffer held this step's own rollout when training started"
    if any(b.phase != "collect" or len(b) != 0 for b in created):
        return "ppo_step_no_purge", ""
    return None


def reference_policy_changed(payload: dict, got: dict) -> bool:
    """Whether the reference policy's weights after the student's step (`got["ref_state_dict"]`, returned by the
    harness) differ from the ones the payload gave it (bit for bit); False when the harness returned none."""
    given = payload.get("ref_state_dict") or payload["state_dict"]
    after = got.get("ref_state_dict")
    return after is not None and not compare.params_close(after, given, atol=0.0)


def deep_runs_agree(run_student, own, trusted, payload: dict) -> bool:
    """True when deep-mode runs of the student's step with its own pieces (`own`) and with trusted ones
    (`trusted`, the provider's modules) on `payload` show the same gradient norms before every optimizer step
    (`grader.mistakes.ppo_step_stages.same_gradients`); False when either run fails (nothing is confirmed).
    `run_student` is the hidden test's validated harness call."""
    from grader.mistakes.ppo_step_stages import same_gradients

    try:
        return same_gradients(run_student(own, payload, observe="deep"), run_student(trusted, payload, observe="deep"))
    except Exception:  # noqa: BLE001 - a failing run confirms nothing: the report stays
        return False


def evaluate_mean_score(state: dict, n: int = 64, seed: int = 999) -> float:
    """Mean toy score of n sampled responses (temperature 1) from a policy with these weights
    (cached per grader version and the weights' bytes; on the grader's disk too for a drawn initial state)."""
    return cached("ex7", ("evaluate_mean_score", state, n, seed), lambda: _evaluate_mean_score(state, n, seed),
                  persist=is_drawn_state(state))


def _evaluate_mean_score(state: dict, n: int, seed: int) -> float:
    from ppo_course import toy_task
    from ppo_course.model import CausalLMWithValueHead

    model = CausalLMWithValueHead(toy_task.policy_config())
    model.load_state_dict(state)
    model.eval()
    queries = toy_task.sample_queries(n, torch.Generator().manual_seed(seed))
    with torch.no_grad():
        gen = model.generate(queries, toy_task.MAX_NEW_TOKENS, 1.0, 1.0, torch.Generator().manual_seed(seed + 1))
    return float(toy_task.score(gen.responses, gen.mask).float().mean())
