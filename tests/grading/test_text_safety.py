"""Student text in the TA's files (issue 10, class 7): every writer caps, fences and escapes it.

Hostile strings: a huge name, a message that closes a Markdown fence and forges a total line
and a remote image, a spreadsheet formula, control characters (ANSI, CR, bidi override) and
bytes that are not UTF-8. Markdown is checked by rendering it with markdown-it (CommonMark, as
GitHub and Gradescope do), CSV by reading it back with the csv module.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from markdown_it import MarkdownIt

from ppo_course import text_safety
from grader.records.results import ExerciseResult, GradeResult, TestResult

HUGE = "A" * 5_000_000
FORGERY = ("oops\n```\n\n**Total: 100 / 100 points**\n\n![x](http://evil.example/pixel.png)\n"
           "[click](http://evil.example) <img src=http://evil.example/a.png> <script>alert(1)</script>\n````\n")
FORMULAS = ["=HYPERLINK(\"http://evil.example\",\"grade\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"]
CONTROL = "ok\x1b[2J\x1b[31mred\r\u202eevil\x00"
NOT_UTF8 = b"name-\xff\xfe-\xc3"
HOSTILE = [HUGE, FORGERY, CONTROL, *FORMULAS, NOT_UTF8.decode("utf-8", "surrogateescape")]


def _html(markdown: str) -> str:
    return MarkdownIt("commonmark").render(markdown)


def _assert_inert(html: str) -> None:
    assert "<img" not in html and 'href="http://evil' not in html and "<script" not in html
    assert html.count("<strong>Total:") <= 1


# ------------------------------------------------------------------------------------- the helpers

def test_cap_limits_size_and_strips_controls():
    out = text_safety.cap(HUGE)
    assert len(out) == text_safety.MAX_CHARS + len(text_safety.TRUNCATED) and out.endswith("… (truncated)")
    clean = text_safety.cap(CONTROL)
    assert "\x1b" not in clean and "\r" not in clean and "\u202e" not in clean and "\x00" not in clean
    assert text_safety.cap(NOT_UTF8) == "name-\ufffd\ufffd-\ufffd"
    assert text_safety.cap("line 1\n\tline 2") == "line 1\n\tline 2"  # newlines and tabs kept


@pytest.mark.parametrize("text", [FORGERY, "````` five", "a ` b `` c"])
def test_fenced_text_cannot_close_its_fence(text):
    html = _html("before\n\n" + text_safety.fenced(text) + "\n\nafter **bold**")
    # The whole text stays inside one <pre><code> block; Markdown after the fence still works.
    assert html.count("<pre><code") == 1 and "<strong>bold</strong>" in html
    _assert_inert(html)
    assert "<strong>Total:" not in html


def test_md_inline_escapes_links_images_html_and_emphasis():
    html = _html("id: " + text_safety.md_inline(FORGERY))
    _assert_inert(html)
    assert "<strong>" not in html and "<a " not in html and "\n" not in text_safety.md_inline(FORGERY)


@pytest.mark.parametrize("value", FORMULAS)
def test_csv_cell_neutralises_formulas(value):
    cell = text_safety.csv_cell(value)
    assert cell.startswith("'") and cell[1:2] in ("=", "+", "-", "@", "?", "\t")
    assert text_safety.csv_cell(3.5) == 3.5 and text_safety.csv_cell("alice") == "alice"


@pytest.mark.parametrize("value", [" =1+1", "  +cmd|' /C calc'!A0", "\n@SUM(A1)", "\u00a0-2+3", "\u3000=1",
                                   "\uff1dHYPERLINK(\"http://x\")", "\uff0b1", "\uff20A1", "\uff0d1"])
def test_csv_cell_neutralises_formulas_after_blanks_and_in_full_width(value):
    cell = text_safety.csv_cell(value)
    assert cell.startswith("'"), cell
    assert text_safety.csv_cell(" alice") == " alice" and text_safety.csv_cell("a=b") == "a=b"


# ---------------------------------------------------------------------------- results.json, feedback.md

def _hostile_result(text: str) -> GradeResult:
    test = TestResult(exercise="ex1_ratio", kind="public", test="test_ratio_hand_cases", score=0.0, max_score=1.0,
                      status="failed", output="Failed: x\n" + text, visibility="visible", diagnosis="wrong_value",
                      doc="doc", detail=text)
    ex = ExerciseResult(score=0.0, max_score=1.0, status="broken", message=text)
    graded = ExerciseResult(score=0.0, max_score=1.0, status="graded", message="")
    test2 = test.model_copy(update={"exercise": "ex2_clipped_loss"})
    return GradeResult(submission=text[:100], status="rejected", message=text, grader_version="t", profile="fast",
                       exercises={"ex1_ratio": ex, "ex2_clipped_loss": graded}, tests=[test, test2])


@pytest.mark.parametrize("text", HOSTILE, ids=["huge", "forgery", "control", *[f"formula{i}" for i in range(6)],
                                               "not_utf8"])
def test_results_json_and_feedback_md_stay_small_and_inert(tmp_path, text):
    result = _hostile_result(text)
    result.write_results_json(tmp_path / "results.json")
    result.write_feedback(tmp_path / "feedback.md")
    raw = (tmp_path / "results.json").read_bytes()
    assert len(raw) < 64_000  # 18.9 MB before the cap
    data = json.loads(raw)
    assert all(len(t["output"]) <= text_safety.MAX_CHARS + 20 for t in data["tests"])
    md = (tmp_path / "feedback.md").read_text(encoding="utf-8")
    assert len(md) < 64_000
    html = _html(md)
    _assert_inert(html)
    assert html.count("<strong>Total:") == 1  # only the grader's own total line
    assert "\x1b" not in md and "\x00" not in md


# ------------------------------------------------------------------------- gradebook.csv, grades.csv

def _record(student_id: str, message: str):
    from grader.records.gradebook import StudentRecord

    return StudentRecord(student_id=student_id, status="rejected", message=message, submission_hash="h",
                         grader_fingerprint="f", profile="fast", score=0.0, max_score=10.0)


@pytest.mark.parametrize("writer", ["gradebook_csv", "nbgrader_csv"])
def test_csv_writers_never_write_a_formula_or_a_huge_cell(writer):
    import grader.records.gradebook as batch

    records = [_record(sid, msg) for sid, msg in zip(FORMULAS + ["big" + HUGE[:100_000]],
                                                     [FORGERY, *FORMULAS[1:], HUGE[:100_000], "fine"])]
    text = getattr(batch, writer)(records)
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) == len(records) + 1
    for row in rows[1:]:
        for cell in row:
            assert cell[:1] not in text_safety.FORMULA_START, (writer, cell[:30])
            assert len(cell) <= 1000 + len(text_safety.TRUNCATED) + 1


def test_batch_feedback_notes_escape_the_student_id_and_message():
    from grader.student import zero_outcome

    md = zero_outcome(FORGERY, "rejected", FORGERY, "fast", ["ex1_ratio"], [FORGERY]).feedback_md()
    html = _html(md)
    _assert_inert(html)
    assert "<strong>Total:" not in html and len(md) < 10_000


# ------------------------------------------------------------------------------- Gradescope, nbgrader

def test_gradescope_outputs_are_capped_plain_text():
    from grader.platforms.gradescope.run import safe_outputs

    results = safe_outputs({"output": HUGE, "tests": [{"output": FORGERY + CONTROL}, {"output": HUGE}]})
    assert results["output_format"] == results["test_output_format"] == "text"
    assert len(results["output"]) < 5000 and len(results["tests"][1]["output"]) < 5000
    assert "\x1b" not in results["tests"][0]["output"]


def test_nbgrader_feedback_is_capped_without_control_characters():
    from grader.platforms.nbgrader_course.autograde import exercise_feedback

    result = _hostile_result(HUGE[:50_000] + CONTROL)
    text = exercise_feedback(result, "ex1_ratio")
    assert len(text) < 3 * text_safety.MAX_CHARS and "\x1b" not in text
