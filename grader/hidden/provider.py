"""The student provider of the hidden grading run: student modules through the sandbox.

Registered as a pytest plugin by `grader.grade` (found by the tests'
conftest through `is_student_provider`). It loads each exercise module once
per submission in its own sandboxed child (`grader.sandbox.Sandbox.load`;
the sandbox itself forks a fresh child after a crash or time-out), and turns
the sandbox's exceptions into diagnoses.
"""

from __future__ import annotations

from pathlib import Path

from grader.sandbox import (Limits, Sandbox, SandboxError, StudentCrash, StudentError, StudentFailure,
                            StudentImportError, StudentIteratorExhausted, StudentTimeout)
from ppo_course.check_support.local import ModuleUnavailable, is_inplace_error

# Time-outs are judged by CPU time (RLIMIT_CPU over a child's life: a correct module of exercises
# 1-6 uses < 2 CPU s for all its tests) with a generous wall-clock backstop per call, so that a
# loaded machine never fails a correct submission. A hung module costs at most
# (1 + max_respawns) × cpu_time_s before its remaining tests fail at once.
EX1_6_LIMITS = {"call_timeout_s": 60.0, "import_timeout_s": 60.0, "cpu_time_s": 10, "max_respawns": 2}
# Exercise 7 runs whole PPO steps (and a 5-step training run, ~3 CPU s): more CPU, longer calls.
EX7_LIMITS = {"call_timeout_s": 300.0, "import_timeout_s": 60.0, "cpu_time_s": 120, "max_respawns": 2}


class SandboxProvider:
    """Loads a submission's modules into sandboxed children; one child per (module, known_good).

    Args:
        submission_dir: the submission folder (module files at its root or under one top folder).
        limits: per-child limits for exercises 1-6 (default `EX1_6_LIMITS`; exercise 7 gets `EX7_LIMITS`
            on top of them).
        profile: "full" or "fast" (tests read it to skip the slow training run).
    """

    is_student_provider = True

    def __init__(self, submission_dir: str | Path, limits: Limits | None = None, profile: str = "full"):
        self.profile = profile
        self.limits = limits or Limits(**EX1_6_LIMITS)
        self._sandbox = Sandbox(submission_dir, limits=self.limits)
        self._ex7_sandbox: Sandbox | None = None
        self._modules: dict[tuple[str, bool], object] = {}
        # (stem, known_good) -> what the import said; the primary load's failure makes the exercise "broken".
        self.import_errors: dict[tuple[str, bool], str] = {}

    def _sandbox_for(self, stem: str) -> Sandbox:
        if stem != "ex7_ppo_step":
            return self._sandbox
        if self._ex7_sandbox is None:
            limits = self.limits.model_copy(update=EX7_LIMITS)
            self._ex7_sandbox = Sandbox(self._sandbox.submission_dir, limits=limits)
        return self._ex7_sandbox

    def load(self, stem: str, known_good=False):
        """The student's module `stem` (a `RemoteModule`).

        Args:
            stem: the module stem, e.g. "ex4_gae".
            known_good: False (the student's own sibling modules), True (ex1-ex6 served by the
                trusted reference: exercise 7's main points, so that an earlier mistake is not
                charged twice), or a `grader.sandbox.KnownGood` table.

        Raises:
            ModuleUnavailable: "module_missing" or "module_broken" (cached: one import per module).
        """
        key = (stem, known_good if isinstance(known_good, bool) else id(known_good))
        if key not in self._modules:
            kg = (True if known_good else None) if isinstance(known_good, bool) else known_good
            try:
                self._modules[key] = self._sandbox_for(stem).load(stem, known_good=kg)
            except StudentImportError as exc:
                diagnosis = "module_missing" if exc.cause == "missing" else "module_broken"
                self.import_errors.setdefault((stem, known_good is not False), str(exc))
                self._modules[key] = ModuleUnavailable(diagnosis, str(exc))
        got = self._modules[key]
        if isinstance(got, ModuleUnavailable):
            raise got
        return got

    def primary_import_error(self, stem: str) -> str | None:
        """Why the module's graded load failed, or None. Exercise 7 is graded in known-good mode, so its
        own-pieces import (the 0-point report) does not make it broken."""
        return self.import_errors.get((stem, stem == "ex7_ppo_step"))

    def close(self) -> None:
        """Stop every child (idempotent)."""
        self._sandbox.close()
        if self._ex7_sandbox is not None:
            self._ex7_sandbox.close()

    @staticmethod
    def error_name(exc: BaseException) -> str | None:
        """The type name of the student's exception, None when `exc` is not one."""
        return exc.type_name if isinstance(exc, StudentError) else None

    @staticmethod
    def classify(exc: BaseException) -> tuple[str, str] | None:
        """(diagnosis, detail) for the sandbox's exceptions; None for anything else.

        Whatever the submission caused (a ``StudentFailure``, also when it reaches the test
        wrapped: a generator turns an escaping StopIteration into RuntimeError with it as the
        cause) is the student's: never ``grader_error``.
        """
        cause = exc
        while isinstance(cause, RuntimeError) and not isinstance(cause, StudentFailure) \
                and isinstance(cause.__cause__, StudentFailure):
            cause = cause.__cause__
        exc = cause
        if isinstance(exc, StudentIteratorExhausted):
            return "iterator_ended_early", "the iterator ended (StopIteration) where an item or an error was expected"
        if isinstance(exc, ModuleUnavailable):
            return exc.diagnosis, exc.detail
        if isinstance(exc, StudentImportError):
            return ("module_missing" if exc.cause == "missing" else "module_broken"), str(exc)
        if isinstance(exc, StudentError):
            text = f"{exc.type_name}: {exc.message}"
            if exc.type_name == "NotImplementedError":
                return "not_implemented", text
            if exc.type_name == "AttributeError" and "has no attribute" in exc.message:
                return "missing_name", text
            if is_inplace_error(exc.type_name, exc.message):
                return "modifies_input", text
            if exc.type_name == "MemoryError" or "can't allocate memory" in exc.message \
                    or "Cannot allocate memory" in exc.message:
                return "out_of_memory", text
            return "raises_error", text
        if isinstance(exc, StudentTimeout):
            return "timeout", str(exc)
        if isinstance(exc, StudentCrash):
            # RLIMIT_CPU stops an endless loop with SIGXCPU: that is a time-out, judged by CPU time.
            text = str(exc)
            return ("timeout" if "SIGXCPU" in text or "CPU time" in text else "crash"), text
        if isinstance(exc, SandboxError):
            return "grader_error", f"sandbox: {exc}"
        if isinstance(exc, StudentFailure):  # any other failure the submission caused
            return "raises_error", type(exc).__name__
        return None
