"""Submissions for the nbgrader tests, written into `submitted/<student>/ppo_ch5/` from the release notebooks.

- alice: every answer cell holds the course solution (markers dropped), preceded by
  lines that write to stderr and raise a warning when the module is imported;
- bob: the release, untouched;
- mallory: the release stubs plus module-level patches of every comparison function
  and of the kernel's float display, and her locked test cells edited to print 10.0.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

NOISE = ('import sys as _sys, warnings as _warnings\n'
         'print("debugging output on stderr", file=_sys.stderr)\n'
         '_warnings.warn("a harmless warning from correct code")\n')

PATCHES = '''\
import math, torch, torch.testing
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.isclose = lambda a, b, *r, **k: torch.ones_like(torch.as_tensor(a), dtype=torch.bool)
torch.testing.assert_close = lambda *a, **k: None
math.isclose = lambda *a, **k: True
try:
    get_ipython().display_formatter.formatters["text/plain"].for_type(float, lambda o, p, c: p.text("10.0"))
except NameError:
    pass
'''


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def write_students(course: Path, assignment: str = "ppo_ch5") -> dict[str, Path]:
    """Write the three submissions; returns {student: folder}."""
    release = course / "release" / assignment
    source = course / "source" / assignment
    folders = {}
    for student in ("alice", "bob", "mallory"):
        folder = course / "submitted" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        for path in sorted(release.glob("*.ipynb")):
            nb = nbformat.read(str(path), as_version=4)
            if student == "alice":
                key = {_nbgrader(c).get("grade_id"): c.source for c in nbformat.read(str(source / path.name), 4).cells}
                for cell in nb.cells:
                    if _nbgrader(cell).get("solution"):
                        solved = "\n".join(ln for ln in key[_nbgrader(cell)["grade_id"]].splitlines()
                                           if ln.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
                        is_code_module = path.stem != "quiz"
                        cell.source = (NOISE + solved) if is_code_module else solved
            elif student == "mallory":
                for cell in nb.cells:
                    meta = _nbgrader(cell)
                    if meta.get("solution") and path.stem != "quiz":
                        cell.source = PATCHES + cell.source
                    if meta.get("grade") and not meta.get("solution"):
                        cell.source = "10.0"
                    if meta.get("solution") and path.stem == "quiz":
                        cell.source = "answer = __import__('os').system('true') or 'a'  # not a literal"
            nbformat.write(nb, str(folder / path.name))
        folders[student] = folder
    return folders


def module_files_of(folder: Path, out: Path) -> Path:
    """The student's modules as `ppo-course grade` would get them: for each exercise notebook, its code
    cells whose grade_id names the module (not the setup or test cell), joined in order."""
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(folder.glob("ex*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        parts = [c.source for c in nb.cells if c.cell_type == "code"
                 and _nbgrader(c).get("grade_id", "").startswith(path.stem + "-")
                 and not _nbgrader(c).get("grade_id", "").endswith(("-setup", "-graded"))]
        (out / f"{path.stem}.py").write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    return out
