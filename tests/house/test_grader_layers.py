"""docs/ARCHITECTURE.md's "grader/ in stage order" holds for the code: no import inside grader/ points back up.

The stage list is read from the document itself (its fenced block, the top stage first; the rooms named
on one line share a floor), and every ``import grader.x`` / ``from grader.x import`` of every module under
grader/ (function-level imports included, read with ``ast``) must name a room on the same floor or below.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def _floors() -> dict[str, int]:
    """{room ("runners/", "batch.py"): floor}, floor 0 the top, from the document's stage list."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split("### grader/ in stage order", 1)[1].split("```", 2)[1]
    floors: dict[str, int] = {}
    lines = [line for line in block.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        for token in line.split():
            if not re.fullmatch(r"[a-z_]+(/|\.py)", token):
                break
            floors[token] = i
    return floors


def _room(module: str) -> str:
    """The room of a dotted module under grader ("grader.runners.warm" -> "runners/")."""
    parts = module.split(".")[1:]
    if not parts:
        return ""
    pkg = ROOT / "grader" / parts[0]
    return parts[0] + "/" if pkg.is_dir() else parts[0] + ".py"


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names if a.name.startswith("grader.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "grader":
                names += [f"grader.{a.name}" for a in node.names]
            elif node.module.startswith("grader."):
                names.append(node.module)
    return names


def test_the_stage_list_names_every_room_of_grader():
    floors = _floors()
    rooms = {p.name + ("/" if p.is_dir() else "") for p in (ROOT / "grader").iterdir()
             if (p.is_dir() and (p / "__init__.py").is_file()) or (p.suffix == ".py" and p.name != "__init__.py")}
    assert rooms - set(floors) == set(), "rooms of grader/ missing from ARCHITECTURE.md's stage list"
    assert set(floors) - rooms == set(), "the stage list names rooms grader/ does not have"


def test_no_import_inside_grader_points_back_up():
    floors = _floors()
    up = []
    for path in sorted((ROOT / "grader").rglob("*.py")):
        rel = path.relative_to(ROOT / "grader")
        if rel.name == "__init__.py" and len(rel.parts) == 1:
            continue
        here = rel.parts[0] + ("/" if len(rel.parts) > 1 else "")
        for name in _imports(path):
            there = _room(name)
            if there and there != here and floors[there] < floors[here]:
                up.append(f"grader/{rel.as_posix()} imports {name} ({there} stands above {here})")
    assert up == []
