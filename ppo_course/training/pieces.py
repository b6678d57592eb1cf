"""The student's seven exercises as the pieces of a PPO run, with the reference's in place of a stub.

``ppo-course train --mine`` imports the student's exercise folder the way
``ppo-course check`` does (``ppo_course.check_support.local.LocalProvider``:
in this process, siblings importable as ``import ex4_gae``), then, while the
run lasts, wraps each piece the run reaches (``PIECES``) so that a piece
still a stub (its own code raises ``NotImplementedError``) hands over to the
reference's piece of the same name, once, with a line saying so. A module
file that is missing, or whose import fails, is replaced by the reference's
pieces as a whole (also said). Exercise 7's ``ppo_step``, when a stub, is the
reference's step reading every other piece from the student's modules, so
that ex1–ex6 are still the student's.

The reference is a ``ReferenceSide`` given by the caller (an instructor's or
self-learner's install has one; the student bundle has none, and a stub is
then an error that says so).
"""

from __future__ import annotations

import ast
import contextlib
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from ppo_course.syllabus import EXERCISES

__all__ = ["PIECES", "MissingPiece", "MinePieces", "ReferenceSide", "stub_pieces", "student_pieces"]

#: The names a PPO run reaches, per exercise module (CONTRACT.md "Exercises"), in teaching order.
PIECES: dict[str, tuple[str, ...]] = {
    "ex1_ratio": ("logprobs_from_logits", "probability_ratio"),
    "ex2_clipped_loss": ("masked_mean", "clipped_surrogate_loss"),
    "ex3_full_loss": ("masked_mean", "clipped_value_loss", "entropy_from_logits", "ppo_loss"),
    "ex4_gae": ("compute_gae", "whiten"),
    "ex5_rollout_buffer": ("RolloutBuffer",),
    "ex6_kl_reward": ("per_token_kl", "kl_shaped_rewards", "AdaptiveKLController"),
    "ex7_ppo_step": ("ppo_step",),
}


#: The pieces the stubs give already written (CONTRACT.md: ``masked_mean`` of exercises 2 and 3).
GIVEN = ("masked_mean",)


class ReferenceSide(Protocol):
    """What ``train --mine`` needs from a reference implementation (an instructor's install supplies one).

    Attributes:
        version: names the reference (part of the cache key of its runs).
    """

    version: str

    def piece(self, name: str) -> Any:
        """The reference's object for a contract name of ``PIECES`` (e.g. ``"compute_gae"``)."""

    def step_with(self, modules: dict[str, Any]) -> Callable[..., dict[str, float]]:
        """The reference's ``ppo_step`` reading every other piece from ``modules`` ({stem: module}) when called."""

    def run(self, config: Any, steps: int, *, device: str, console: Any, show_progress: bool) -> list[dict]:
        """The reference's own run (``ppo_course.training.loop.run_loop`` with its pieces)."""

    def diagnose(self, inputs: Any, config: Any, mine: "MinePieces") -> Any:
        """A ``ppo_course.training.diagnosis.Finding`` for the step that ``inputs`` started (or None)."""


_ABSENT = object()


class MissingPiece(RuntimeError):
    """A piece is a stub (or its module is missing or broken) and there is no reference to run in its place."""


def _raised_in(exc: BaseException, path: Path) -> bool:
    """Whether the innermost frame of ``exc``'s traceback is in the file ``path`` (the stub's own raise)."""
    tb, last = exc.__traceback__, None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return last is not None and Path(last.tb_frame.f_code.co_filename).resolve() == path


class _Fallback:
    """A student function that hands over to the reference's the first time its own code raises NotImplementedError."""

    def __init__(self, owner: "MinePieces", stem: str, name: str, mine: Callable, path: Path) -> None:
        self._owner, self._stem, self._name, self._mine, self._path = owner, stem, name, mine, path
        self._theirs: Callable | None = None
        self.__wrapped__ = mine
        self.__doc__ = getattr(mine, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._theirs is not None:
            return self._theirs(*args, **kwargs)
        try:
            out = self._mine(*args, **kwargs)
        except NotImplementedError as exc:
            if not _raised_in(exc, self._path):
                raise
            self._theirs = self._owner.fall_back(self._stem, self._name, "is still a stub")
            return self._theirs(*args, **kwargs)
        self._owner.ran.add((self._stem, self._name))
        return out


def _class_is_stub(cls: Any, path: Path) -> bool:
    """Whether a tiny use of the class (RolloutBuffer's cycle, the KL controller's update) raises the stub's error."""
    import torch

    try:
        if hasattr(cls, "minibatches"):
            buf = cls()
            buf.add(x=torch.zeros(2, 1))
            buf.start_training()
            list(buf.minibatches(1, torch.Generator().manual_seed(0)))
            buf.purge()
        else:
            ctl = cls(0.05, 6.0, 10000)
            float(ctl.value)
            ctl.update(1.0, 2)
    except NotImplementedError as exc:
        return _raised_in(exc, path)
    except Exception:  # noqa: BLE001 - another error is the student's to see during the run
        return False
    return False


class MinePieces:
    """The student's modules for one run, with fallbacks installed (use ``student_pieces``).

    Attributes:
        modules: {stem: the module the run uses}: the student's, or a stand-in holding the reference's pieces.
        notes: one sentence per piece that runs the reference's instead of the student's, in order.
        fallen_back: {stem: [names]} of those pieces.
        ran: the (stem, name) of the student's functions whose own code ran and returned at least once.
        wrapped: the (stem, name) of every student function the run could call (the ones not found stubs).
    """

    def __init__(self, folder: Path, reference: ReferenceSide | None, say: Callable[[str], None]) -> None:
        self.folder, self.reference, self._say = folder, reference, say
        self.modules: dict[str, Any] = {}
        self.notes: list[str] = []
        self.fallen_back: dict[str, list[str]] = {}
        self.ran: set[tuple[str, str]] = set()
        self.wrapped: list[tuple[str, str]] = []
        self._saved: list[tuple[Any, str, Any]] = []

    def never_ran(self) -> list[str]:
        """``stem.name`` of the student's implemented functions the run never called (in ``PIECES`` order): the run
        says nothing about them. Exercise 3's ``ppo_loss`` computes its own policy term and ratio (its stub says
        so), so exercise 2 and ``probability_ratio`` never run unless the student's ex3 calls them; and a
        reference piece in place of a stub calls the reference's own pieces, not the student's. Stubs (read from
        the source, ``stub_pieces``), the pieces that fell back (the notes say those) and the helpers the stubs
        give (``GIVEN``) are left out."""
        fell = {(stem, name) for stem, names in self.fallen_back.items() for name in names}
        stubs = {(stem, name) for stem, names in stub_pieces(self.folder).items() for name in names}
        return [f"{stem}.{name}" for stem, name in self.wrapped
                if (stem, name) not in self.ran | fell | stubs and name not in GIVEN]

    def fall_back(self, stem: str, name: str, why: str) -> Any:
        """The reference's piece ``name`` for the student's ``stem`` (noted and said once).

        Raises:
            MissingPiece: when there is no reference in this install.
        """
        if self.reference is None:
            raise MissingPiece(f"{stem}.{name} {why}, and this install has no reference implementation to run in its "
                               f"place: implement it (ppo-course check {self.folder}) and run again")
        note = f"{stem}.{name} {why}: the reference's {name} runs in its place"
        if name not in self.fallen_back.setdefault(stem, []):
            self.fallen_back[stem].append(name)
            self.notes.append(note)
            self._say(note)
        if name == "ppo_step":
            return self.reference.step_with(self.modules)
        return self.reference.piece(name)

    def patch(self, owner: Any, name: str, value: Any) -> None:
        """Set ``owner.name`` for the run's duration (undone by ``restore``)."""
        self._saved.append((owner, name, getattr(owner, name, _ABSENT)))
        setattr(owner, name, value)

    def restore(self) -> None:
        """Undo every ``patch``, newest first."""
        for owner, name, old in reversed(self._saved):
            if old is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._saved.clear()

    @property
    def ppo_step(self) -> Callable[..., dict[str, float]]:
        """Exercise 7's step as the run calls it (the student's, or the reference's with the student's pieces)."""
        return self.modules["ex7_ppo_step"].ppo_step

    @property
    def kl_controller(self) -> type:
        """Exercise 6's ``AdaptiveKLController`` class as the run uses it."""
        return self.modules["ex6_kl_reward"].AdaptiveKLController


def _stand_in(owner: MinePieces, stem: str, why: str) -> types.ModuleType:
    """A module named ``stem`` holding the reference's pieces (for a missing or broken student module)."""
    module = types.ModuleType(stem, f"the reference's pieces in place of {stem} ({why})")
    for name in PIECES[stem]:
        setattr(module, name, owner.fall_back(stem, name, why))
    return module


def _install(owner: MinePieces, stem: str, module: Any) -> None:
    """Wrap each piece of the student's ``module`` so that a stub hands over to the reference's."""
    path = Path(module.__file__).resolve()
    for name in PIECES[stem]:
        mine = getattr(module, name, None)
        if mine is None:
            owner.patch(module, name, owner.fall_back(stem, name, "is not defined in your module"))
        elif isinstance(mine, type):
            if _class_is_stub(mine, path):
                owner.patch(module, name, owner.fall_back(stem, name, "is still a stub"))
        elif callable(mine):
            owner.patch(module, name, _Fallback(owner, stem, name, mine, path))
            if (stem, name) not in owner.wrapped:
                owner.wrapped.append((stem, name))


@contextlib.contextmanager
def student_pieces(exercises_dir: str | Path, reference: ReferenceSide | None,
                   say: Callable[[str], None] = print) -> Iterator[MinePieces]:
    """The student's ex1–ex7 from ``exercises_dir``, imported as ``ppo-course check`` imports them, for one run.

    Inside the ``with`` block the modules are in ``sys.modules`` under their stems, with fallbacks
    installed; on exit the wrappers are removed and the stems leave ``sys.modules`` (so that another
    folder's run starts clean).

    Args:
        exercises_dir: the student's folder (``ex1_ratio.py`` ... ``ex7_ppo_step.py``).
        reference: the reference's pieces (None: none, a stub is an error).
        say: where a fallback's line goes (one sentence).

    Raises:
        FileNotFoundError: when ``exercises_dir`` is not a folder.
        MissingPiece: (when used) a stub, a missing or a broken module with no reference.
    """
    from ppo_course.check_support.local import LocalProvider
    from ppo_course.grading_kit.provider import ModuleUnavailable

    folder = Path(exercises_dir).resolve()
    if not folder.is_dir():
        raise FileNotFoundError(f"train --mine: {folder} is not a folder (give your exercises folder)")
    owner = MinePieces(folder, reference, say)
    path_before = list(sys.path)
    provider = LocalProvider(folder)
    try:
        for stem in EXERCISES:
            try:
                provider.load(stem)
                owner.modules[stem] = sys.modules[stem]
                _install(owner, stem, owner.modules[stem])
            except ModuleUnavailable as exc:
                last = (exc.detail or "error").strip().splitlines()[-1][:200]
                why = (f"is missing ({stem}.py is not in the folder)" if exc.diagnosis == "module_missing"
                       else f"is unusable ({stem}.py could not be imported: {last})")
                owner.modules[stem] = sys.modules[stem] = _stand_in(owner, stem, why)
        yield owner
    finally:
        owner.restore()
        for stem in EXERCISES:
            sys.modules.pop(stem, None)
        sys.path[:] = path_before


def _raises_not_implemented(body: list[ast.stmt]) -> bool:
    """Whether a function body raises ``NotImplementedError`` at its own top level (a stub's body)."""
    for node in body:
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id == "NotImplementedError":
                return True
    return False


def stub_pieces(exercises_dir: str | Path) -> dict[str, list[str]]:
    """{stem: [pieces of ``PIECES`` still stubs]} in ``exercises_dir``, read from the source (nothing is imported).

    A piece is a stub when its function's body (for a class: any method's body) raises ``NotImplementedError``
    at its top level, as the generated stubs do. A module file that is missing is ``["(missing)"]``; one that
    does not parse is ``["(syntax error)"]``. Stems with no stub are left out.
    """
    folder, out = Path(exercises_dir), {}
    for stem, names in PIECES.items():
        path = folder / f"{stem}.py"
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except OSError:
            out[stem] = ["(missing)"]
            continue
        except (SyntaxError, ValueError):
            out[stem] = ["(syntax error)"]
            continue
        found = []
        for node in tree.body:
            if getattr(node, "name", None) not in names:
                continue
            bodies = [m.body for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))] \
                if isinstance(node, ast.ClassDef) else [getattr(node, "body", [])]
            if any(_raises_not_implemented(b) for b in bodies) and node.name not in found:
                found.append(node.name)
        if found:
            out[stem] = found
    return out
