"""Exercise notebooks made from ``solutions/`` with nbformat (one notebook per exercise module).

A solution module is cut at its top-level ``def``/``class`` statements (Python's
own ``ast``), so that each notebook cell holds one public name:

- the *prelude* (module docstring, imports, constants) and every chunk without a
  solution region become locked, read-only cells (nbgrader restores their text
  from the course source before grading, so a student cannot change them);
- every chunk holding a ``### BEGIN SOLUTION`` region becomes an "autograded
  answer" cell (``solution: true``); its ``# TODO:`` lines are moved above the
  marker so that nbgrader's ``generate_assignment`` keeps them in the release;
- one autograded test cell per exercise, worth the exercise's points in
  ``grader/points.yaml`` (in the chosen profile). Its source is a placeholder
  ``0.0``: the score is written into its output by the isolated grading step
  (``grader.platforms.nbgrader_course.autograde.IsolatedGrade``), never computed in the
  student's kernel. If that step were missing from the configuration, the cell
  would score 0 (nbgrader reads ``0.0`` as partial credit), never full marks.

Every cell that belongs to the module carries ``metadata.ppo_course.module`` (the
module stem), so that the module text is the concatenation of those cells in
order (``module_source``). A notebook whose module imports sibling exercises
(exercise 7) starts with a locked setup cell that writes the sibling notebooks'
modules to ``.py`` files next to it, so that ``import ex4_gae`` works in the
student's kernel as it does in the grader.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
TODO = "# TODO:"
NBGRADER_SCHEMA = 3
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


@dataclass(frozen=True)
class Chunk:
    """One cell's worth of a solution module: its text and whether it holds a solution region."""

    name: str  # "prelude" or the top-level def/class name
    source: str
    is_solution: bool


def split_module(source: str, filename: str = "<solution>") -> list[Chunk]:
    """Cut a solution module into the prelude and one chunk per top-level def/class.

    Top-level statements between two definitions stay with the chunk above them;
    decorators and the comment lines right above a definition go with it.

    Raises:
        SyntaxError: if the module does not parse.
        ValueError: if a solution region straddles two chunks.
    """
    lines = source.splitlines()
    tree = ast.parse(source, filename=filename)
    starts: list[tuple[int, str]] = []  # (0-based first line, name)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            while first > 0 and lines[first - 1].lstrip().startswith("#"):
                first -= 1  # a comment block introducing the definition belongs to it
            starts.append((first, node.name))
    bounds = [(0, "prelude")] + starts
    chunks = []
    for k, (begin, name) in enumerate(bounds):
        end = bounds[k + 1][0] if k + 1 < len(bounds) else len(lines)
        text = "\n".join(lines[begin:end]).strip("\n")
        if not text:
            continue
        opened, closed = text.count(BEGIN), text.count(END)
        if opened != closed:
            raise ValueError(f"{filename}: a solution region of {name!r} straddles two top-level definitions")
        chunks.append(Chunk(name, text, opened > 0))
    return chunks


def todo_above_markers(text: str) -> str:
    """Move each region's leading ``# TODO:`` comment block above its ``### BEGIN SOLUTION`` line.

    nbgrader's ClearSolutions replaces everything between the markers; the TODO
    text is the student's instructions, so it must sit outside them.
    """
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == BEGIN:
            todo: list[str] = []
            j = i + 1
            if j < len(lines) and lines[j].strip().startswith(TODO):
                todo.append(lines[j])
                j += 1
                while j < len(lines) and lines[j].strip().startswith("#") and not lines[j].strip().startswith("###"):
                    todo.append(lines[j])
                    j += 1
            out.extend(todo)
            out.append(lines[i])
            i = j
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def nbgrader_meta(grade_id: str, *, grade: bool, solution: bool, locked: bool, points: float | None = None) -> dict:
    """nbgrader's schema-3 cell metadata (``points`` only on grade cells)."""
    meta = {"grade": grade, "solution": solution, "locked": locked, "schema_version": NBGRADER_SCHEMA,
            "grade_id": grade_id}
    if grade:
        meta["points"] = float(points or 0.0)
    return meta


def _imports_siblings(source: str) -> list[str]:
    """Exercise modules imported by ``source`` (``import ex4_gae`` ...), in order of appearance."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        for name in names:
            if name.startswith("ex") and name[2:3].isdigit() and name not in found:
                found.append(name)
    return found


# A locked cell that is not part of the module: it writes the sibling notebooks' module cells to
# .py files so that `import ex4_gae` works in the kernel, as in the grader. Plain json: no extra import.
SETUP_CELL = '''\
# Setup (not part of your module): make your other exercise notebooks importable,
# as the grader does with your submission: {siblings}.
import json as _json, pathlib as _pathlib, sys as _sys
for _stem in {siblings!r}:
    _nb = _pathlib.Path(_stem + ".ipynb")
    if _nb.is_file():
        _cells = _json.loads(_nb.read_text(encoding="utf-8"))["cells"]
        _src = "\\n\\n".join("".join(c["source"]) for c in _cells
                            if c.get("metadata", {{}}).get("ppo_course", {{}}).get("module") == _stem)
        _pathlib.Path(_stem + ".py").write_text(_src + "\\n", encoding="utf-8")
        _sys.modules.pop(_stem, None)
if "" not in _sys.path and "." not in _sys.path:
    _sys.path.insert(0, "")'''

TEST_CELL = '''\
# Scored after you submit, outside your kernel, by ppo-course's isolated grader:
# {title} ({points:g} points, hidden and public tests of Book ch. 5).
# This cell shows 0.0 until then; nothing your kernel prints, patches or returns
# here can change your score. For feedback now, run `ppo-course check`.
0.0'''


def exercise_notebook(solution_path: Path, title: str, points: float) -> nbformat.NotebookNode:
    """The source notebook (with solutions) of one exercise module.

    Args:
        solution_path: ``solutions/<stem>.py``.
        title: the exercise title from the points config.
        points: what the autograded test cell is worth (the exercise's max score in
            the course's grading profile); 0 leaves the test cell out.

    Returns:
        An nbformat v4 notebook with nbgrader schema-3 metadata on every cell.

    Raises:
        SyntaxError / ValueError: see ``split_module``.
    """
    stem = solution_path.stem
    source = solution_path.read_text(encoding="utf-8")
    chunks = split_module(source, str(solution_path))
    doc = ast.get_docstring(ast.parse(source)) or ""
    cells = []
    intro = (f"# {title}\n\n{doc}\n\n---\n\n"
             "**How this notebook is graded.** Write your code in the unlocked cells (where it says "
             "`YOUR CODE HERE`). Keep every name and signature. When you submit, the cells marked as your "
             f"module are put together, in order, into `{stem}.py` and graded by the course's hidden tests "
             "in an isolated process, exactly as `ppo-course grade` grades a submitted file. "
             "Cells must hold plain Python (no `%magics` or `!shell` lines). Run `ppo-course check` for the "
             "public tests and feedback before you submit.")
    cells.append(new_markdown_cell(intro, metadata={"nbgrader": nbgrader_meta(f"{stem}-intro", grade=False,
                                                                               solution=False, locked=True)}))
    siblings = _imports_siblings(source)
    if siblings:
        cells.append(new_code_cell(SETUP_CELL.format(siblings=siblings), metadata={
            "nbgrader": nbgrader_meta(f"{stem}-setup", grade=False, solution=False, locked=True)}))
    for chunk in chunks:
        grade_id = f"{stem}-{chunk.name}"
        text = todo_above_markers(chunk.source) if chunk.is_solution else chunk.source
        meta = {"nbgrader": nbgrader_meta(grade_id, grade=False, solution=chunk.is_solution,
                                          locked=not chunk.is_solution),
                "ppo_course": {"module": stem}}
        cells.append(new_code_cell(text, metadata=meta))
    if points > 0:
        cells.append(new_code_cell(TEST_CELL.format(title=title, points=points), metadata={
            "nbgrader": nbgrader_meta(f"{stem}-graded", grade=True, solution=False, locked=True, points=points),
            "ppo_course": {"graded": stem}}))
    nb = new_notebook(cells=cells, metadata={"kernelspec": dict(KERNELSPEC),
                                             "language_info": {"name": "python"}})
    nbformat.validate(nb)
    return nb


def module_source(nb: nbformat.NotebookNode, stem: str) -> str:
    """The module text of ``stem``: its module cells joined in notebook order (see the module docstring)."""
    parts = [cell.source for cell in nb.cells
             if cell.cell_type == "code" and cell.get("metadata", {}).get("ppo_course", {}).get("module") == stem]
    return "\n\n\n".join(parts) + "\n"
