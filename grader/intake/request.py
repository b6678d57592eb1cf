"""The one request every runner carries: "grade this staged folder, with these limits".

TA side, trusted. The parent stages a submission once (``grader.intake.submission``,
into a 0700 folder of its own) and builds one :class:`GradeRequest` with ``staged=True``
(``grader.student.grade_entry``); the worker grades that copy as it is;
every runner carries that object, serialized one way (``model_dump_json`` /
``model_validate_json``):

- a fresh worker (``grader.runners.workers.run_worker``): one ``--request JSON`` argument;
- a warm worker (``grader.runners.warm``): one :class:`WarmRequest` per line on its stdin;
- a Dask cluster node (``grader.runners.cluster`` → ``grader.runners.cluster_worker.grade_task``):
  the submission's bytes and the request's JSON;

and the worker side grades it with ``grader.runners.worker_process.grade_request``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ppo_course.submission_rules import SubmissionLimits
from ppo_course.syllabus import EXERCISES

#: The most a worker keeps, before its hard time-out, to write its results (seconds; 10% of shorter limits).
RESULT_MARGIN_S = 30.0


class GradeRequest(BaseModel):
    """Grade one staged submission: what the parent asks of a worker, whichever runner carries it.

    Attributes:
        submission: the submission folder (absolute path on the machine that grades it; a cluster
            node replaces it by the folder it unpacked the bytes into).
        staged: True when ``submission`` is the parent's staged copy (``grade-batch`` stages each student
            once, in ``grader.student.grade_entry``): the worker grades it where it is, no second
            copy. False (a folder or zip nobody checked): the worker stages it first, as ``ppo-course grade``.
        student_id: whose submission (a folder or zip name; names a cluster node's folder, logs).
        profile: ``"full"`` or ``"fast"`` (``grader.grade.grade_submission``).
        exercises: the module stems to grade, or None for all seven.
        timeout_s: the hard wall-clock limit of the grading (seconds): the runner kills the worker then.
        limits: the batch's ``SubmissionLimits`` (None: the defaults every path uses).
        fingerprint: the grader version that must grade it (``grader.fingerprint``); a cluster node with
            another refuses. None: this machine's grader (a local worker).
        secret_digest: the digest of the course's grader secret the grading must draw from
            (``grader.course_secret.secret_digest``, never the secret); a cluster node holding another
            refuses. None: this machine's secret (a local worker).
        deadline: absolute ``time.monotonic()`` at which the worker's sandboxed calls stop (set by
            :meth:`started` when the student's clock starts; ``CLOCK_MONOTONIC`` is one clock for every
            process of a machine, so it never crosses to a cluster node).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    submission: Path
    staged: bool = False
    student_id: str = ""
    profile: Literal["full", "fast"] = "full"
    exercises: list[str] | None = None
    timeout_s: float = Field(gt=0)
    limits: SubmissionLimits | None = None
    fingerprint: str | None = None
    secret_digest: str | None = None
    deadline: float | None = None

    def started(self, t0: float) -> GradeRequest:
        """This request with its clock started at ``t0`` (``time.monotonic()``): the worker's limits.

        The worker's sandboxed calls stop at ``t0 + timeout_s - margin`` (margin: 10% of the limit, at
        most :data:`RESULT_MARGIN_S`), so that it writes its results before the runner kills it; its
        ``limits.timeout_s`` is that much (at least 1 s). Without ``limits`` nothing changes.
        """
        if self.limits is None:
            return self
        margin = min(RESULT_MARGIN_S, 0.1 * self.timeout_s)
        limits = self.limits.model_copy(update={"timeout_s": max(self.timeout_s - margin, 1.0)})
        return self.model_copy(update={"limits": limits, "deadline": t0 + self.timeout_s - margin})


class WarmRequest(BaseModel):
    """One line to a warm worker: the request, where to write ``result.json``, and where the fork server is.

    Attributes:
        request: the :class:`GradeRequest`.
        out: the scratch folder the worker writes ``result.json`` into.
        env: the variables naming the batch's fork server (``grader.runners.workers.shared_forkserver_env``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    request: GradeRequest
    out: Path
    env: dict[str, str] = Field(default_factory=dict)


def request_of(submission: GradeRequest | str | os.PathLike, exercises: Iterable[str] | None = None,
               profile: str = "full", staged: bool = False) -> GradeRequest:
    """The ``GradeRequest`` of ``grader.grade.grade_submission``'s arguments: ``submission`` itself when it is one
    (then the other arguments must be left at their defaults), else a request of that path with default limits.

    Raises:
        ValueError: an unknown profile or exercise stem, or keywords given beside a request.
    """
    if isinstance(submission, GradeRequest):
        if exercises is not None or profile != "full" or staged:
            raise ValueError("grade_submission: give the exercises, profile and staged in the GradeRequest, "
                             "not beside it")
        profile, exercises = submission.profile, submission.exercises
    if profile not in ("full", "fast"):
        raise ValueError(f"profile must be 'full' or 'fast', got {profile!r}")
    selected = list(EXERCISES) if exercises is None else list(exercises)
    unknown = [s for s in selected if s not in EXERCISES]
    if unknown:
        raise ValueError(f"unknown exercise(s) {unknown}; known: {list(EXERCISES)}")
    if isinstance(submission, GradeRequest):
        return submission
    return GradeRequest(submission=Path(submission), staged=staged, profile=profile,
                        exercises=None if exercises is None else selected, timeout_s=SubmissionLimits().timeout_s)
