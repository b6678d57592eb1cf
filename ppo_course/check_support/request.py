"""The one request `ppo-course check` sends to its test child: "run these public tests on this folder".

Student side (ships in the bundle; imports nothing of ``grader``). The parent
(``launch.run_public_tests``) builds one :class:`CheckRequest` per child and
carries it one way, as ``grader.intake.request.GradeRequest`` is carried
for the grader's workers:

- a fresh interpreter (``launch.spawn_fresh``): one ``--request JSON`` argument
  (``model_dump_json``), read back by ``runner.main`` (``model_validate_json``);
- a fork of the warm parent (``launch.spawn_forked``, ``check --watch``): the object itself.

What comes back is the child's typed report (``runner``'s OUT_JSON, ``results``'
``TestOutcome`` and ``ModuleReport``), never parsed from its printed output.
One request model, carried by every runner and by ``check``'s child.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class CheckRequest(BaseModel):
    """Run the public tests of ``stems`` on ``exercises_dir``; what one test child of ``ppo-course check`` is asked.

    Attributes:
        exercises_dir: the student's folder of exercise modules (absolute or relative to the child's cwd).
        out_json: where the child writes its report (rewritten after every test; ``<out_json>.progress``
            names the test and function running now, so the parent can tell which one a dead child was in).
        stems: the exercise module stems whose public tests run ([] for all seven).
        call_seconds: the CPU-time limit of one call into the student's code (seconds, > 0;
            ``guard.CALL_CPU_SECONDS`` by default in the parent).
        deselect: pytest node ids not to run again (they ran in an earlier child, or it died in them).
        hung: the student's functions that took an earlier child down: not called again (they fail at once).

    Raises (on validation): ``pydantic.ValidationError`` for an unknown field or a non-positive ``call_seconds``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    exercises_dir: Path
    out_json: Path
    stems: list[str] = Field(default_factory=list)
    call_seconds: float = Field(gt=0)
    deselect: list[str] = Field(default_factory=list)
    hung: list[str] = Field(default_factory=list)
