"""Folder names that write formulas and HTML into the TA's attempt files (red-team attack a103).

`grade-batch --latest-only` records which folder was graded for whom in
``OUT_DIR/attempts.csv`` and ``attempts.md`` (`grader.intake.attempts.Selection.write`).
Folder names are the student's text, but that writer built its CSV with a bare
``csv.writer`` and its Markdown with bare code spans: on main, folders named
``=HYPERLINK("evil.example","x")_1`` / ``_2`` put a live spreadsheet formula in
three cells of attempts.csv, and a folder named ``eve` <img src=x onerror=alert(1)> [click](evil.example) `_1``
closed its code span and put raw HTML and a link into attempts.md. Root fix: one
CSV builder that neutralises every cell (``ppo_course.text_safety.csv_text``) and
``md_inline`` for every Markdown piece.
"""

from __future__ import annotations

import csv
import io

from ppo_course.text_safety import FORMULA_START, csv_text

FORMULA = '=HYPERLINK("evil.example","x")'
HTML = "eve` <img src=x onerror=alert(1)> [click](evil.example) `"
PATTERN = r"(?P<student>.+)_(?P<attempt>\d+)"


def _selection(subs):
    from grader.intake.attempts import AttemptRule
    from grader.intake.class_list import class_list

    for name in (f"{FORMULA}_1", f"{FORMULA}_2", f"{HTML}_1", f"{HTML}_2", "amy_1", "amy_2"):
        (subs / name).mkdir(parents=True)
        (subs / name / "ex1_ratio.py").write_text("def logprobs_from_logits(logits, tokens):\n    return None\n")
    _entries, _warnings, selection = class_list(subs, True, AttemptRule(pattern=PATTERN))
    return selection


def test_a103_folder_names_write_no_formula_into_attempts_csv(tmp_path):
    selection = _selection(tmp_path / "subs")
    selection.write(tmp_path)
    with open(tmp_path / "attempts.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    cells = [cell for row in rows for cell in row]
    live = [cell for cell in cells if cell[:1] in FORMULA_START]
    assert not live, f"attempts.csv holds cells a spreadsheet evaluates: {live}"
    assert any(cell == "'" + FORMULA for cell in cells)  # the id is kept, shown as text
    honest = {row[0]: row for row in rows[1:]}
    assert honest["amy_2"][:3] == ["amy_2", "amy", "yes"] and honest["amy_1"][:3] == ["amy_1", "amy", "no"]


def test_a103_folder_names_write_no_html_or_link_into_attempts_md(tmp_path):
    selection = _selection(tmp_path / "subs")
    selection.write(tmp_path)
    md = (tmp_path / "attempts.md").read_text()
    assert "<img" not in md and "&lt;img" in md
    assert "[click](evil.example)" not in md  # Markdown's link brackets are escaped
    assert "- amy\\_2 graded as amy" in md and "left out" in md


def test_csv_text_neutralises_every_cell_and_keeps_numbers():
    text = csv_text([["a", "=1+2", "+x", "-y", "@z", "\tt", 3, 0.5, None]])
    assert next(csv.reader(io.StringIO(text))) == ["a", "'=1+2", "'+x", "'-y", "'@z", "'\tt", "3", "0.5", ""]


def test_a103_a_student_id_writes_no_html_into_regrade_md():
    """The same class in regrade.md: a student id (a folder name; `id_problem` accepts inner spaces and
    ASCII punctuation) was its per-student heading, raw."""
    from grader.intake.class_list import id_problem
    from grader.reports.regrade import StudentRegrade, regrade_markdown

    sid = "eve <img src=x onerror=alert(1)> [click](evil.example)"
    assert id_problem(sid) is None  # a valid id: the writer must make it inert
    md = regrade_markdown([StudentRegrade(sid, 1.0, 2.0, "old", False, [], [])], "new", False)
    assert "<img" not in md and "[click](evil.example)" not in md and "&lt;img" in md
    plain = regrade_markdown([StudentRegrade("amy", 1.0, 2.0, "old", False, [], [])], "new", False)
    assert "### amy: 1 → 2" in plain
