"""`quiz validate` on broken banks: every error names file, line and question id."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from quiz_bank.loader import validate_bank
from quiz_bank.paths import BANK_DIR


@pytest.fixture
def bank_copy(tmp_path) -> Path:
    """A writable copy of the installed bank's YAML files."""
    for src in BANK_DIR.glob("*.yaml"):
        shutil.copy(src, tmp_path / src.name)
    return tmp_path


def _line_of(path: Path, needle: str, after: str) -> int:
    """1-based line of the first ``needle`` after the line holding ``after`` (found independently)."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    return next(i for i in range(start, len(lines)) if needle in lines[i]) + 1


def test_bad_answer_reports_file_line_and_id(bank_copy, run_cli):
    path = bank_copy / "stop3.yaml"
    line = _line_of(path, "    answer: b", "id: stop3.coefficients")
    text = path.read_text().splitlines()
    text[line - 1] = "    answer: z"
    path.write_text("\n".join(text) + "\n")
    code, out, err = run_cli(["quiz", "validate", "--bank", bank_copy])
    assert code == 1
    # A model-level error points at the question's mapping (its first line, "- id: ...").
    question_line = _line_of(path, "- id: stop3.coefficients", "id: stop3.coefficients")
    assert f"stop3.yaml:{question_line}: [stop3.coefficients]" in err
    assert "answer 'z' is not one of the options" in err


def test_bad_field_reports_the_line_of_the_field(bank_copy, run_cli):
    path = bank_copy / "stop5.yaml"
    original = path.read_text()
    cut = original.index("  - id: stop5.tokenization-pitfalls")
    path.write_text(original[:cut] + original[cut:].replace('source: {section: "§5.6", page: "p. 146"}', 'source: {section: "§5.6", page: "page 146"}', 1))
    line = _line_of(path, 'page: "page 146"', "id: stop5.tokenization-pitfalls")
    code, _, err = run_cli(["quiz", "validate", "--bank", bank_copy])
    assert code == 1
    assert f"stop5.yaml:{line}: [stop5.tokenization-pitfalls] source.page" in err


def test_yaml_syntax_error_reports_line(bank_copy):
    path = bank_copy / "stop1.yaml"
    lines = path.read_text().splitlines()
    lines[9] = lines[9] + " ]["  # unbalanced flow sequence on line 10
    path.write_text("\n".join(lines) + "\n")
    _, errors = validate_bank(bank_copy, check_keys=False)
    assert len(errors) == 1 and errors[0].file == "stop1.yaml" and errors[0].line in (10, 11)
    assert "YAML syntax error" in errors[0].message


def test_duplicate_id_wrong_stop_unknown_generator_and_too_few_questions(bank_copy):
    path = bank_copy / "stop2.yaml"
    text = path.read_text()
    text = text.replace("  - id: stop2.pessimistic-min\n", "  - id: stop2.ratio-definition\n", 1)
    path.write_text(text)
    path4 = bank_copy / "stop4.yaml"
    path4.write_text(path4.read_text().replace("generator: minibatches, key: minibatch_updates", "generator: nonesuch, key: minibatch_updates"))
    _, errors = validate_bank(bank_copy, check_keys=False)
    messages = [str(e) for e in errors]
    assert any("stop2.yaml" in m and "appears twice" in m for m in messages), messages
    assert any(m.startswith("stop4.yaml:") and "[stop4.minibatch-updates]" in m and "unknown generator 'nonesuch'" in m for m in messages), messages


def test_missing_stop_file_and_question_minimum(bank_copy):
    (bank_copy / "stop8.yaml").unlink()
    path = bank_copy / "stop7.yaml"
    # Keep only the first 3 questions of stop 7.
    text = path.read_text()
    cut = [i for i in range(len(text)) if text.startswith("  - id: ", i)][3]
    path.write_text(text[:cut])
    _, errors = validate_bank(bank_copy, check_keys=False)
    messages = [str(e) for e in errors]
    assert any(m.startswith("stop8.yaml") and "missing" in m for m in messages), messages
    assert any(m.startswith("stop7.yaml:") and "questions" in m and "at least 8" in m for m in messages), messages


def test_unknown_key_function_is_reported_when_keys_are_checked(bank_copy):
    path = bank_copy / "stop6.yaml"
    path.write_text(path.read_text().replace("generator: gaussian_action, key: gaussian_ratio", "generator: gaussian_action, key: no_such_key"))
    _, errors = validate_bank(bank_copy, check_keys=True)
    assert [e.question_id for e in errors] == ["stop6.gaussian-ratio"] and "unknown key function" in errors[0].message


def test_claim_rules_are_enforced(bank_copy):
    """An undeclared claim, a claim asked once by a fixed item, a stop with < 2 understanding items (issue 20)."""
    p1 = bank_copy / "stop1.yaml"
    text = p1.read_text()
    text = text.replace("    claim: stop1.big-picture\n    level: recall\n    type: single", "    claim: stop1.nonesuch\n    level: recall\n    type: single", 1)
    p1.write_text(text)
    p8 = bank_copy / "stop8.yaml"
    p8.write_text(p8.read_text().replace("level: understand", "level: recall"))
    p5 = bank_copy / "stop5.yaml"
    text5 = p5.read_text()
    # A new claim asked by one fixed item only (stop5.payoff-arithmetic, a true/false item with no derived twin).
    text5 = text5.replace("questions:\n", '  - {id: stop5.lonely, text: "A claim asked once", source: {section: "§5.6", page: "p. 146"}}\nquestions:\n', 1)
    text5 = text5.replace("  - id: stop5.payoff-arithmetic\n    claim: stop5.payoff", "  - id: stop5.payoff-arithmetic\n    claim: stop5.lonely", 1)
    p5.write_text(text5)
    _, errors = validate_bank(bank_copy, check_keys=False)
    messages = [str(e) for e in errors]
    assert any(m.startswith("stop1.yaml") and "stop1.frontier-scale → stop1.nonesuch" in m for m in messages), messages
    assert any(m.startswith("stop8.yaml") and "only 0 understanding item(s)" in m for m in messages), messages
    assert any(m.startswith("stop5.yaml") and "claim stop5.lonely is asked by 1 item(s)" in m for m in messages), messages


def test_every_case_of_a_drawn_item_is_checked(bank_copy):
    """A pick_case item whose case lacks a prompt field, or whose key is not an option, is reported (all cases, not a probe)."""
    p = bank_copy / "stop8.yaml"
    text = p.read_text()
    text = text.replace('danger/7: {dial: "learning_rate", direction: "too high"}', 'danger/7: {dial: "learning_rate"}')
    p.write_text(text)
    _, errors = validate_bank(bank_copy, check_keys=False)
    assert any(e.question_id == "stop8.danger-effect" and "direction" in e.message for e in errors), [str(e) for e in errors]
    p.write_text(text.replace('danger/7: {dial: "learning_rate"}', 'danger/7: {dial: "learning_rate", direction: "too high"}')
                 .replace("      - {id: forgetting, text: \"Catastrophic forgetting\"}\n", ""))
    _, errors = validate_bank(bank_copy, check_keys=True)
    assert any(e.question_id == "stop8.danger-effect" and "not a single answer" in e.message for e in errors), [str(e) for e in errors]
