"""Write the "claims and items" table of docs/quiz_audit.md from the bank.

Usage: ``python tools/quiz_claims_table.py [--check]``. The table is rebuilt from
``quiz_bank.loader.load_bank()`` and placed between the two marker comments of
docs/quiz_audit.md; ``--check`` exits 1 when the file's table is stale
(tests/quiz/test_bank.py runs the same comparison).
"""

from __future__ import annotations

import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "quiz_audit.md"
START, END = "<!-- claims-table:start -->", "<!-- claims-table:end -->"


def claims_table(bank) -> str:
    """The markdown table: per stop, claims, items, parametric/derived share, understanding items.

    ``bank`` is a :class:`quiz_bank.loader.Bank`; returns the table with a totals row.
    """
    from quiz_bank.derived import SUFFIXES

    rows = ["| stop | claims | items | of which derived | parametric or derived | understanding items (written) |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]
    totals = [0, 0, 0, 0, 0]
    for stop in sorted(bank.stops):
        qs = bank.questions(stop)
        counts = [len(bank.claims(stop)), len(qs), sum(q.id.endswith(SUFFIXES) for q in qs),
                  sum(q.is_parametric for q in qs),
                  sum(q.level == "understand" and not q.id.endswith(SUFFIXES) for q in qs)]
        totals = [t + c for t, c in zip(totals, counts)]
        rows.append(f"| {stop} | {counts[0]} | {counts[1]} | {counts[2]} | {counts[3]} ({counts[3] / counts[1]:.0%}) | {counts[4]} |")
    rows.append(f"| all | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]} ({totals[3] / totals[1]:.0%}) | {totals[4]} |")
    return "\n".join(rows) + "\n"


def with_table(text: str, table: str) -> str:
    """``text`` with the part between the markers replaced by ``table``.

    Raises:
        ValueError: if the markers are missing.
    """
    if START not in text or END not in text:
        raise ValueError(f"{DOC.name}: markers {START} / {END} not found")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table}{END}{tail}"


def main(argv: list[str]) -> int:
    from quiz_bank.loader import load_bank

    text = DOC.read_text(encoding="utf-8")
    new = with_table(text, claims_table(load_bank()))
    if "--check" in argv:
        return 0 if new == text else 1
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
