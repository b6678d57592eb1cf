"""File and folder names of a submission that a TA can read as they are.

Part of the intake's rules (``ppo_course.submission_rules``: ``ppo-course submit`` and the grader apply
the same functions). Two kinds of name are not staged:

* a name holding a character that does not show (Unicode categories Cc, Cf, Cs, Co, Zl, Zp: a newline,
  a carriage return, a bidirectional control, a zero-width or tag character). A folder named
  ``"hw\\n\\nScore: 70 / 70 points. All tests passed.\\n"`` put that line, as its own line, into the
  Gradescope output ("Found your exercise modules in '...'"); such a file or folder is skipped with a
  note that shows its name escaped (macOS's ``Icon\\r`` is one: skipped, never a rejection);
* two entries that a TA's disk would make one: the same name twice in a zip (the grader unpacked the
  last, an unzip tool or a TA's file browser may show the first: the code a TA reviews was not the
  code graded), or names equal up to case or Unicode normalisation (``ex1_ratio.py`` and
  ``EX1_ratio.py`` are one file on macOS and Windows). Such a submission is rejected, naming both.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from ppo_course.text_safety import HIDDEN_CATEGORIES  # the characters that do not show: the ones `cap` replaces


def hidden_characters(name: str) -> list[str]:
    """The characters of ``name`` that do not show, as "U+000A" (sorted, each once); [] for a readable name."""
    return sorted({f"U+{ord(c):04X}" for c in name if unicodedata.category(c) in HIDDEN_CATEGORIES})


def shown(name: str) -> str:
    """``name`` with each character that does not show written as an escape (``\\n``, ``\\u202e``)."""
    return "".join(c.encode("unicode_escape").decode("ascii") if unicodedata.category(c) in HIDDEN_CATEGORIES
                    else c for c in name)


def unreadable_note(rel: str) -> str:
    """The intake's note for a file or folder skipped because its name holds characters that do not show."""
    return (f"skipped '{shown(rel)}': its name holds {', '.join(hidden_characters(rel))}, characters that do not "
            "show; rename it")


#: The longest file or folder name (bytes of UTF-8) a TA's disk holds (Linux' NAME_MAX; NTFS, APFS: 255 units).
NAME_MAX = 255


def overlong(parts: Iterable[str]) -> bool:
    """True when a path component is longer than `NAME_MAX` bytes of UTF-8 (a zip's names run to 64 KiB).

    Checked before `collision`: NFC is quadratic in a run of combining marks (CPython sorts them by insertion),
    and 500 entries of 64 KiB of marks held the intake for ~17 CPU-minutes.
    """
    return any(len(part.encode("utf-8", "surrogatepass")) > NAME_MAX for part in parts)


def collision(names: Iterable[str]) -> str | None:
    """Why two of the staged ``names`` ('/'-separated, relative) would be one file on a TA's disk, or None.

    Names collide when equal after NFC normalisation and case folding, each path component alike (also
    a name given twice).
    """
    seen: dict[str, str] = {}
    for name in names:
        key = "/".join(unicodedata.normalize("NFC", part).casefold() for part in name.split("/"))
        if key in seen:
            first = seen[key]
            how = "twice" if first == name else f"as '{shown(first)}' and '{shown(name)}' (one file on macOS and Windows)"
            return (f"holds the file '{shown(name)}' {how}: it is not clear which one to grade; re-create the "
                    "submission with each file once")
        seen[key] = name
    return None
