"""One student's outcome, typed: what every file a TA or a student opens is written from.

TA side. :class:`StudentOutcome` holds the status (``graded``, ``rejected``, ``empty``, ``timed-out``,
``grader_fault``, ``no-submission``), the reason and the typed ``GradeResult``; ``results.json`` and
``feedback.md`` are shaped here and nowhere else (:meth:`StudentOutcome.results_json`,
:meth:`StudentOutcome.feedback_md`). The per-student step that makes an outcome is ``grader.student``;
the batch, ``ppo-course grade``, the Gradescope runner, nbgrader's autograde, the record, regrades and
the class report all read the same outcome.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from grader.records.gradebook import Status, is_fault
from grader.records.results import GradeResult, TestResult
from ppo_course.text_safety import cap, md_inline


class StudentOutcome(BaseModel):
    """One student's outcome: what every file a TA opens is written from.

    Attributes:
        student_id: the student (a folder or zip name).
        status: graded / timed-out / crashed / empty / rejected (``grader.records.gradebook.Status``).
        message: the status's reason ("" for a clean grading).
        notes: the intake's notes (files it skipped, ...).
        seconds: wall-clock seconds of the grading.
        result: the typed result, never None: the worker's ``GradeResult``, or ``grader.student.zero_result``'s
            zeros (every test of ``points.yaml`` at 0 with the reason) when nothing could be graded.
        graded: True when ``result`` came from a grading (False for the zeros of a time-out, a crash,
            an intake rejection).
        never_lower: one note per exercise ``--never-lower`` kept at its published score ("ex4_gae kept at its
            published 10 (the regrade gives 8)"); results.json's ``extra_data.never_lower``.
        regrade: other lines on a regrade (a changed submission under ``--never-lower``).
        Both are shown in the gradebook's message, results.json's output and feedback.md.
        regrade_tests: what the regrade gave the exercises whose published tests were kept (regrade.md).
    """

    model_config = ConfigDict(extra="forbid")

    student_id: str
    status: Status
    message: str = ""
    notes: list[str] = Field(default_factory=list)
    seconds: float = 0.0
    result: GradeResult
    graded: bool = True
    never_lower: list[str] = Field(default_factory=list)
    regrade: list[str] = Field(default_factory=list)
    regrade_tests: list[TestResult] = Field(default_factory=list)

    @property
    def fault(self) -> bool:
        """True when the grader itself failed (status ``grader_fault``): nothing of this outcome is a score."""
        return is_fault(self.status)

    @property
    def gradebook_message(self) -> str:
        """The gradebook's message column: the reason, the notes, one reason per exercise not really graded,
        and the regrade lines."""
        reasons = []
        if self.status == "graded" and self.graded:
            explained = [n for n in self.notes if "cannot import" in n]  # the intake's NUL-byte note names the file
            # An import failure a note already explains ("ex2_clipped_loss.py contains a NUL byte, so Python
            # cannot import it ..."): its exception name would only repeat it.
            reasons = [f"{stem}: {why}" for stem, why in _reasons(self.result)
                       if not (self.result.exercises[stem].state in ("syntax_error", "import_error")
                               and any(f"{stem}.py" in n for n in explained))]
        return join_why([self.message, *self.notes, *reasons, *self.regrade_lines])

    @property
    def regrade_lines(self) -> list[str]:
        """The regrade's lines as the TA and the student read them: "never lower: <note>; <note>", then the others."""
        return ([NEVER_LOWER + "; ".join(self.never_lower)] if self.never_lower else []) + self.regrade

    def results_json(self) -> dict:
        """results.json (contract format): the result's, with the status, notes and regrade lines leading ``output``;
        ``extra_data.status`` and ``extra_data.batch_status`` are :attr:`status` (the gradebook's word).
        A grader fault has no score at all (:func:`fault_results_json`)."""
        if self.fault:
            return fault_results_json(self.result, self.message)
        if self.graded:
            results = self.result.to_results_json()
        else:  # the zeros of what could not be graded: the compact shape, every test's output the reason
            results = self.result.to_results_json()
            extra = results["extra_data"]
            results["output"] = ""
            results["extra_data"] = {k: extra[k] for k in ("max_score", "exercises", "grader_version")}
        if self.notes or self.status != "graded":
            head = f"Status: {self.status}. {self.message}".strip()
            for note in self.notes:
                head += f"\n- {note}"
            results["output"] = (head + ("\n\n" + results["output"] if results["output"] else "")).strip()
        if self.regrade_lines:
            results["output"] = (results["output"] + "\n\n" + "\n".join(f"{line}." for line in self.regrade_lines)).strip()
        # The student's status, one word in every file (the gradebook's, batch.json's): the grader's own
        # graded/rejected would say "rejected" for an empty folder the gradebook calls empty, "graded" for a crash.
        results["extra_data"]["status"] = results["extra_data"]["batch_status"] = self.status
        if self.never_lower:
            results["extra_data"]["never_lower"] = list(self.never_lower)
            if self.regrade_tests:
                results["extra_data"]["regrade_tests"] = GradeResult.tests_json(self.regrade_tests)
        return results

    def feedback_md(self) -> str:
        """feedback.md: a status header when the grading was not clean, the regrade lines, then the result's feedback.
        A grader fault says that the grading failed and will be rerun, with no total (:data:`FAULT_FEEDBACK`)."""
        if self.fault:
            return FAULT_FEEDBACK
        head: list[str] = []
        if self.status != "graded" or self.notes:
            # The id (a folder or zip name), the message and notes quote student-derived text: escaped, capped.
            head.append(f"# Batch grading: {md_inline(self.student_id)}\n")
            head.append(f"**Status: {self.status}.** {md_inline(self.message, 2000)}\n" if self.message
                        else f"**Status: {self.status}.**\n")
            for note in self.notes:
                head.append(f"- {md_inline(note, 2000)}")
            head.append("")
        for line in self.regrade_lines:  # the grader's own words (exercise stems and scores): nothing from the student
            head.append(f"**Regrade:** {line}.\n")
        feedback = self.result.feedback_markdown() if self.graded else ""
        return "\n".join(head) + (("\n" if head else "") + feedback if feedback else "")


#: The prefix of a ``--never-lower`` line in :attr:`StudentOutcome.regrade`.
NEVER_LOWER = "never lower: "

#: What a student reads when the grader itself failed: no score, no total, nothing of the failure's internals.
FAULT_STUDENT_TEXT = ("Grading failed: the grader itself failed while grading your submission. This is not a "
                      "verdict on your code, and no score is given for this grading. The course staff will rerun it "
                      "once the grader is fixed; you do not need to resubmit.")

FAULT_FEEDBACK = f"# PPO course: grading feedback\n\n**Status: grader_fault.** {FAULT_STUDENT_TEXT}\n"


def fault_results_json(result: GradeResult, reason: str) -> dict:
    """results.json of a grader fault: no ``score`` and no tests anywhere, the reason for the staff.

    ``extra_data``: ``status``/``batch_status`` ``grader_fault``, ``grader_fault`` (the reason, capped),
    ``max_score`` and ``exercises`` (each ``{"score": None, "max_score": m}``), ``grader_version``.
    """
    return {"output": FAULT_STUDENT_TEXT, "tests": [],
            "extra_data": {"status": "grader_fault", "batch_status": "grader_fault", "grader_fault": cap(reason),
                           "max_score": result.max_score, "grader_version": result.grader_version,
                           "exercises": {stem: {"score": None, "max_score": e.max_score}
                                         for stem, e in result.exercises.items()}}}


def join_why(parts: list[str]) -> str:
    """The gradebook's message column: the non-empty parts joined by "; ", each without a trailing "." or ";"
    (never "text.; next")."""
    cleaned = (p.strip().rstrip(".;").rstrip() for p in parts)
    return "; ".join(p for p in cleaned if p)


def _lost_points(stem: str, e, tests: list[TestResult]) -> str:
    """Why a graded exercise scored below its maximum: "0/20, failed: no_whitening, wrong_value", or ""."""
    if e.score >= e.max_score - 1e-9:
        return ""
    mine = [t for t in tests if t.exercise == stem and t.score < t.max_score - 1e-9]
    failed = list(dict.fromkeys(t.diagnosis or "failed" for t in mine if t.status != "passed"))
    waiting = any(t.status == "passed" for t in mine)  # a public test worth 0 until its hidden twins pass
    parts = ([f"failed: {', '.join(failed)}"] if failed else []) + (
        ["a passed public test counts once its hidden twins pass"] if waiting else [])
    return "; ".join([", ".join([f"{e.score:g}/{e.max_score:g}", *parts[:1]]), *parts[1:]])


def _reasons(result: GradeResult) -> list[tuple[str, str]]:
    """(stem, short reason) for every exercise scored below its maximum (see :func:`exercise_reasons`)."""
    return [(stem, why) for stem, e in result.exercises.items()
            if (why := e.reason(stem) or _lost_points(stem, e, result.tests))]


def exercise_reasons(result: GradeResult) -> list[str]:
    """One short reason per exercise that was not really graded, for the gradebook's message column.

    From the typed result's exercise states (``ExerciseResult.reason``), in the result's order:
    "ex7_ppo_step: missing", "ex4_gae: SyntaxError line 12", "ex6_kl_reward: SyntaxError in ex4_gae.py
    line 12" (the error is in a file the module imports), "ex3_full_loss: ImportError", "ex2_clipped_loss:
    does not import" (time-out or crash at import), "ex5_rollout_buffer: not implemented" (every test
    failed with not_implemented). A graded exercise below its maximum gives its score and the diagnoses
    of its failed tests ("ex7_ppo_step: 0/20, failed: no_advantage_whitening"); one at full marks gives
    nothing, so every exercise below its maximum has a reason. Nothing is parsed from text.
    """
    return [f"{stem}: {why}" for stem, why in _reasons(result)]
