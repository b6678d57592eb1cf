"""House rules on imports: no private name (``_x``) imported from another module, and no re-export face.

Scans every ``.py`` file of the house's packages (``test_module_size.PACKAGES``) by reading the source:

* a *private import* is ``from M import _x`` where ``M`` is a module of the house (a private name is the
  module's own business: publish the helper, or keep both halves in one module);
* a *re-export face* is a module (not a package's ``__init__.py``) that imports a name from a house module
  and never uses it (it is there to be imported from here: the caller should import it from its home),
  or that binds a second name to an imported or defined class or function (``Old = New``).

Importing a module for its side effects (``from pkg import module``, e.g. to load it before a fork) is
neither. The allowances name what is still so in code other changes own; each entry must still be true
(a stale entry fails), so the lists may only shrink.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.house.test_module_size import PACKAGES, REPO

#: ``"path: module.name"`` private imports still made by modules another change is rewriting.
PRIVATE_IMPORT_ALLOWANCE: set[str] = set()

#: ``"path: name"`` re-exported (or aliased) names that modules another change is rewriting still import.
REEXPORT_ALLOWANCE: set[str] = set()

HOUSE_TOP = {"grader", "lms", "ppo_course", "ppo_reference", "quiz_bank", "sandbox_child"}


#: Imports that would point back up: (modules under this prefix, may not import this prefix). The floor
#: (``lms``) sits below the grader and the quiz server; the public quiz (``quiz_bank/*.py``, shipped to
#: students) reaches its instructor side only through ``quiz_bank.extension_point``, by name.
UPWARD: tuple[tuple[str, str], ...] = (
    ("lms", "grader"), ("lms", "quiz_bank"),
    ("quiz_bank", "grader"),
    ("ppo_course", "grader"), ("ppo_course", "lms"), ("ppo_course", "ppo_reference"), ("ppo_course", "sandbox_child"),
    ("sandbox_child", "grader"), ("sandbox_child", "lms"), ("sandbox_child", "quiz_bank"),
    ("sandbox_child", "ppo_reference"),
)


def _is_module(module: str, name: str) -> bool:
    """Whether ``module.name`` is itself a module or package of the repository."""
    base = REPO.joinpath(*module.split("."), name)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _absolute(module: str | None, level: int, path: str) -> str:
    """The absolute dotted name of an import's module (relative imports resolved against ``path``)."""
    if level == 0:
        return module or ""
    parts = path.removesuffix(".py").split("/")[:-level]
    return ".".join(parts + ([module] if module else []))


_ANNOTATION = re.compile(r"[A-Za-z_][\w.\[\], |]*")


def _names_used(tree: ast.AST) -> set[str]:
    """Every bare name the module reads, including those inside string annotations (``"Limits | None"``)."""
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _ANNOTATION.fullmatch(node.value):
            used |= set(re.findall(r"[A-Za-z_]\w*", node.value))
    return used


def house_imports(path: str, tree: ast.AST):
    """``(line, absolute module, imported name, bound name)`` of each ``from M import x`` of a house module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _absolute(node.module, node.level, path)
            if module.split(".")[0] in HOUSE_TOP:
                for alias in node.names:
                    yield node.lineno, module, alias.name, alias.asname or alias.name


def private_imports(path: str, source: str) -> list[str]:
    """``"path: module.name"`` for each private name this module imports from a house module."""
    return [f"{path}: {module}.{name}" for _, module, name, _ in house_imports(path, ast.parse(source))
            if name.startswith("_") and not name.startswith("__")]


def reexports(path: str, source: str) -> list[str]:
    """``"path: name"`` for each name this module re-exports (imported, unused) or aliases (``Old = New``)."""
    if path.endswith("__init__.py"):
        return []
    tree = ast.parse(source)
    used = _names_used(tree)
    imports = list(house_imports(path, tree))
    found = [f"{path}: {bound}" for _, module, name, bound in imports if bound not in used and not _is_module(module, name)]
    imported = {bound for *_, bound in imports}
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Name) and node.value.id in imported | defined):
            found.append(f"{path}: {node.targets[0].id}")
    return found


def imported_modules(path: str, source: str) -> set[str]:
    """Every module this one imports, at the top or inside a function (absolute dotted names)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node.module, node.level, path)
            found |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return found


def upward_imports(path: str, source: str) -> list[str]:
    """``"path: module"`` for each import that points back up (``UPWARD``, and the public quiz's instructor)."""
    me = path.removesuffix(".py").replace("/", ".")
    rules = [(low, high) for low, high in UPWARD if me.startswith(low + ".")]
    if me.startswith("quiz_bank.") and not me.startswith("quiz_bank.instructor."):
        rules.append(("quiz_bank", "quiz_bank.instructor"))
    return sorted(f"{path}: {module}" for module in imported_modules(path, source)
                  for _, high in rules if module == high or module.startswith(high + "."))


#: The packages whose imports are read: those the size rules cover, and the reference oracle (whose long
#: documented functions the size rule leaves alone, but whose seams the import rules hold like the rest).
IMPORT_PACKAGES = (*PACKAGES, "ppo_reference")


def _house() -> dict[str, str]:
    return {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8")
            for package in IMPORT_PACKAGES for p in sorted((REPO / package).rglob("*.py")) if "__pycache__" not in p.parts}


def _against(found: list[str], allowance: set[str], what: str) -> list[str]:
    problems = [f"{entry}: {what}" for entry in sorted(found) if entry not in allowance]
    problems += [f"{entry} is allowed but no longer found: remove it from the allowance"
                 for entry in sorted(allowance - set(found))]
    return problems


def test_no_private_name_is_imported_across_modules():
    found = [entry for path, source in _house().items() for entry in private_imports(path, source)]
    assert _against(found, PRIVATE_IMPORT_ALLOWANCE, "a private name imported from another module") == []


def test_no_module_is_a_re_export_face():
    found = [entry for path, source in _house().items() for entry in reexports(path, source)]
    assert _against(found, REEXPORT_ALLOWANCE, "re-exported or aliased: import it from its home") == []


def test_no_import_points_back_up():
    found = [entry for path, source in _house().items() for entry in upward_imports(path, source)]
    assert found == []


@pytest.mark.parametrize(("path", "source", "found"), [
    ("lms/roster.py", "def f():\n    from grader.records import x\n", ["lms/roster.py: grader.records", "lms/roster.py: grader.records.x"]),
    ("lms/lti/tool.py", "import quiz_bank.engine\n", ["lms/lti/tool.py: quiz_bank.engine"]),
    ("quiz_bank/engine.py", "from quiz_bank.instructor import keys\n",
     ["quiz_bank/engine.py: quiz_bank.instructor", "quiz_bank/engine.py: quiz_bank.instructor.keys"]),
    ("quiz_bank/instructor/extension.py", "from quiz_bank.instructor import keys\n", []),
    ("grader/batch.py", "from lms import roster\nfrom quiz_bank import engine\n", []),
])
def test_the_upward_check_on_hand_made_modules(path, source, found):
    """Lazy imports count; the instructor side may import itself; the grader may import the floor and the quiz."""
    assert upward_imports(path, source) == found


@pytest.mark.parametrize(("source", "private", "faces"), [
    ("from grader.a import _x\n_x()\n", ["grader/m.py: grader.a._x"], []),
    ("from .a import _x\n_x()\n", ["grader/m.py: grader.a._x"], []),
    ("from os import _exit\n_exit(0)\n", [], []),
    ("from grader.a import f\n", [], ["grader/m.py: f"]),
    ("from grader.a import f\nf()\n", [], []),
    ("from grader.a import F\ndef g(x: 'F'): pass\n", [], []),
    ("from grader.a import F\nOld = F\nOld()\n", [], ["grader/m.py: Old"]),
    ("class F: pass\nOld = F\n", [], ["grader/m.py: Old"]),
    ("from grader import records\n", [], []),
])
def test_the_checks_on_hand_made_modules(source, private, faces):
    """Each rule on a module written by hand: what it must name, and what it must leave alone."""
    assert private_imports("grader/m.py", source) == private
    assert reexports("grader/m.py", source) == faces


def test_the_allowances_can_only_shrink():
    """A stale entry (no longer found) is reported, so a fixed module leaves the list."""
    assert _against([], {"grader/m.py: f"}, "x") == ["grader/m.py: f is allowed but no longer found: "
                                                      "remove it from the allowance"]
