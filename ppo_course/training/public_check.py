"""Naming the piece at fault without a reference: the student's public tests, in ``ppo-course check``'s words.

In the student bundle there is no reference step to replay a batch against,
so when ``train --mine`` sees an alarm it runs what ``ppo-course check`` runs
(``check_support.launch.run_public_tests``: the public tests of ex1–ex7 in a
child process, with check's CPU limits) on the student's folder, and names
the first exercise, in teaching order, whose public tests do not all pass:
its row of check's table (``check_support.summary.summarise``: "2/3
passed", "does not import (NameError)") and, for the first failing test,
check's diagnosis line (``grading_kit.diagnoses.describe``). When every
public test passes, the finding says so: the fault is then in how the step
combines the pieces (exercise 7, which the public tests check less fully
than the hidden ones) or in the run's hyper-parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ppo_course.syllabus import EXERCISES

__all__ = ["PublicFinding", "public_tests_finding"]

#: CPU seconds and wall-clock backstop of the public-test run (``check``'s defaults).
CPU_SECONDS, TIMEOUT = 120, 600.0


@dataclass(frozen=True)
class PublicFinding:
    """What the public tests say after an alarm at ``step``.

    Attributes:
        step: the 1-based step whose alarm asked for the tests.
        exercise: the first exercise stem whose public tests do not all pass, or None when all pass.
        status: check's status of that exercise ("2/3 passed", "not implemented", ...), or "" with None.
        lines: check's words about it: its notes and the first failing test's diagnosis line.
        error: why the public tests could not run to the end (None when they did).
    """

    step: int
    exercise: str | None
    status: str
    lines: tuple[str, ...] = ()
    error: str | None = None

    def words(self) -> str:
        """The sentence the student reads (the piece, check's status and diagnosis; or that all pass)."""
        if self.error is not None:
            return f"the public tests (what ppo-course check runs) could not run to the end: {self.error}"
        if self.exercise is None:
            return ("your public tests (what ppo-course check runs) all pass for ex1-ex7: the fault is in how your "
                    "ppo_step (exercise 7) combines the pieces, which the public tests check less fully than the "
                    "hidden ones, or in the run's hyper-parameters (compare with the reference's curve)")
        head = (f"the first of your pieces whose public tests fail is {self.exercise} "
                f"(ppo-course check: {self.status})")
        return "\n    ".join([head, *self.lines])


def _check_words(outcome) -> str:
    """check's one line for a failing test: ``[id] message`` for a known mistake, else its first detail line."""
    from ppo_course.grading_kit.diagnoses import DIAGNOSES, describe

    if outcome.diagnosis in DIAGNOSES:
        return f"{outcome.test}: {describe(outcome.diagnosis)}"
    first = (outcome.detail.strip().splitlines() or [outcome.diagnosis or "failed"])[0]
    return f"{outcome.test}: {first[:300]}"


def public_tests_finding(exercises_dir: str | Path, step: int,
                         stems: tuple[str, ...] = EXERCISES) -> PublicFinding:
    """Run the public tests of ``stems`` on ``exercises_dir`` (as ``check`` does) and name the first failing one.

    Args:
        exercises_dir: the student's folder.
        step: the step whose alarm asked (kept in the finding).
        stems: the exercises to test, in the order they are named (teaching order).

    Returns:
        A ``PublicFinding``. Never raises for the student's code: a test run that died is its ``error``.
    """
    from ppo_course.check_support.launch import run_public_tests
    from ppo_course.check_support.summary import summarise

    folder = Path(exercises_dir).resolve()
    present = [s for s in stems if (folder / f"{s}.py").is_file()]
    got = run_public_tests(folder, present, CPU_SECONDS, TIMEOUT)
    if got.error is not None:
        return PublicFinding(step, None, "", error=got.error[:300])
    for row in summarise(got, folder, list(stems)):
        if row.state == "graded" and row.total and row.passed == row.total:
            continue
        lines = list(row.lines) + [_check_words(o) for o in row.panels[:1]]
        return PublicFinding(step, row.stem, row.status, tuple(ln[:400] for ln in lines))
    return PublicFinding(step, None, "")
