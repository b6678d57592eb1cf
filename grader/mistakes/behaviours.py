"""The promises of the exercise docstrings, extracted by rule, and the hidden tests that grade them.

A *promise* is a sentence of a public function's, class's or method's
docstring in ``solutions/ex*.py`` (the generated ``exercises/`` stubs carry the
same docstrings) that states a behaviour a grader can check:

* the function itself: its one-line summary (what it returns);
* every entry of its ``Raises:`` section;
* every entry of its ``Args:`` section (one clause per parameter or group of parameters) and its whole
  ``Returns:`` section (shapes, dtype/device, what the output carries);
* every sentence before ``Args:`` that says what must, must not, only or never
  happen (the words of ``MARKERS``).

``grader/mistakes/behaviours.yaml`` lists each promise (quoted), with the hidden
test(s) that grade it, plus the behaviours stated by ``shared/CONTRACT.md`` and
``docs/ARCHITECTURE.md``; ``tests/grading/test_behaviours.py`` fails when a
promise has no entry or an entry names a test that does not exist.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pydantic import BaseModel, Field

REPO = Path(__file__).resolve().parents[2]
BEHAVIOURS_FILE = Path(__file__).with_name("behaviours.yaml")
#: Words that make a sentence a checkable promise.
MARKERS = ("must", "never", "raise", "only", "copies", "copy", "detached", "in place", "exactly", "same")


class Promise(BaseModel):
    """One promise of a docstring."""

    exercise: str = Field(description="module stem, e.g. 'ex5_rollout_buffer'")
    where: str = Field(description="the function, class or 'Class.method' whose docstring states it")
    promise: str = Field(description="the sentence, whitespace collapsed")


class Behaviour(BaseModel):
    """One entry of behaviours.yaml."""

    exercise: str
    where: str
    source: str = Field(default="docstring", description="docstring | contract | architecture")
    promise: str
    tests: list[str] = Field(description="hidden tests (grader/hidden/test_<exercise>.py) that grade it")


def normalise(text: str) -> str:
    """Whitespace collapsed, backticks dropped (the form compared between docstring and YAML)."""
    return " ".join(text.replace("``", "").replace("`", "").split())


def _sentences(paragraphs: str) -> list[str]:
    text = " ".join(paragraphs.split())
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`(])", text) if s.strip()]


def _clauses(entries: list[str], line: str, stripped: str, base: list[int]) -> None:
    """Add `line` to an ``Args:`` section's entries: a new entry at the section's first indent, else a
    continuation of the last one."""
    indent = len(line) - len(line.lstrip())
    if not base:
        base.append(indent)
    if indent <= base[0] and re.match(r"^[\w*][\w*, ]*: ", stripped):
        entries.append(stripped)
    elif entries:
        entries[-1] += " " + stripped


def _doc_promises(doc: str) -> list[str]:
    lines = doc.splitlines()
    out = [normalise(lines[0])] if lines else []
    body, raises, steps, section = [], [], [], None
    args: list[str] = []
    returns: list[str] = []
    args_indent: list[int] = []
    for line in lines[1:]:
        stripped = line.strip()
        if re.fullmatch(r"(Args|Returns|Raises|Yields|Attributes):", stripped) or stripped.startswith("Example"):
            section = stripped.split(":")[0].split(" ")[0]
            continue
        if section == "Args" and stripped:
            _clauses(args, line, stripped, args_indent)
            continue
        if section in ("Returns", "Yields") and stripped:
            returns.append(stripped)
            continue
        if section is None:
            if stripped.startswith(">>>") or stripped.startswith("..."):
                continue
            if re.match(r"^\d+\. ", stripped):  # a numbered step (exercise 7's order): one promise each
                steps.append(stripped)
            elif steps and stripped:
                steps[-1] += " " + stripped
            else:
                body.append(stripped)
        elif section == "Raises":
            if re.match(r"^[A-Z]\w*(Error|Exception|Iteration)?:", stripped) or stripped.startswith("Whatever"):
                raises.append(stripped)
            elif raises and stripped:
                raises[-1] += " " + stripped
    for sentence in _sentences("\n".join(body)):
        if any(m in sentence.lower() for m in MARKERS):
            out.append(normalise(sentence))
    out += [normalise(step) for step in steps]
    out += [normalise(r) for r in raises]
    out += [normalise(a) for a in args]
    if returns:
        out.append(normalise("Returns: " + " ".join(returns)))
    return list(dict.fromkeys(out))


def extract_promises(solutions: Path = REPO / "solutions") -> list[Promise]:
    """Every promise of every public docstring of solutions/ex*.py (see the module docstring)."""
    found: list[Promise] = []
    for path in sorted(solutions.glob("ex*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

        def visit(node: ast.AST, prefix: str = "") -> None:
            for child in getattr(node, "body", []):
                if isinstance(child, (ast.FunctionDef, ast.ClassDef)) and not child.name.startswith("_"):
                    where = prefix + child.name
                    for text in _doc_promises(ast.get_docstring(child) or ""):
                        found.append(Promise(exercise=path.stem, where=where, promise=text))
                    if isinstance(child, ast.ClassDef):
                        visit(child, where + ".")

        visit(tree)
    return found


def load_behaviours(path: Path = BEHAVIOURS_FILE) -> list[Behaviour]:
    """The entries of behaviours.yaml (pydantic-validated)."""
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [Behaviour.model_validate(item) for item in data["behaviours"]]


def hidden_test_names(exercise: str) -> set[str]:
    """The test functions defined in grader/hidden/test_<exercise>.py (read with ast, not imported)."""
    path = REPO / "grader" / "hidden" / f"test_{exercise}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
