"""The bank itself: validity, size, coverage rules of issue 5."""

from __future__ import annotations

import re

from quiz_bank.loader import validate_bank


def test_quiz_validate_passes(run_cli):
    code, out, err = run_cli(["quiz", "validate"])
    assert code == 0, err
    assert out.startswith("OK: 8 stops")
    assert "keys checked" in out  # the instructor bank: every parametric key computed once


def test_every_stop_has_at_least_8_questions(bank):
    counts = {stop: len(bank.questions(stop)) for stop in range(1, 9)}
    assert all(n >= 8 for n in counts.values()), counts


def test_at_least_60_percent_is_parametric_or_derived(bank):
    questions = bank.questions()
    n_parametric = sum(q.is_parametric for q in questions)
    assert n_parametric >= 0.6 * len(questions), f"{n_parametric}/{len(questions)}"


def test_ids_name_their_stop_and_are_unique(bank):
    ids = [q.id for q in bank.questions()]
    assert len(ids) == len(set(ids))
    for stop in range(1, 9):
        for q in bank.questions(stop):
            assert re.fullmatch(rf"stop{stop}\.[a-z0-9-]+", q.id), q.id


def test_every_question_cites_section_and_page_of_the_chapter(bank):
    for q in bank.questions():
        cite = q.source.cite()
        assert re.search(r"§5\.\d", cite) and re.search(r"p\. 1(4[2-9]|50)", cite), (q.id, cite)


def test_question_types_cover_every_kind(bank):
    kinds = {q.type for q in bank.questions()}
    assert kinds == {"single", "multi", "true_false", "numeric", "symbolic", "ordering"}


def test_fixed_questions_carry_keys_and_parametric_ones_do_not(bank):
    for q in bank.questions():
        if q.is_parametric:
            assert getattr(q, "answer", None) is None, q.id
        else:
            assert q.answer is not None, q.id


def test_chapter_numbers_are_quoted_exactly(bank):
    """Spot checks of keys against numbers read off the chapter text (Book §5.2–§5.9)."""
    by_id = bank.by_id
    assert by_id["stop2.epsilon"].answer == 0.2  # "ε = 0.2"
    assert by_id["stop7.learning-rate"].answer == 1.5e-6  # "learning_rate=1.5e-6"
    assert by_id["stop3.full-objective-symbolic"].answer.replace(" ", "") == "Lclip-0.1*(V-Vt)**2+0.01*H"
    assert by_id["stop5.final-reward"].answer.replace(" ", "") == "rRM-0.05*KL"
    assert by_id["stop4.clockwork"].answer == ["collect", "train", "purge"]
    assert by_id["stop5.pipeline-order"].answer == ["generate", "score", "kl", "final-reward", "gae", "update"]
    assert by_id["stop7.entropy-coefficient"].answer is False  # the listing has no c₂


def test_validate_bank_returns_no_errors(bank):
    assert validate_bank(bank.directory, check_keys=False)[1] == []


def test_the_audit_table_of_claims_and_items_is_generated_from_the_bank(bank):
    """docs/quiz_audit.md's claims table equals what tools/quiz_claims_table.py builds (rerun it after editing the bank)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "tools" / "quiz_claims_table.py"
    spec = importlib.util.spec_from_file_location("quiz_claims_table", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    text = tool.DOC.read_text(encoding="utf-8")
    assert tool.with_table(text, tool.claims_table(bank)) == text
    # The counts in the table are the bank's own (independent recount of one column).
    assert f"| all | {len(bank.claims())} | {len(bank.questions())} |" in text
