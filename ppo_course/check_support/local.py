"""Student modules loaded in-process for `ppo-course check` (the student's own machine).

The public tests reach a student module through a *provider*, a pytest plugin
(`ppo_course.grading_kit.provider`). The hidden grader registers one that talks
to the sandbox (`grader.hidden.provider`); `ppo-course check` runs the public
tests in a child process and registers `LocalProvider`, which imports the
student's files directly (it is their own code on their own machine).

The surface both providers offer is `ppo_course.grading_kit.provider`'s docstring.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import sys
import traceback
from pathlib import Path
from typing import Any

import torch

from ppo_course.check_support.guard import EX7_CPU_SECONDS, CallGuard, CallTimedOut, PrintFlood
from ppo_course.check_support.results import ModuleReport
from ppo_course.grading_kit.mask_dtype import name_mask_dtype_failure
from ppo_course.grading_kit.provider import ModuleUnavailable, is_inplace_error, is_missing_exercise_name
from ppo_course.grading_kit.states import import_failure_state
from ppo_course.grading_kit.inputs import fresh_copy
from ppo_course.grading_kit.signatures import WrongSignature, problem_for_call, signature_problems


class LocalModule:
    """A student module imported in this process, with the provider surface (see module doc).

    Args:
        module: the imported module.
        guard: a `CallGuard` (per-call CPU limit and output capture), or None for plain calls.
        problems: {function: why its signature differs from the stub's} (`signatures.signature_problems`):
            a blocking one is never called (`WrongSignature` instead); the others run, and a call that
            fails to bind (TypeError) raises `WrongSignature` with the sentence.
    """

    def __init__(self, module, guard: CallGuard | None = None, problems: dict[str, str] | None = None):
        self._module = module
        self._guard = guard
        self._problems = dict(problems or {})

    def _function(self, name: str):
        problem = problem_for_call(self._problems, name)
        if problem and problem.blocking:
            raise WrongSignature(name, problem)
        if not hasattr(self._module, name):
            raise AttributeError(f"module {self._module.__name__!r} has no attribute {name!r}")
        return getattr(self._module, name)

    def __repr__(self) -> str:  # shown in hypothesis' "Failing test case" notes
        return f"<your module {self._module.__name__}>"

    @contextlib.contextmanager
    def _call(self, name: str, cpu_seconds: float | None = None):
        """The context of one call into the student's code (`CallGuard.call`, or nothing); a TypeError
        from a function whose signature differs from the stub's is reported as `WrongSignature`."""
        guard = self._guard.call(name, cpu_seconds) if self._guard is not None else contextlib.nullcontext()
        try:
            with guard:
                yield
        except TypeError:
            problem = problem_for_call(self._problems, name)
            if problem:
                raise WrongSignature(name, problem) from None
            raise

    def _bind(self, name: str, fn, args, kwargs, wrt: tuple[str, ...] = ()) -> inspect.BoundArguments:
        """The call's arguments (copied) bound to the student's signature; a failure to bind a function
        whose signature differs from the stub's is reported as `WrongSignature`."""
        try:
            bound = inspect.signature(fn).bind(*fresh_copy(tuple(args)), **fresh_copy(dict(kwargs or {})))
            missing = [p for p in wrt if p not in bound.arguments]
            if missing:
                raise TypeError(f"{name}() has no parameter {missing[0]!r}")
            return bound
        except TypeError:
            problem = problem_for_call(self._problems, name)
            if problem:
                raise WrongSignature(name, problem) from None
            raise

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        fn = self._function(name)

        def plain(args, kwargs):
            args, kwargs = fresh_copy(args), fresh_copy(kwargs)
            with self._call(name):
                return fn(*args, **kwargs)

        def call(*args, **kwargs):
            return self._masked(name, plain, args, kwargs)

        return call

    def _masked(self, name: str, run, args, kwargs):
        """``run(args, kwargs)``; an exception that `LocalProvider.classify` would report as ``raises_error`` but
        that goes away with the mask in another dtype is named ``mask_dtype_unsupported``
        (`ppo_course.grading_kit.mask_dtype`, the hidden grader's rule too)."""
        try:
            return run(args, kwargs)
        except Exception as exc:
            if (LocalProvider.classify(exc) or ("",))[0] == "raises_error":
                name_mask_dtype_failure(name, tuple(args), dict(kwargs or {}), run, type(exc).__name__)
            raise

    def new(self, class_name: str, *args, **kwargs):
        """An instance of the student's class `class_name` (arguments copied)."""
        cls = self._function(class_name)
        args, kwargs = fresh_copy(args), fresh_copy(kwargs)
        with self._call(class_name):
            return cls(*args, **kwargs)

    def call_with_grad(self, name: str, args: tuple = (), kwargs: dict | None = None, *,
                       wrt: tuple[str, ...] = (), grad_output: torch.Tensor | None = None,
                       output_index: int | None = None, tie: dict | None = None):
        """(output, {param: grad or None}) for the output (element `output_index`, default 0, of a tuple).

        The named parameters get fresh leaf copies with requires_grad=True; a
        parameter whose gradient is None (no graph reached it) maps to None. With `tie`, the mapped
        arguments are derived from one leaf and the grads are {"theta": dL/dθ} (`ppo_course.sandbox.tied_grad`).
        """
        if tie is not None:
            return self._masked(name, lambda a, k: self._tied(name, a, k, tie), args, kwargs)
        return self._masked(name, lambda a, k: self._with_grad(name, a, k, wrt, grad_output, output_index),
                            args, kwargs)

    def _tied(self, name, args, kwargs, tie):
        from ppo_course.sandbox.tied_grad import make_tied_runner

        fn = self._function(name)
        with self._call(name):
            got = make_tied_runner()(fn, list(fresh_copy(args)), dict(fresh_copy(kwargs)), fresh_copy(tie))
        grad = got["grads"]["theta"]
        return _detach(got["output"]), {"theta": None if grad is None else grad.detach()}

    def _with_grad(self, name, args, kwargs, wrt, grad_output, output_index):
        fn = self._function(name)
        bound = self._bind(name, fn, args, kwargs, wrt)
        leaves = {}
        for param in wrt:
            leaf = bound.arguments[param].detach().clone().requires_grad_(True)
            bound.arguments[param] = leaf
            leaves[param] = leaf
        with self._call(name):
            out = fn(*bound.args, **bound.kwargs)
        head = out[output_index or 0] if isinstance(out, (tuple, list)) else out
        grads: dict[str, torch.Tensor | None] = {p: None for p in wrt}
        if isinstance(head, torch.Tensor) and head.requires_grad and leaves:
            if grad_output is None and head.numel() != 1:
                # Same rule as the sandbox: without grad_output the output must be a single loss value.
                raise ValueError(f"call_with_grad: the output has shape {list(head.shape)}, not a single loss value")
            g_out = torch.ones_like(head) if grad_output is None else grad_output.to(head.dtype)
            got = torch.autograd.grad(head, list(leaves.values()), g_out, allow_unused=True)
            grads = {p: (g.detach() if g is not None else None) for p, g in zip(leaves, got)}
        return _detach(out), grads

    def ppo_step_harness(self, model_config: dict, state_dict: dict, queries: torch.Tensor, ppo_config: dict,
                         seed: int, timeout: float | None = None, ref_state_dict: dict | None = None,
                         observe: str | None = None, kl_coef: float | None = None) -> dict:
        """Run the module's `ppo_step` once in the exercise-7 harness (`ppo_course.sandbox.harness`),
        as the graders' sandbox does: {"state_dict", "stats", "kl_coef", "trace", "ref_state_dict"}.
        `ref_state_dict`: the reference policy's weights (default: a copy of the policy); `kl_coef`: the KL
        controller's value at the start (default: the config's init_kl_coef)."""
        from ppo_course.sandbox.harness import run_ppo_step

        payload = {"model_config": model_config, "state_dict": fresh_copy(dict(state_dict)), "queries": fresh_copy(queries),
                   "ppo_config": ppo_config, "seed": int(seed)}
        if ref_state_dict is not None:
            payload["ref_state_dict"] = fresh_copy(dict(ref_state_dict))
        if observe is not None:  # "deep": the observer's deep mode (ppo_course.sandbox.observe)
            payload["observe"] = str(observe)
        if kl_coef is not None:
            payload["kl_coef"] = float(kl_coef)
        # A whole PPO step: the exercise-7 limit (`EX7_CPU_SECONDS`), not the per-function one.
        with self._call("ppo_step", EX7_CPU_SECONDS):
            return run_ppo_step(self._module, payload)

    def modified_inputs(self, name: str, args: tuple = (), kwargs: dict | None = None) -> list[str]:
        """Names of the tensor arguments that the call `name(*args, **kwargs)` changed in place."""
        def run(args, kwargs):
            fn = self._function(name)
            bound = self._bind(name, fn, args, kwargs)
            before = {k: v.clone() for k, v in bound.arguments.items() if isinstance(v, torch.Tensor)}
            with self._call(name):
                fn(*bound.args, **bound.kwargs)
            return [k for k, v in before.items() if not torch.equal(bound.arguments[k], v)]

        return self._masked(name, run, args, kwargs)


def _frames(tb):
    """The traceback objects of a traceback chain, outermost first."""
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _import_report(exc: BaseException, message: str) -> ModuleReport:
    """The typed report of a failed import: the state, the exception's type and where it happened.

    A ``SyntaxError`` carries its own file and line (the compiler's, before any frame exists); any other
    exception is placed at its innermost frame in a student file.
    """
    error_type = type(exc).__name__
    line, file = None, None
    if isinstance(exc, SyntaxError) and exc.filename:
        line, file = exc.lineno, Path(exc.filename).name
    else:
        own = [tb for tb in _frames(exc.__traceback__) if _is_student_file(tb.tb_frame.f_code.co_filename)]
        if own:
            line, file = own[-1].tb_lineno, Path(own[-1].tb_frame.f_code.co_filename).name
    return ModuleReport(state=import_failure_state(error_type), error_type=error_type, error_line=line,
                        error_file=file, detail=message)


#: Folders of student modules loaded in this process (their frames are the only ones shown).
_STUDENT_DIRS: set[str] = set()


def _is_student_file(filename: str) -> bool:
    """True for a file inside a student folder loaded by a `LocalProvider`."""
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return any(resolved.startswith(d.rstrip("/\\") + "/") or resolved.startswith(d + "\\") for d in _STUDENT_DIRS)


def _detach(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.detach()
    if isinstance(x, (list, tuple)):
        return type(x)(_detach(v) for v in x)
    if isinstance(x, dict):
        return {k: _detach(v) for k, v in x.items()}
    return x


def _forget_modules_from_elsewhere(folder: Path) -> None:
    """Drop from ``sys.modules`` every module named like one of ``folder``'s ``.py`` files that was not
    loaded from ``folder`` (another submission's ``helper``, say), so that ``import helper`` here finds this
    folder's file and a check never depends on what ran before it in the process."""
    for path in folder.glob("*.py"):
        module = sys.modules.get(path.stem)
        where = getattr(module, "__file__", None) if module is not None else None
        if module is not None and (where is None or Path(where).resolve().parent != folder):
            del sys.modules[path.stem]


class LocalProvider:
    """pytest plugin: loads exercise modules from `exercises_dir` into this process.

    Marked `is_student_provider` (`ppo_course.grading_kit.provider`); the public tests' conftest asks it for a
    module by stem (e.g. "ex4_gae"). The folder is put first on sys.path so
    that a module can import its siblings (`import ex4_gae`).
    """

    is_student_provider = True

    def __init__(self, exercises_dir: str | Path, guard: CallGuard | None = None):
        self.exercises_dir = Path(exercises_dir).resolve()
        self.guard = guard
        self._cache: dict[str, LocalModule | ModuleUnavailable] = {}
        #: {stem: ModuleReport}: what became of each module loaded (or raising NotImplementedError) here.
        self.modules: dict[str, ModuleReport] = {}
        _STUDENT_DIRS.add(str(self.exercises_dir))
        _forget_modules_from_elsewhere(self.exercises_dir)
        if str(self.exercises_dir) not in sys.path:
            sys.path.insert(0, str(self.exercises_dir))

    def load(self, stem: str, known_good: bool = False) -> LocalModule:
        """The student's module `stem` (`known_good` is accepted for the graders' sake and ignored:
        on a student's machine every sibling import is their own module).

        Raises:
            ModuleUnavailable: "module_missing" when `<stem>.py` is absent, "module_broken"
                (with the traceback) when importing it raises.
        """
        if stem not in self._cache:
            self._cache[stem] = self._import(stem)
        got = self._cache[stem]
        if isinstance(got, ModuleUnavailable):
            raise got
        return got

    def _import(self, stem: str) -> LocalModule | ModuleUnavailable:
        path = self.exercises_dir / f"{stem}.py"
        if not path.is_file():
            return ModuleUnavailable("module_missing", f"{path.name} is not in {self.exercises_dir}")
        try:
            # The signatures are compared with the stubs' from the source (before anything runs).
            problems = signature_problems(stem, path)
            if stem in sys.modules:
                return LocalModule(sys.modules[stem], self.guard, problems)
            spec = importlib.util.spec_from_file_location(stem, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[stem] = module  # siblings importing it get this very module
            with (self.guard.call(f"the import of {path.name}") if self.guard is not None
                  else contextlib.nullcontext()):
                spec.loader.exec_module(module)
            return LocalModule(module, self.guard, problems)
        except BaseException as exc:  # a broken import must not stop the other exercises
            sys.modules.pop(stem, None)
            if isinstance(exc, KeyboardInterrupt):
                raise
            tb = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self.modules[stem] = _import_report(exc, f"importing {path.name} failed: {tb}")
            return ModuleUnavailable("module_broken", self.modules[stem].detail)

    @staticmethod
    def error_name(exc: BaseException) -> str | None:
        """The type name of an exception raised by student code (here: any exception)."""
        return type(exc).__name__

    def classify_and_record(self, exc: BaseException) -> tuple[str, str] | None:
        """``classify``, recording in its module's report the student function that raised a
        ``NotImplementedError`` (typed: from the traceback's frames, never from the message)."""
        if isinstance(exc, NotImplementedError):
            self._note_not_implemented(exc)
        return self.classify(exc)

    def _note_not_implemented(self, exc: NotImplementedError) -> None:
        """Add the student function whose frame raised ``exc`` to its module's ``not_implemented``."""
        frames = [tb for tb in _frames(exc.__traceback__) if _is_student_file(tb.tb_frame.f_code.co_filename)]
        if not frames:
            return
        code = frames[-1].tb_frame.f_code
        stem = Path(code.co_filename).stem
        name = getattr(code, "co_qualname", code.co_name)  # "RolloutBuffer.add" (Python ≥ 3.11), else "add"
        report = self.modules.setdefault(stem, ModuleReport())
        if name not in report.not_implemented and name != "<module>":
            report.not_implemented.append(name)

    @staticmethod
    def classify(exc: BaseException) -> tuple[str, str] | None:
        """(diagnosis, detail) for an exception raised by the student's code, else None."""
        if isinstance(exc, ModuleUnavailable):
            return exc.diagnosis, exc.detail
        if isinstance(exc, WrongSignature):
            return "wrong_signature", str(exc)
        if isinstance(exc, CallTimedOut):
            return "timeout", str(exc)
        if isinstance(exc, PrintFlood):
            return "prints_too_much", str(exc)
        if isinstance(exc, NotImplementedError):
            # The stubs' message already starts "NotImplementedError"? say it once.
            text = str(exc)
            return "not_implemented", text if text.startswith("NotImplementedError") else \
                f"NotImplementedError: {text}".rstrip(": ")
        if isinstance(exc, AssertionError):
            return None  # a test's own assertion: reported by the collector
        if isinstance(exc, StopIteration) or (isinstance(exc, RuntimeError)
                                              and isinstance(exc.__cause__, StopIteration)):
            # Tests call next() only on the student's iterators: one that ends early is the student's.
            return "iterator_ended_early", "the iterator ended (StopIteration) where an item or an error was expected"
        if is_inplace_error(type(exc).__name__, str(exc)):
            return "modifies_input", f"{type(exc).__name__}: {exc}"
        if is_missing_exercise_name(type(exc).__name__, str(exc)):
            return "missing_name", f"AttributeError: {exc}"
        tb = traceback.extract_tb(exc.__traceback__)
        # Show the student's own frames only: pytest, pluggy, inspect, torch and this package are noise to them.
        own = [f for f in tb if _is_student_file(f.filename)]
        where = "".join(traceback.format_list(own[-3:])) if own else ""
        return "raises_error", f"{type(exc).__name__}: {exc}\n{where}".rstrip()
