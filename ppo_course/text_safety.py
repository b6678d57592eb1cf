"""Student-derived text made safe for the TA's files: caps, Markdown fences, escapes, CSV formulas.

Why: an unbounded name made an 18.9 MB results.json and a 3 MB
gradebook cell; a message closed the Markdown fence of feedback.md and forged a
total line and a remote image; a file name put a leading `=` into a gradebook
cell. Every writer of a file a TA or a student opens (results.json,
feedback.md, gradebook.csv, nbgrader's grades.csv, report.md, the Gradescope
output, nbgrader feedback) passes student-derived text (messages, details,
file and folder names, student ids) through this module:

* `cap`: at most `MAX_CHARS` characters (bytes are decoded as UTF-8 with
  replacement), every control, format, surrogate, private-use and line/paragraph
  separator character (Unicode categories Cc, Cf, Cs, Co, Zl, Zp) other than
  newline and tab replaced by "?", "… (truncated)" appended when cut (a list of
  ranges would let U+061C, U+FEFF, U+2060-U+2064 and the invisible
  tag characters U+E0000-U+E007F through);
* `fenced`: a Markdown code block whose backtick fence is longer than any run
  of backticks in the text (so the text cannot close it);
* `md_inline`: text for a Markdown line: newlines flattened, HTML escaped and
  Markdown's active characters (links, images, emphasis, tables) backslash-escaped;
* `csv_cell`: a spreadsheet cell that no spreadsheet evaluates (a leading
  `= + - @ tab CR` gets a `'` prefix, OWASP's advice for CSV injection).

It lives in the public package (it holds no secret, imports only the standard
library) so that `quiz_bank`, which ships to students and never imports
`grader`, writes its gradebook through it too.
"""

from __future__ import annotations

import csv
import html
import io
import re
import unicodedata
from collections.abc import Iterable

#: The most characters of student-derived text kept per piece (a test's output, a message, a name).
MAX_CHARS = 4096
TRUNCATED = "… (truncated)"
#: Characters that make a spreadsheet read a cell as a formula (OWASP CSV injection), with their full-width forms
#: (U+FF1D, U+FF0B, U+FF0D, U+FF20), which some spreadsheets fold to ASCII on input.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
#: What a spreadsheet may skip before it reads a formula: text whose first character after these is one of
#: `FORMULA_START` is neutralised too (" =1+1").
_LEADING_BLANKS = " \t\r\n\u00a0\u3000"

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # the ASCII controls but tab and newline
#: Unicode categories replaced by "?": controls, format characters (bidirectional controls, zero-width
#: and invisible characters, tag characters), surrogates, private use, line and paragraph separators.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})


def _visible(text: str) -> str:
    """`text` with every character of `HIDDEN_CATEGORIES` but newline and tab replaced by "?"."""
    if text.isascii():
        return _CONTROL.sub("?", text)
    return "".join("?" if c not in "\n\t" and unicodedata.category(c) in HIDDEN_CATEGORIES else c for c in text)


_MD_ACTIVE = re.compile(r"([\\`*_{}\[\]()#+!|<>~])")


def cap(text: object, limit: int = MAX_CHARS) -> str:
    """`text` as a clean str of at most `limit` characters (plus the "… (truncated)" mark).

    Args:
        text: str, bytes (decoded as UTF-8, undecodable bytes replaced) or anything (``str()`` of it).
        limit: the cap in characters.

    Returns:
        The text with every control, format, surrogate, private-use and separator character
        (categories Cc, Cf, Cs, Co, Zl, Zp) except newline and tab replaced by "?" (CR, bidirectional
        controls and marks, zero-width and tag characters included), cut at `limit` characters.
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    elif not isinstance(text, str):
        text = str(text)
    text = text.encode("utf-8", "replace").decode("utf-8", "replace")  # lone surrogates
    if len(text) > limit:
        text = text[:limit] + TRUNCATED
    return _visible(text)


def fenced(text: object, limit: int = MAX_CHARS, info: str = "text") -> str:
    """`text` (capped) as a fenced Markdown code block that the text itself cannot close.

    The fence is a run of backticks one longer than the longest run inside the text
    (at least three), as CommonMark requires for a fence to stay open.
    """
    body = cap(text, limit)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def md_inline(text: object, limit: int = 200) -> str:
    """`text` (capped at `limit`) for one line of Markdown: no newline, no HTML, no link/image/emphasis."""
    flat = cap(text, limit).replace("\n", " ").replace("\t", " ")
    return _MD_ACTIVE.sub(r"\\\1", html.escape(flat, quote=False))


def csv_cell(value: object, limit: int = MAX_CHARS) -> object:
    """A CSV cell that no spreadsheet evaluates: numbers pass through, text is capped and de-formula'd.

    Text starting with one of `FORMULA_START`, also after leading blanks (spaces, tabs, line breaks, no-break
    and ideographic spaces), before or after the cap (so also a cut one), gets a leading apostrophe. Numbers
    (int/float) and None are returned unchanged.
    """
    if value is None or isinstance(value, (int, float)):
        return value
    raw = value if isinstance(value, str) else str(value)
    text = cap(raw, limit)
    if any(t[:1] in FORMULA_START or t.lstrip(_LEADING_BLANKS)[:1] in FORMULA_START for t in (raw, text)):
        text = "'" + text
    return text


def csv_text(rows: Iterable[Iterable[object]], limit: int = MAX_CHARS) -> str:
    """CSV text (``\\n`` line ends) of `rows` with every cell passed through `csv_cell`.

    The one way to build a TA's CSV from student-derived cells (folder names, ids, reasons): a
    writer that must remember `csv_cell` cell by cell forgets one (``attempts.csv`` once
    held folder names such as ``=HYPERLINK(...)`` as live formulas). Numbers pass unchanged.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in rows:
        writer.writerow([csv_cell(cell, limit) for cell in row])
    return buf.getvalue()


def csv_row(row: dict) -> dict:
    """`csv_cell` applied to every value of a row dict (keys are the writer's own column names)."""
    return {k: csv_cell(v) for k, v in row.items()}
