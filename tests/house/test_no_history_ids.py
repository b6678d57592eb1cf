"""House rule: production code says what IS; which issue or attack made a rule is history (CHANGELOG.md).

Scans the comments and string literals (docstrings included) of every ``.py`` file of the production
folders: ``grader/``, ``ppo_course/``, ``quiz_bank/``, ``ppo_reference/``, ``solutions/``, ``tools/``,
``benchmarks/`` and any other top-level package (a folder with ``__init__.py``), never ``tests/``.
Python's own tokenizer separates comments and strings from code, so a variable named ``a12`` is not an
id. A history id is one of (``HISTORY_ID``):

* an issue number: ``issue 19``, ``Issue 20's``, ``issues 5, 20``, ``issue #34``;
* a pull-request or issue reference in parentheses: ``(#34)``;
* the red team: ``red team``, ``red-team``;
* an attack id: ``a`` followed by two or three digits as a word (``a109``, ``(a38)``, ``hostile a31``),
  or ``attack``/``hostile`` followed by ``a`` and one digit (``attack a7``).

Where the rules came from is CHANGELOG.md's table "Where the rules came from".
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRODUCTION = ("grader", "ppo_course", "quiz_bank", "ppo_reference", "solutions", "tools", "benchmarks")
SKIPPED_PARTS = {"__pycache__", "tests", ".venv", "venv", "build", "dist", "exercises", "examples"}

HISTORY_ID = re.compile(
    r"\bissues?\s+#?\d+"          # issue 19, issues 5, 20, issue #34
    r"|\(#\d+\)"                  # (#34)
    r"|\bred[- ]team\b"           # red team, red-team
    r"|\ba\d{2,3}\b"              # a109, (a38), hostile attack a39
    r"|\b(?:attack|hostile)\s+a\d\b",  # attack a7 (one digit: only after "attack" or "hostile")
    re.IGNORECASE,
)
#: Lower-case ``a`` only for a bare attack id (an ``A100`` GPU is not one).
BARE_ATTACK = re.compile(r"\bA\d{2,3}\b")


def _folders() -> list[Path]:
    found = {REPO / name for name in PRODUCTION}
    found |= {p.parent for p in REPO.glob("*/__init__.py")}
    return sorted(p for p in found if p.is_dir() and p.name not in SKIPPED_PARTS)


def _sources() -> list[Path]:
    return sorted(p for folder in _folders() for p in folder.rglob("*.py")
                  if not SKIPPED_PARTS & set(p.relative_to(REPO).parts))


def history_ids(source: str) -> list[tuple[int, str]]:
    """``(line, matched text)`` of every history id in the comments and string literals of ``source``."""
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.STRING) and tok.type != getattr(tokenize, "FSTRING_MIDDLE", -1):
            continue
        for m in HISTORY_ID.finditer(tok.string):
            if BARE_ATTACK.fullmatch(m.group()):
                continue
            line = tok.start[0] + tok.string.count("\n", 0, m.start())
            found.append((line, m.group()))
    return found


def test_the_regex_finds_each_kind_of_id_and_spares_code():
    """The forms this rule forbids are found; code names and GPU names are not."""
    source = ('"""Bound to its student (issue 20 item 6); Issue 19, class 1; issues 5, 20."""\n'
              "x = 1  # red team a107 and red-team attack a99\n"
              "y = 'the hostile suite\\'s a30 (a38) hostile a31 (#34) attack a7'\n"
              "a12 = 3  # an A100 GPU; class 3; area 51\n")
    got = [text.lower() for _, text in history_ids(source)]
    assert got == ["issue 20", "issue 19", "issues 5", "red team", "a107", "red-team", "a99",
                   "a30", "a38", "a31", "(#34)", "attack a7"]


def test_no_production_file_names_an_issue_or_attack():
    """Every production ``.py`` file is free of issue and red-team ids (history lives in CHANGELOG.md)."""
    sources = _sources()
    assert len(sources) > 100, "the scan found too few files: the folder list is wrong"
    offenders = [f"{p.relative_to(REPO)}:{line}: {text}"
                 for p in sources for line, text in history_ids(p.read_text(encoding="utf-8"))]
    assert not offenders, "history ids in production code (move them to CHANGELOG.md):\n" + "\n".join(offenders)
