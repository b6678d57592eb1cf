"""Which submissions run code that ``similarity`` cannot read: flagged for review, with the reason.

``similarity`` fingerprints ``.py`` text, while the sandbox copies and runs
every file of a submission. A solution stored compressed in a data file and
executed from a one-line module runs in full and shows 0 %
similarity. So every staged submission is also scanned here, with Python's own
parser (:mod:`ast`, never regular expressions), and flagged for a human when
it loads code from data:

* calls of ``exec``, ``eval``, ``compile``, ``__import__`` (builtins that run
  or build code from a string or bytes);
* imports of modules that turn data into code or objects: ``marshal``,
  ``pickle``, ``zlib``, ``lzma``, ``bz2``, ``gzip``, ``base64``, ``binascii``,
  ``codecs``, ``zipimport``, ``runpy``, ``importlib``, ``types`` (``CodeType``),
  ``builtins``; the name ``__builtins__``, and the name of one of the builtins
  above written as a string (``getattr(builtins, "exec")``);
* reading a file: ``open(...)``, ``.read_text()``, ``.read_bytes()``,
  ``.open()``, ``numpy.load``/``torch.load`` style ``.load(...)`` calls;
* files that Python can run but that are not Python source: ``.pyc``/``.pyo``
  (sourceless imports), extension modules (``.so``, ``.pyd``), ``.pth``;
* a ``.py`` file that does not parse (it cannot be compared, and the
  sandbox will not run it either: reported so the TA knows why).

An honest PPO exercise does none of these (the stubs and the reference
solutions are clean; tested), so a flag is a reason to read the submission,
not a verdict. Each finding names the file, the line and the construct.
"""

from __future__ import annotations

import ast
import csv
import html
import io
from dataclasses import dataclass
from pathlib import Path

CODE_BUILTINS = frozenset({"exec", "eval", "compile", "__import__"})
DATA_TO_CODE_MODULES = frozenset({"marshal", "pickle", "zlib", "lzma", "bz2", "gzip", "base64", "binascii",
                                  "codecs", "zipimport", "runpy", "importlib", "types", "dill", "cloudpickle",
                                  "builtins"})
FILE_READERS = frozenset({"read_text", "read_bytes", "load", "loads", "fromfile", "loadtxt", "genfromtxt"})
RUNNABLE_NOT_SOURCE = frozenset({".pyc", ".pyo", ".so", ".pyd", ".pth"})
REVIEW_CSV = "flagged_for_review.csv"
REVIEW_COLUMNS = ("student_id", "file", "line", "reason")


@dataclass(frozen=True)
class Finding:
    """One reason to review a submission: whose, which file (relative), which line (0: the file), why."""

    owner: str
    file: str
    line: int
    reason: str


class _Scanner(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            root = alias.name.split(".")[0]
            if root in DATA_TO_CODE_MODULES:
                self.found.append((node.lineno, f"imports {alias.name} (turns data into code or objects)"))
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        root = (node.module or "").split(".")[0]
        if root in DATA_TO_CODE_MODULES:
            self.found.append((node.lineno, f"imports from {node.module} (turns data into code or objects)"))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in CODE_BUILTINS:
            self.found.append((node.lineno, f"calls {func.id}() (runs code built from data)"))
        elif isinstance(func, ast.Name) and func.id == "open":
            self.found.append((node.lineno, "calls open() (reads a file at run time)"))
        elif isinstance(func, ast.Attribute) and func.attr in FILE_READERS | {"open"}:
            self.found.append((node.lineno, f"calls .{func.attr}() (reads a file or deserialises data)"))
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self.found.append((node.lineno, "uses __builtins__ (reaches exec/eval by name)"))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value in CODE_BUILTINS:
            self.found.append((node.lineno, f"names {node.value!r} as a string (a builtin that runs code)"))



def decode_source(raw: bytes) -> str:
    """Text of a source file read as bytes: UTF-16 when it has a BOM, else UTF-8 (bad bytes replaced); NULs dropped."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = raw.decode("utf-16", "replace")
    else:
        text = raw.decode("utf-8-sig", "replace")
    return text.replace("\x00", "")

def scan_source(text: str) -> list[tuple[int, str]]:
    """``[(line, reason)]`` for one Python source text (module docstring's list), in line order.

    A file that does not parse gives one finding at its syntax error's line.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        why = f"does not parse as Python ({type(exc).__name__}): what it runs cannot be checked (its text is still compared)"
        return [(getattr(exc, "lineno", 0) or 0, why)]
    scanner = _Scanner()
    scanner.visit(tree)
    return sorted(set(scanner.found))


def scan_submission(root: Path, owner: str) -> list[Finding]:
    """Every finding of one staged submission folder (all files, any depth), sorted by file and line.

    Args:
        root: the intake's staged copy (``ppo_course.submission_rules.stage_submission``), never the original.
        owner: the student id for the report.
    """

    root = Path(root)
    findings: list[Finding] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if "__pycache__" in path.parts and path.suffix == ".pyc":
            findings.append(Finding(owner, rel, 0, "compiled bytecode in __pycache__ (runs in place of a source "
                                                   "that may differ)"))
        elif path.suffix.lower() in RUNNABLE_NOT_SOURCE:
            findings.append(Finding(owner, rel, 0, f"a {path.suffix} file: Python can run it, similarity cannot "
                                                   "read it"))
        elif path.suffix == ".py":
            findings += [Finding(owner, rel, line, why) for line, why in scan_source(decode_source(path.read_bytes()))]
    return findings


def review_csv(findings: list[Finding]) -> str:
    """CSV text with :data:`REVIEW_COLUMNS`; text cells neutralised against spreadsheet formulas."""
    from ppo_course.text_safety import csv_cell

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(REVIEW_COLUMNS)
    for f in findings:
        writer.writerow([csv_cell(f.owner), csv_cell(f.file), f.line, csv_cell(f.reason)])
    return buf.getvalue()


def review_html(findings: list[Finding]) -> str:
    """The report's section for flagged submissions (every name escaped), or ``""`` when none is flagged."""
    if not findings:
        return ""
    e = html.escape
    owners = sorted({f.owner for f in findings})
    out = [f"<h2>Flagged for review: code similarity cannot see ({len(owners)} submission(s))</h2>",
           "<p>These submissions load or run code from data (or hold files Python runs that are not source), so "
           "the share matched above says nothing about what runs. Read them.</p>",
           "<table class='list'><tr><th>student</th><th>file</th><th>line</th><th>reason</th></tr>"]
    out += [f"<tr><td>{e(f.owner)}</td><td>{e(f.file)}</td><td>{f.line}</td><td>{e(f.reason)}</td></tr>"
            for f in findings]
    out.append("</table>")
    return "\n".join(out)
