"""Can this Python grade? The modules the graders import, read from their source, and a check that imports them.

The list is never kept by hand: :func:`required_modules` reads (with ``ast``, nothing is imported) every
import statement of the files a grading runs in the trusted process: the hidden tests
(``grader/hidden/``), the public tests (``ppo_course/public_tests/``), the shared grading kit
(``ppo_course/grading_kit/``), the sandbox's parent side (``grader/sandbox/``) and ``grader/grade.py``,
``grader/points.py``, ``grader/records/results.py``. An import guarded by ``try: ... except ImportError``
is optional and left out; the standard library is left out. :func:`environment_problem` imports each
required module in this process before anything is graded: a missing one is a grader fault (the
student's code was not graded), never a score.
"""

from __future__ import annotations

import ast
import functools
import importlib
import sys
from pathlib import Path

_GRADER = Path(__file__).resolve().parent
_ROOT = _GRADER.parent

#: The files and folders (relative to the repository root) whose imports a grading needs.
GRADING_SOURCES: tuple[str, ...] = ("grader/hidden", "ppo_course/public_tests", "ppo_course/grading_kit",
                                    "grader/sandbox", "grader/grade.py", "grader/points.py",
                                    "grader/records/results.py")


def _optional(node: ast.Try) -> bool:
    """True for a ``try`` whose handlers catch ImportError (or ModuleNotFoundError): its imports are optional."""
    names = set()
    for handler in node.handlers:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        names |= {k.id for k in kinds if isinstance(k, ast.Name)}
    return bool(names & {"ImportError", "ModuleNotFoundError"})


def imported_modules(source: str) -> set[str]:
    """The absolute modules a Python source imports outside an optional ``try`` (dotted names, as written).

    ``from a.b import c`` gives ``a.b``; relative imports are left out.

    Raises:
        SyntaxError: the source does not parse.
    """
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Try) and _optional(node):
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


@functools.lru_cache(maxsize=1)
def required_modules(root: Path = _ROOT, sources: tuple[str, ...] = GRADING_SOURCES) -> tuple[str, ...]:
    """Every non-standard-library module the grading sources import (:data:`GRADING_SOURCES`).

    Third-party packages by their top-level name (``hypothesis``, ``torch``), sorted, first (so that a
    missing package is named itself, not as the first module of ours that imports it); then the project's
    own modules by their full dotted name (``grader.hidden.inputs``), sorted, so that a missing file is found too.
    """
    files: list[Path] = []
    for rel in sources:
        path = root / rel
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.is_file() else []
    own = {"grader", "lms", "ppo_course", "ppo_reference", "quiz_bank", "sandbox_child"}
    needed: set[str] = set()
    for file in files:
        for name in imported_modules(file.read_text(encoding="utf-8")):
            top = name.split(".", 1)[0]
            if top in sys.stdlib_module_names or top == "__future__":
                continue
            needed.add(name if top in own else top)
    third_party = sorted(n for n in needed if n.split(".", 1)[0] not in own)
    return tuple(third_party + sorted(needed - set(third_party)))


def environment_problem(modules: tuple[str, ...] | None = None) -> str | None:
    """The first required module this Python cannot import, or the course's grader secret it cannot use, as a
    sentence for the staff, or None.

    Args:
        modules: the modules to import (default: :func:`required_modules`).

    An ``ImportError`` or an ``OSError`` (a shared library missing) is a broken environment; so is a
    missing or unusable grader secret (``grader.course_secret.secret_problem``), never replaced by another.
    """
    for name in required_modules() if modules is None else modules:
        try:
            importlib.import_module(name)
        except (ImportError, OSError) as exc:
            return f"the grader's Python cannot import {name} ({type(exc).__name__}: {exc})"
    from grader.course_secret import secret_problem

    return secret_problem()
