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
from grader.sandbox.remote import RemoteFunction
from ppo_course.grading_kit.mask_dtype import name_mask_dtype_failure
from ppo_course.grading_kit.provider import ModuleUnavailable, is_inplace_error, is_missing_exercise_name
from ppo_course.grading_kit.signatures import WrongSignature, problem_for_call, signature_problems, stub_methods

# Time-outs are judged by CPU time (RLIMIT_CPU over a child's life: a correct module of exercises
# 1-6 uses < 2 CPU s for all its tests) with a generous wall-clock backstop per call, so that a
# loaded machine never fails a correct submission. A hung module costs at most
# (1 + max_respawns) × cpu_time_s before its remaining tests fail at once.
EX1_6_LIMITS = {"call_timeout_s": 60.0, "import_timeout_s": 60.0, "cpu_time_s": 10, "max_respawns": 2}
# Exercise 7 runs whole PPO steps (and a 5-step training run, ~3 CPU s): more CPU, longer calls.
EX7_LIMITS = {"call_timeout_s": 300.0, "import_timeout_s": 60.0, "cpu_time_s": 120, "max_respawns": 2}


def _hung(exc: BaseException) -> bool:
    """True when a call was stopped for time (wall-clock deadline or RLIMIT_CPU's SIGXCPU)."""
    return isinstance(exc, StudentTimeout) or (isinstance(exc, StudentCrash) and
                                              ("SIGXCPU" in str(exc) or "CPU time" in str(exc)))


class GuardedModule:
    """A `RemoteModule` seen through two checks made in this (trusted) process, per function name:

    * a function whose signature differs from the stub's (read with `ast` from the submission's file)
      so that no call can be right is never called (`WrongSignature` instead); with a renamed parameter
      or a missing default it runs, and a call that fails to bind (TypeError) raises `WrongSignature`;
    * a function that did not return once (a time-out: the child was stopped) is not called again:
      `StudentTimeout` naming it is raised at once, so that the sandbox's fresh child serves the
      exercise's other functions instead of being spent on the same endless loop.

    Everything else is the `RemoteModule`'s own (same methods, same exceptions).
    """

    def __init__(self, remote, problems: dict[str, str], limits: Limits):
        self._remote = remote
        self._problems = dict(problems)
        self._limits = limits
        self._hung: dict[str, str] = {}
        self.name = remote.name

    def _check(self, name: str) -> None:
        problem = problem_for_call(self._problems, name)
        if problem and problem.blocking:
            raise WrongSignature(name, problem)
        if name in self._hung:
            raise StudentTimeout(f"{self._hung[name]}; it is not run again")

    def _run(self, name: str, method: str, *args, **kwargs):
        self._check(name)
        try:
            return getattr(self._remote, method)(*args, **kwargs)
        except StudentError as exc:
            problem = problem_for_call(self._problems, name)
            if problem and exc.type_name == "TypeError":
                raise WrongSignature(name, problem) from None
            raise
        except (StudentTimeout, StudentCrash) as exc:
            if not _hung(exc):
                raise
            cpu = isinstance(exc, StudentCrash)  # RLIMIT_CPU's SIGXCPU, else the wall-clock backstop
            seconds = self._limits.cpu_time_s if cpu else self._limits.call_timeout_s
            self._hung[name] = (f"`{name}` did not return within {seconds:g} s of "
                                f"{'CPU' if cpu else 'wall-clock'} time (an endless loop?)")
            raise StudentTimeout(self._hung[name]) from None

    def _masked(self, name: str, method: str, args, kwargs, **extra):
        """`_run` of a call with arguments (`call`, `call_with_grad`, `modified_inputs`); a student error that
        would be reported as ``raises_error`` but goes away with the mask in another dtype is named
        ``mask_dtype_unsupported`` (`ppo_course.grading_kit.mask_dtype`: the repeated calls run in the child too)."""
        try:
            return self._run(name, method, name, args, kwargs, **extra)
        except StudentError as exc:
            if (SandboxProvider.classify(exc) or ("",))[0] == "raises_error":
                name_mask_dtype_failure(name, tuple(args), dict(kwargs or {}),
                                        lambda a, k: self._run(name, method, name, a, k, **extra), exc.type_name)
            raise

    def call(self, name: str, args=(), kwargs=None, timeout=None):
        """`RemoteModule.call`, with the two checks (and the mask's dtype named, see `_masked`)."""
        return self._masked(name, "call", args, kwargs, timeout=timeout)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return RemoteFunction(self, name)

    def new(self, class_name: str, *args, **kwargs):
        """`RemoteModule.new` (an instance handle, or `StudentProtocolError`), with the two checks; the stub's
        methods of the class are always called in the child (`stub_methods`)."""
        obj = self._run(class_name, "new", class_name, *args, **kwargs)
        obj.methods = stub_methods(self.name, class_name)
        return obj

    def call_with_grad(self, name: str, args=(), kwargs=None, **options):
        """`RemoteModule.call_with_grad` (``wrt``, ``grad_output``, ... as keywords), with the two checks (and
        the mask's dtype named, see `_masked`)."""
        return self._masked(name, "call_with_grad", args, kwargs, **options)

    def modified_inputs(self, name: str, args=(), kwargs=None) -> list[str]:
        """`RemoteModule.modified_inputs`, with the two checks (and the mask's dtype named, see `_masked`)."""
        return self._masked(name, "modified_inputs", args, kwargs)

    def ppo_step_harness(self, *args, **kwargs) -> dict:
        """`RemoteModule.ppo_step_harness`, with the two checks (on `ppo_step`)."""
        return self._run("ppo_step", "ppo_step_harness", *args, **kwargs)

    def inputs_modified_before(self, name: str) -> list[str]:
        """`RemoteModule.inputs_modified_before`: inputs `name` changed in place on any earlier call."""
        return self._remote.inputs_modified_before(name)

    def buffer_graph_probe(self, plan: dict) -> dict:
        """`RemoteModule.buffer_graph_probe`, with the two checks (on `RolloutBuffer`): raw data, judged by
        `grader.hidden.probes.judge_buffer_graph`."""
        return self._run("RolloutBuffer", "buffer_graph_probe", plan)

    def last_modified(self) -> list[str]:
        """`RemoteModule.last_modified`."""
        return self._remote.last_modified()

    def last_shared_arguments(self):
        """`RemoteModule.last_shared_arguments`."""
        return self._remote.last_shared_arguments()

    def signature(self, name: str) -> str | None:
        """`RemoteModule.signature`."""
        return self._remote.signature(name)

    def names(self) -> dict[str, str]:
        """`RemoteModule.names`."""
        return self._remote.names()

    def has(self, name: str) -> bool:
        """`RemoteModule.has`."""
        return self._remote.has(name)

    def captured_output(self, stream: str | None = None) -> str:
        """`RemoteModule.captured_output`."""
        return self._remote.captured_output(stream)

    @property
    def info(self) -> dict:
        """The child's isolation report."""
        return self._remote.info

    def close(self) -> None:
        """Stop the child."""
        self._remote.close()

    def __repr__(self) -> str:
        return f"<your module {self.name}>"  # shown in hypothesis' "Failing test case" notes


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
        # (stem, known_good) -> the import's failure (already through the parent's filter: allowed type
        # name, capped message, bounded line); the primary load's failure makes the exercise "broken".
        self.import_failures: dict[tuple[str, bool], StudentImportError] = {}

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
                sandbox = self._sandbox_for(stem)
                # The signatures are compared with the stubs' from the file's text (ast; nothing is imported).
                problems = signature_problems(stem, sandbox.submission_dir / f"{stem}.py")
                self._modules[key] = GuardedModule(sandbox.load(stem, known_good=kg), problems, sandbox.limits)
            except StudentImportError as exc:
                diagnosis = "module_missing" if exc.cause == "missing" else "module_broken"
                self.import_failures.setdefault((stem, known_good is not False), exc)
                self._modules[key] = ModuleUnavailable(diagnosis, str(exc))
        got = self._modules[key]
        if isinstance(got, ModuleUnavailable):
            raise got
        return got

    def primary_import_failure(self, stem: str) -> StudentImportError | None:
        """Why the module's graded load failed (typed: ``type_name``, ``lineno``, ``filename``, ``cause``), or None.

        Exercise 7 is graded in known-good mode, so its own-pieces import (the 0-point report) does
        not make it broken.
        """
        return self.import_failures.get((stem, stem == "ex7_ppo_step"))


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
        if isinstance(exc, WrongSignature):
            return "wrong_signature", str(exc)
        if isinstance(exc, StudentCrash) and "remove debug prints" in str(exc):
            return "prints_too_much", str(exc)
        if isinstance(exc, StudentCrash) and "(out of memory:" in str(exc):  # the memory cgroup's OOM (zygote)
            return "out_of_memory", str(exc)
        if isinstance(exc, StudentImportError):
            return ("module_missing" if exc.cause == "missing" else "module_broken"), str(exc)
        if isinstance(exc, StudentError):
            text = exc.shown()  # the allowed type name, and the capped message only where it may be shown
            if exc.type_name == "NotImplementedError":
                # A bare `raise NotImplementedError()` (nbgrader's stub) has no message: the diagnosis says it all.
                message = exc.message.strip()
                return "not_implemented", "" if not message else \
                    message if message.startswith("NotImplementedError") else text
            if is_missing_exercise_name(exc.type_name, exc.message):
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
