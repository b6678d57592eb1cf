"""The outcome of grading one submission: `GradeResult`, results.json and feedback.md.

results.json follows Gradescope's autograder schema as the contract fixes it:
top level `score` (sum of the tests' scores), `tests` (each `name`, `score`,
`max_score`, `status` "passed"/"failed", `output`, `visibility`, `tags` holding
the module stem), and `extra_data` with `max_score`, `exercises`
(`{stem: {"score", "max_score"}}`) and `grader_version`. Anything that varies
between two gradings of the same submission (timings) lives under
`extra_data.timing` only, so that the rest is byte-identical.

Files are written atomically (``ppo_course.atomic_files``: temporary file in the same folder, fsync,
`os.replace`) so that a killed grader never leaves half a results.json.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from grader.points import EXERCISES, Visibility
from ppo_course.grading_kit.states import ExerciseState, error_place
from ppo_course.atomic_files import atomic_write_text
from ppo_course.text_safety import cap, fenced


class TestResult(BaseModel):
    """One graded test (one entry of results.json's `tests`)."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")

    exercise: str  # module stem, e.g. "ex4_gae"
    kind: Literal["hidden", "public"]
    test: str  # pytest function name
    score: float
    max_score: float
    status: Literal["passed", "failed"]
    output: str  # what the student reads; hidden tests never show inputs or expected values
    visibility: Visibility
    diagnosis: str | None = None  # a DIAGNOSES id when failed
    tags: list[str] = Field(default_factory=list)
    doc: str = ""  # what the test checks (its docstring's first line)
    detail: str = ""  # expected vs got and the failing input: public tests only, empty for hidden ones
    # A hidden test's grader-made finding: the fitted parameter against the call's, or where the outputs
    # differ (never an input or an expected value); empty for public tests (their detail holds it).
    finding: str = ""
    # A passed test worth 0 for now: the tests whose pass it waits for (grader/points.yaml: a public test's
    # hidden twins, a hidden property's `requires`); empty otherwise (and in a record read back from results.json).
    waits_for: list[str] = Field(default_factory=list)

    @property
    def name(self) -> str:
        """Stable, unique display name: "<stem> · <kind> · <test>"."""
        return f"{self.exercise} · {self.kind} · {self.test}"


class ExerciseResult(BaseModel):
    """Score of one exercise and, where the module could not be graded, why: one vocabulary, ``state``.

    ``state`` (``ppo_course.grading_kit.states.ExerciseState``, the words ``ppo-course check`` uses
    too) is graded, missing, syntax_error, import_error or not_implemented. results.json's
    ``extra_data.exercise_status`` (a contract format: graded / missing / broken) is derived from it
    (:attr:`status`), never stored beside it. A writer that still passes ``status`` (an older
    result, a test's stand-in) gets the state it means (missing -> missing, broken -> import_error,
    graded -> graded) unless it gives ``state`` too. Filled on the trusted side from the sandbox's typed
    import failure (``grader.sandbox.errors.StudentImportError``), never parsed from text:

    * ``error_type``: the import's exception class name, one of
      ``grader.sandbox.errors.ALLOWED_EXCEPTION_NAMES`` ("" when the import timed out or crashed);
    * ``error_line`` (1-based, at most ``MAX_LINENO``) and ``error_file`` (a plain base name such as
      "helper.py"): where a SyntaxError is, both or neither (None), and only where the student may
      be shown it (never from a child that held known-good pieces).
    """

    model_config = ConfigDict(extra="forbid")

    score: float
    max_score: float
    state: ExerciseState = "graded"
    message: str = ""
    error_type: str = ""
    error_line: int | None = Field(default=None, ge=1, le=1_000_000)  # = grader.sandbox.errors.MAX_LINENO
    error_file: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}\.py$")

    @model_validator(mode="before")
    @classmethod
    def _state_from_status(cls, data):
        """Accept the contract's ``status`` word as input: the state it means, unless ``state`` is given."""
        if isinstance(data, dict) and "status" in data:
            data = dict(data)
            status = data.pop("status")
            if data.get("state") is None:
                data["state"] = {"missing": "missing", "broken": "import_error"}.get(status, "graded")
        return data

    @model_validator(mode="after")
    def _check_error_type(self) -> "ExerciseResult":
        """Check ``error_type`` against the allow-list."""
        from grader.sandbox.errors import ALLOWED_EXCEPTION_NAMES  # (lazy: the package starts the sandbox's modules)

        if self.error_type and self.error_type not in ALLOWED_EXCEPTION_NAMES:
            raise ValueError(f"error_type {self.error_type!r} is not an allowed exception name")
        return self

    @property
    def status(self) -> Literal["graded", "missing", "broken"]:
        """results.json's word for :attr:`state`: missing, broken (syntax or import error) or graded."""
        return {"missing": "missing", "syntax_error": "broken", "import_error": "broken"}.get(self.state, "graded")

    def reason(self, stem: str) -> str:
        """The gradebook's short reason for an exercise that was not really graded, or "".

        "missing", "SyntaxError line 83", "SyntaxError in helper.py line 3", "ImportError",
        "does not import" (time-out or crash at import: no exception name), "not implemented".
        """
        if self.state == "missing":
            return "missing"
        if self.state in ("syntax_error", "import_error"):
            place = error_place(stem, self.error_line, self.error_file)
            return " ".join(filter(None, [self.error_type or "does not import", place]))
        if self.state == "not_implemented":
            return "not implemented"
        return ""


class GradeResult(BaseModel):
    """Everything `grade_submission` found; serialises to results.json and feedback.md.

    `status` is "graded" for any submission that was graded (whatever its
    score) and "rejected" when it could not be read at all (empty folder,
    corrupt zip); a rejected submission scores 0 and `message` says why.
    """

    model_config = ConfigDict(extra="forbid")

    submission: str
    status: Literal["graded", "rejected"]
    message: str = ""
    grader_version: str
    profile: Literal["full", "fast"]
    exercises: dict[str, ExerciseResult]
    tests: list[TestResult]
    #: True when the submission used up its grading time (``SubmissionLimits.timeout_s``) before every test
    #: ran: the scores are then incomplete, and the batch records the student as ``timed-out``.
    out_of_time: bool = False
    timing: dict[str, float] = Field(default_factory=dict)  # seconds; excluded from the determinism

    @property
    def score(self) -> float:
        """Sum of the tests' scores (rounded to 1e-6 to keep float sums reproducible)."""
        return round(sum(t.score for t in self.tests), 6)

    @property
    def max_score(self) -> float:
        """Sum of the max scores of the graded exercises."""
        return round(sum(e.max_score for e in self.exercises.values()), 6)

    def to_results_json(self) -> dict:
        """The Gradescope results.json dictionary (see the module docstring)."""
        return {
            "score": self.score,
            "output": cap(self.message) or f"Graded {len(self.tests)} tests: {self.score:g} / {self.max_score:g} points.",
            "tests": self.tests_json(self.tests),
            "extra_data": {
                "max_score": self.max_score,
                "exercises": {stem: {"score": e.score, "max_score": e.max_score}
                              for stem, e in self.exercises.items()},
                "grader_version": self.grader_version,
                "status": self.status,
                "profile": self.profile,
                "exercise_status": {stem: e.status for stem, e in self.exercises.items()},
                "timing": dict(self.timing),
                **({"out_of_time": True} if self.out_of_time else {}),
            },
        }

    @staticmethod
    def tests_json(tests: list[TestResult]) -> list[dict]:
        """results.json's ``tests`` entries of ``tests`` (contract format; read back by ``grader.records.gradebook.parse_results``)."""
        return [
            {
                "name": t.name,
                "score": t.score,
                "max_score": t.max_score,
                "status": t.status,
                "output": cap(t.output),
                "visibility": t.visibility,
                "tags": [t.exercise, t.kind, *([f"diagnosis:{t.diagnosis}"] if t.diagnosis else []), *t.tags],
            }
            for t in tests
        ]

    def feedback_markdown(self) -> str:
        """feedback.md: a summary table, then one section per exercise with what failed and why."""
        lines = ["# PPO course: grading feedback", ""]
        if self.status == "rejected":
            lines += ["**Your submission could not be graded:**", "", fenced(self.message), "",
                      f"Score: 0 / {self.max_score:g}", ""]
        lines += [f"**Total: {self.score:g} / {self.max_score:g} points**", "",
                  "| exercise | score | status |", "| --- | --- | --- |"]
        for stem, e in self.exercises.items():  # the state's words (check's): "not implemented", not "graded"
            lines.append(f"| `{stem}` | {e.score:g} / {e.max_score:g} | {e.state.replace('_', ' ')} |")
        lines.append("")
        from ppo_course.grading_kit.diagnoses import DIAGNOSES

        for stem in [s for s in EXERCISES if s in self.exercises]:
            e = self.exercises[stem]
            lines += [f"## `{stem}` — {e.score:g} / {e.max_score:g}", ""]
            if e.message:  # may quote the student's import error: fenced, never Markdown
                lines += [fenced(e.message), ""]
            tests = [t for t in self.tests if t.exercise == stem]
            failed = [t for t in tests if t.status == "failed" and t.max_score > 0]
            # A 0-point test of a module that is missing or does not import says nothing new: the
            # exercise's message already gives the reason.
            reported = [t for t in tests if t.status == "failed" and t.max_score == 0 and e.status == "graded"]
            waiting = [t for t in tests if t.status == "passed" and t.score < t.max_score]
            if tests and not failed and not waiting:
                lines += ["All graded tests passed." + (" One 0-point test is reported below." if len(reported) == 1
                          else f" {len(reported)} 0-point tests are reported below." if reported else ""), ""]
            if e.state == "not_implemented":  # every test raised NotImplementedError: one line, not one per test
                lines += [f"Not implemented yet: each of its {len(failed)} graded tests raised `NotImplementedError` "
                          "(the stub as released). Implement it, then run `ppo-course check` before you submit.", ""]
            elif failed and e.status == "graded":
                counts: dict[str, int] = {}
                for t in failed:
                    counts[t.diagnosis or "wrong_value"] = counts.get(t.diagnosis or "wrong_value", 0) + 1
                lines.append("What went wrong (most frequent first):")
                for diagnosis, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
                    lines.append(f"- **{diagnosis}** ({n} test{'s' if n > 1 else ''}): {DIAGNOSES.get(diagnosis, '')}")
                lines += ["", "Failed tests:"]
                for t in failed:
                    lines.append(f"- {t.kind} `{t.test}` ({t.score:g} / {t.max_score:g}): {t.doc} "
                                 f"[{t.diagnosis or 'wrong_value'}]")
                    if t.kind == "public" and t.detail:  # student-derived: capped, in a fence it cannot close
                        lines += ["", *[f"  {line}" for line in fenced(t.detail.strip()).splitlines()]]
                    elif t.kind == "hidden" and t.finding:  # grader-made, capped like every output
                        lines.append(f"  {cap(t.finding.strip())}")
                lines.append("")
            for t in reported:  # the docstring of a 0-point test may start by saying so: said once
                doc = t.doc.removeprefix("(0 points, reported)").strip()
                lines += [f"Reported (0 points): `{t.test}` did not pass: {doc} [{t.diagnosis}] "
                          f"{DIAGNOSES.get(t.diagnosis or '', '')}", ""]
            for t in waiting:  # passed, but its points wait for other tests: the sum must add up for the student
                twins = ", ".join(f"`{name}`" for name in t.waits_for) or "its hidden twins"
                lines += [f"Passed, 0 / {t.max_score:g} points for now: {t.kind} `{t.test}` counts once {twins} "
                          f"{'pass' if len(t.waits_for) != 1 else 'passes'} too.", ""]
            waiting_ids = {id(t) for t in waiting}
            passed = list(dict.fromkeys(t.test for t in tests if t.status == "passed" and id(t) not in waiting_ids))
            if passed and (failed or waiting):  # a public and a hidden test may share a name
                lines += ["Passed: " + ", ".join(f"`{name}`" for name in passed), ""]
        return "\n".join(lines).rstrip() + "\n"

    def write_results_json(self, path: str | os.PathLike) -> Path:
        """Write results.json atomically; returns its path."""
        text = json.dumps(self.to_results_json(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"
        return atomic_write_text(path, text)

    def write_feedback(self, path: str | os.PathLike) -> Path:
        """Write feedback.md atomically; returns its path."""
        return atomic_write_text(path, self.feedback_markdown())
