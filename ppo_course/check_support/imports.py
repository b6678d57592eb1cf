"""Which local ``.py`` files an exercise module imports, read with ``ast`` (nothing is imported or run).

Used by ``ppo-course submit`` (the submission holds the exercise modules and the helper files they
import, transitively) and ``ppo-course check --watch`` (a saved helper re-runs the exercises that
import it). Only files under the exercises folder count: ``import torch`` names no local file.

A submission is the exercise modules and any helper ``.py`` files they import.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ImportClosure:
    """The local files reached from some start files.

    ``files``: every file reached (the start files included), relative to the root, sorted;
    ``syntax_errors``: {relative path: "line N: message"} for files ``ast`` cannot parse (their own
    imports are not followed); ``imports``: {relative path: the local files it imports directly}.
    """

    files: list[Path] = field(default_factory=list)
    syntax_errors: dict[Path, str] = field(default_factory=dict)
    imports: dict[Path, set[Path]] = field(default_factory=dict)


def _candidates(root: Path, base: Path, dotted: str) -> list[Path]:
    """The files ``dotted`` (``a.b``) may name under ``base``: ``a/b.py``, ``a/b/__init__.py``, and the
    ``__init__.py`` of each package on the way (Python runs them too)."""
    parts = [p for p in dotted.split(".") if p]
    if not parts:
        return [base / "__init__.py"]
    found = [base.joinpath(*parts[:i], "__init__.py") for i in range(1, len(parts))]
    found += [base.joinpath(*parts[:-1], parts[-1] + ".py"), base.joinpath(*parts, "__init__.py")]
    return found


def _names(tree: ast.AST, file: Path, root: Path) -> list[Path]:
    """The candidate local files of every import statement in ``tree`` (``file``'s parsed source)."""
    out: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out += _candidates(root, root, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = root
            if node.level:  # relative: from the file's own folder, up level-1 folders
                base = file.parent
                for _ in range(node.level - 1):
                    base = base.parent
            module = node.module or ""
            out += _candidates(root, base, module)
            for alias in node.names:  # `from pkg import helper` may name the module pkg/helper.py
                out += _candidates(root, base, f"{module}.{alias.name}" if module else alias.name)
    return out


def import_closure(root: Path, start: list[Path]) -> ImportClosure:
    """The local files ``start`` (paths under ``root``) import, transitively, with their syntax errors.

    Args:
        root: the exercises folder (where the exercise modules import their siblings from).
        start: the files to start from (absolute, or relative to ``root``).

    Returns:
        The :class:`ImportClosure`; a file outside ``root`` or not a regular file is never included.
    """
    root = Path(root).resolve()
    closure = ImportClosure()
    todo = [(root / p).resolve() for p in start]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file() or root not in path.parents:
            continue
        seen.add(path)
        rel = path.relative_to(root)
        try:
            tree = ast.parse(path.read_bytes(), filename=str(rel))
        except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte in the source
            line = f"line {exc.lineno}: " if getattr(exc, "lineno", None) else ""
            closure.syntax_errors[rel] = f"{line}{getattr(exc, 'msg', None) or exc}"
            continue
        local = {c.resolve() for c in _names(tree, path, root)}
        local = {c for c in local if c.is_file() and root in c.parents and c != path}
        closure.imports[rel] = {c.relative_to(root) for c in local}
        todo += sorted(local)
    closure.files = sorted(p.relative_to(root) for p in seen)
    return closure
