"""Derive the student stubs in ``exercises/`` from the worked solutions in ``solutions/``.

One source, two outputs (the ARENA pattern): every ``*.py`` in ``solutions/``
marks what the student writes with nbgrader's marker lines, indented to the
code's level::

    def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
        \"\"\"...full docstring, kept in the stub...\"\"\"
        ### BEGIN SOLUTION
        # TODO: implement Book §5.5's backward GAE recursion ...
        ...solution code, removed from the stub...
        ### END SOLUTION

In the stub, each region becomes its leading ``# TODO:`` comment block
(kept, for the student to read) followed by
``raise NotImplementedError("<module>.<qualname>: <TODO text>")``; the
marker lines themselves are dropped. Everything outside a region (imports,
signatures, docstrings, given helpers) is copied verbatim. Output is a pure
function of the input text, so it is deterministic.

Usage::

    python tools/make_exercises.py            # (re)write exercises/ from solutions/
    python tools/make_exercises.py --check    # exit 1 if exercises/ is stale
    make exercises

Reused as a library by the release bundle and the nbgrader course::

    from tools.make_exercises import make_exercises, strip_solutions
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
TODO = "# TODO:"
# The stubs are for students to edit: their header says so. (For maintainers: exercises/ is generated from
# solutions/ by this script; `make exercises` rewrites it and tests/exercises/test_sync.py fails when it is stale,
# so fix a stub in solutions/ and regenerate. This note stays here, out of the students' files.)
HEADER = (
    "# Exercise stub ({name}): write your code here. Replace each `raise NotImplementedError(...)` with\n"
    "# your code; keep the names and signatures (the graders call them).\n"
)

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SRC = REPO_ROOT / "solutions"
DEFAULT_DST = REPO_ROOT / "exercises"


class SolutionMarkupError(ValueError):
    """A solution file's regions are malformed (unmatched markers, no TODO, region outside a function)."""


@dataclass(frozen=True)
class Region:
    """One ``### BEGIN SOLUTION`` … ``### END SOLUTION`` block (0-based line indices of the markers)."""

    begin: int
    end: int
    indent: str
    todo: str  # the TODO text, continuation lines joined with spaces
    todo_lines: tuple[str, ...]  # the TODO comment lines verbatim (kept in the stub)
    qualname: str  # e.g. "RolloutBuffer.add"


def _qualnames_by_line(source: str, filename: str) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every function, 1-based, innermost last."""
    tree = ast.parse(source, filename=filename)
    spans: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    spans.append((child.lineno, child.end_lineno or child.lineno, name))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return spans


def find_regions(source: str, filename: str = "<solution>") -> list[Region]:
    """Parse the solution regions of one file.

    Raises:
        SolutionMarkupError: on nested or unmatched markers, an END indented
            differently from its BEGIN, a region that does not start with a
            ``# TODO:`` comment, or a region that is not inside one function.
    """
    lines = source.splitlines()
    spans = _qualnames_by_line(source, filename)
    regions: list[Region] = []
    open_at: int | None = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped == BEGIN:
            if open_at is not None:
                raise SolutionMarkupError(f"{filename}:{i + 1}: nested {BEGIN!r} (previous one at line {open_at + 1})")
            open_at = i
        elif stripped == END:
            if open_at is None:
                raise SolutionMarkupError(f"{filename}:{i + 1}: {END!r} without a {BEGIN!r}")
            indent = lines[open_at][: len(lines[open_at]) - len(lines[open_at].lstrip())]
            if line[: len(line) - len(line.lstrip())] != indent:
                raise SolutionMarkupError(f"{filename}:{i + 1}: {END!r} is indented differently from line {open_at + 1}")
            regions.append(_make_region(lines, open_at, i, indent, spans, filename))
            open_at = None
        elif BEGIN in stripped or END in stripped:
            raise SolutionMarkupError(f"{filename}:{i + 1}: a marker must stand alone on its line: {stripped!r}")
    if open_at is not None:
        raise SolutionMarkupError(f"{filename}:{open_at + 1}: {BEGIN!r} is never closed")
    return regions


def _make_region(lines, begin, end, indent, spans, filename) -> Region:
    body = lines[begin + 1 : end]
    if not body or not body[0].strip().startswith(TODO):
        raise SolutionMarkupError(
            f"{filename}:{begin + 2}: a solution region must start with a '{TODO} <what to implement>' comment"
        )
    todo_lines = [body[0]]
    for line in body[1:]:  # continuation: further plain comment lines right after the TODO
        if line.strip().startswith("#") and not line.strip().startswith(TODO):
            todo_lines.append(line)
        else:
            break
    text = " ".join([todo_lines[0].strip()[len(TODO) :].strip()] + [ln.strip().lstrip("#").strip() for ln in todo_lines[1:]])
    if not text:
        raise SolutionMarkupError(f"{filename}:{begin + 2}: the TODO comment is empty")
    code = [begin + 2 + k for k, line in enumerate(body) if line.strip() and not line.strip().startswith("#")]
    if not code:
        raise SolutionMarkupError(f"{filename}:{begin + 1}: the solution region holds no code")
    # Innermost function whose body holds all of the region's code (1-based line numbers).
    enclosing = [s for s in spans if s[0] < code[0] and code[-1] <= s[1]]
    if not enclosing:
        raise SolutionMarkupError(f"{filename}:{begin + 1}: a solution region must sit inside a function body")
    qualname = max(enclosing, key=lambda s: s[0])[2]
    return Region(begin, end, indent, text, tuple(todo_lines), qualname)


def strip_solutions(source: str, module_name: str, filename: str = "<solution>") -> str:
    """The stub text for one solution module's text (without the generated header).

    Args:
        source: the solution file's text.
        module_name: the module stem (e.g. ``"ex4_gae"``), used in the messages.
        filename: for error messages only.

    Returns:
        The stub text; it compiles, and every region is replaced by its TODO
        comment and ``raise NotImplementedError("<module>.<qualname>: <TODO>")``.

    Raises:
        SolutionMarkupError: see ``find_regions``; also if the stub does not compile.
    """
    lines = source.splitlines()
    out: list[str] = []
    cursor = 0
    for region in find_regions(source, filename):
        out.extend(lines[cursor : region.begin])
        out.extend(region.todo_lines)
        message = f"{module_name}.{region.qualname}: {region.todo}"
        out.append(f"{region.indent}raise NotImplementedError({message!r})")
        cursor = region.end + 1
    out.extend(lines[cursor:])
    stub = "\n".join(out) + "\n"
    try:
        compile(stub, f"exercises/{module_name}.py", "exec")
    except SyntaxError as exc:  # pragma: no cover - a markup mistake in solutions/
        raise SolutionMarkupError(f"{filename}: the generated stub does not compile: {exc}") from exc
    return stub


def render(src: Path) -> dict[str, str]:
    """{file name: stub text with header} for every ``*.py`` in ``src``, in sorted order."""
    files = sorted(p for p in Path(src).glob("*.py") if p.is_file())
    if not files:
        raise FileNotFoundError(f"no solution modules (*.py) in {src}")
    return {p.name: HEADER.format(name=p.name) + strip_solutions(p.read_text(encoding="utf-8"), p.stem, str(p)) for p in files}


def stale_files(src: Path = DEFAULT_SRC, dst: Path = DEFAULT_DST) -> list[str]:
    """Names of files in ``dst`` that are missing, differ from what ``src`` generates, or are left over."""
    want = render(src)
    dst = Path(dst)
    stale = [name for name, text in want.items() if not (dst / name).is_file() or (dst / name).read_text(encoding="utf-8") != text]
    stale += sorted(p.name for p in dst.glob("*.py") if p.name not in want) if dst.is_dir() else []
    return stale


def make_exercises(src: Path | str = DEFAULT_SRC, dst: Path | str = DEFAULT_DST) -> list[Path]:
    """Write the stubs for every solution module of ``src`` into ``dst``; remove ``dst/*.py`` that have no solution.

    Returns:
        The paths written, sorted.

    Raises:
        SolutionMarkupError: if a solution's markup is malformed (nothing is written then).
        FileNotFoundError: if ``src`` holds no ``*.py``.
    """
    want = render(Path(src))  # render everything first: a markup error writes nothing
    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    for leftover in dst.glob("*.py"):
        if leftover.name not in want:
            leftover.unlink()
    written = []
    for name, text in want.items():
        path = dst / name
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=DEFAULT_SRC, help="solutions folder (default: solutions/)")
    parser.add_argument("--dst", type=Path, default=DEFAULT_DST, help="exercises folder (default: exercises/)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if dst is stale")
    args = parser.parse_args(argv)
    try:
        if args.check:
            stale = stale_files(args.src, args.dst)
            if stale:
                print(f"{args.dst} is stale ({', '.join(stale)}); run `make exercises`", file=sys.stderr)
                return 1
            print(f"{args.dst} is up to date with {args.src}")
            return 0
        written = make_exercises(args.src, args.dst)
    except (SolutionMarkupError, FileNotFoundError) as exc:
        print(f"make_exercises: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {len(written)} stubs to {args.dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
