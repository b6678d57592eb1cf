"""An independent scan of a student bundle for instructor material (used by test_release.py).

It does not reuse `grader.platforms.release` or `tools/make_exercises.py`: it reads the
instructor sources itself and looks for their fingerprints in the bundle.

- solution bodies: every code line between `### BEGIN SOLUTION` and `### END SOLUTION`
  of `solutions/*.py`, taken two consecutive lines at a time (one short line such as
  `return loss` may legitimately appear anywhere; a pair may not);
- reference and hidden-test code: the AST of every function body of `ppo_reference/`,
  `grader/hidden/` and `solutions/` with three statements or more, docstring removed
  (a renamed file or reformatted copy still matches);
- answer keys: a `keys.py` or another module of `quiz_bank/instructor/`, or an `answer`/`explanation` field in a quiz YAML file;
- expected values: any data file (json, pt, npy, npz, pkl, csv) or a file with a
  hidden test's name; an import of ppo_reference, grader or solutions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
DATA_SUFFIXES = {".json", ".pt", ".pth", ".npy", ".npz", ".pkl", ".pickle", ".csv", ".sqlite3", ".db"}
FORBIDDEN_IMPORTS = ("ppo_reference", "grader", "lms", "sandbox_child", "solutions")
#: The data files a bundle may hold (each one's reason where it is checked).
ALLOWED_DATA = ("ppo_course/grading_kit/known_mistakes.json", "ppo_course/training/reference_runs.json")


def solution_line_pairs(solutions: Path) -> set[tuple[str, str]]:
    """Consecutive pairs of stripped code lines inside the solution regions."""
    pairs: set[tuple[str, str]] = set()
    for path in sorted(solutions.glob("*.py")):
        inside, code = False, []
        for line in path.read_text(encoding="utf-8").splitlines():
            s = line.strip()
            if s == BEGIN:
                inside, code = True, []
            elif s == END:
                inside = False
                pairs |= set(zip(code, code[1:]))
            elif inside and s and not s.startswith("#"):
                code.append(s)
    return pairs


def _bodies(source: str, min_statements: int = 3) -> set[str]:
    """ast.dump of every function body (docstring dropped) with at least `min_statements` statements."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = list(node.body)
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                body = body[1:]
            if len(body) >= min_statements:
                out.add(ast.dump(ast.Module(body=body, type_ignores=[])))
    return out


def instructor_bodies(repo: Path) -> dict[str, str]:
    """{function-body fingerprint: where it comes from} for the reference, hidden tests and solutions."""
    found: dict[str, str] = {}
    for folder in ("ppo_reference", "grader/hidden", "solutions"):
        for path in sorted((repo / folder).rglob("*.py")):
            try:
                bodies = _bodies(path.read_text(encoding="utf-8"))
            except SyntaxError:
                continue  # a file being edited right now; the line-pair check still covers solutions
            for body in bodies:
                found.setdefault(body, str(path.relative_to(repo)))
    return found


def public_bodies(repo: Path) -> set[str]:
    """Fingerprints of the public package itself (shared helpers there are public by design)."""
    out: set[str] = set()
    for path in sorted((repo / "ppo_course").rglob("*.py")):
        try:
            out |= _bodies(path.read_text(encoding="utf-8"))
        except SyntaxError:
            continue
    return out


def scan(bundle: Path, repo: Path) -> list[str]:
    """Every leak found in `bundle`, one human-readable line each (empty list: clean)."""
    problems: list[str] = []
    pairs = solution_line_pairs(repo / "solutions")
    public = public_bodies(repo)
    secret_bodies = {k: v for k, v in instructor_bodies(repo).items() if k not in public}
    hidden_names = {p.name for p in (repo / "grader" / "hidden").glob("test_*.py")}
    key_modules = {"keys.py"} | {p.name for p in (repo / "quiz_bank" / "instructor").glob("*.py") if p.name != "__init__.py"}
    public_test_dir = bundle / "ppo_course" / "public_tests"
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        rel = path.relative_to(bundle)
        if rel.parts[0] in FORBIDDEN_IMPORTS:
            problems.append(f"{rel}: instructor package {rel.parts[0]}/ in the bundle")
        # known_mistakes.json: what the catalogued *buggy* variants return on the public tests' own inputs
        # (tools/make_known_mistakes.py), so that a public test can name the mistake; no correct answer.
        # reference_runs.json: the reference's toy training curves for train --mine (seed 0, the toy preset and
        # the guide's three runs); the hidden tests' steps use seeds and settings drawn from the grader's secret.
        if path.suffix.lower() in DATA_SUFFIXES and rel.as_posix() not in ALLOWED_DATA:
            problems.append(f"{rel}: data file (possible expected values)")
        if path.name in key_modules:
            problems.append(f"{rel}: answer-key module")
        if path.name in hidden_names and path.parent != public_test_dir:
            problems.append(f"{rel}: has the name of a hidden test module")
        if path.suffix not in (".py", ".yaml", ".yml", ".md", ".toml", ".txt", ""):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if BEGIN in text or END in text:
            problems.append(f"{rel}: holds nbgrader solution markers")
        lines = [s.strip() for s in text.splitlines() if s.strip() and not s.strip().startswith("#")]
        for pair in set(zip(lines, lines[1:])) & pairs:
            problems.append(f"{rel}: solution code {pair[0]!r} / {pair[1]!r}")
        if path.suffix == ".py":
            try:
                tree = ast.parse(text)
            except SyntaxError as exc:
                problems.append(f"{rel}: does not parse ({exc})")
                continue
            for body in _bodies(text) & secret_bodies.keys():
                problems.append(f"{rel}: a function body copied from {secret_bodies[body]}")
            for node in ast.walk(tree):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                for name in names:
                    if name.split(".")[0] in FORBIDDEN_IMPORTS:
                        problems.append(f"{rel}:{node.lineno}: imports {name}")
        if path.suffix in (".yaml", ".yml") and rel.parts[0] == "quiz_bank":
            data = yaml.safe_load(text) or {}
            for q in data.get("questions", []) if isinstance(data, dict) else []:
                for field in ("answer", "explanation"):
                    if isinstance(q, dict) and field in q:
                        problems.append(f"{rel}: question {q.get('id')} holds its {field}")
    return problems
