"""`quiz take` scripted through stdin: feedback, retries with fresh variants, resume, key-less bundle."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quiz_bank import export_public
from quiz_bank.engine import render
from quiz_bank.loader import load_bank
from quiz_bank.storage import AttemptStore

REPO = Path(__file__).resolve().parents[2]


def typed(question, student, attempt, answer, bank=None) -> str:
    """What a student types for ``answer`` (ordering: the labels of the order shown to them)."""
    if question.type in ("single", "multi"):
        # Options are shown shuffled per attempt: type the labels the student sees.
        q = bank.by_id[question.id] if bank is not None else question
        labels = {option_id: label for label, option_id, _ in render(q, student, attempt, shuffle=True).choices}
        ids = [answer] if isinstance(answer, str) else answer
        return ",".join(labels[i] for i in ids)
    if question.type == "true_false":
        return "true" if answer else "false"
    if question.type == "ordering":
        q = bank.by_id[question.id] if bank is not None else question
        labels = {item_id: label for label, item_id, _ in render(q, student, attempt).choices}
        return " ".join(labels[i] for i in answer)
    return str(answer)


def script(bank, key, stop, student, attempt=1, skip=0, render_bank=None) -> str:
    return "".join(
        typed(q, student, attempt, key["answers"][q.id], render_bank) + "\n" for q in bank.questions(stop)[skip:]
    )


def drawn(bank, stop, student, attempt=1) -> list:
    """The questions a key-less take asks at ``attempt``: the grader's mastery draw, in bank order."""
    from quiz_bank.offline import attempt_at

    order = set(attempt_at(bank, stop, student, attempt).order)
    return [q for q in bank.questions(stop) if q.id in order]


def drawn_script(bank, key, stop, student, attempt=1, render_bank=None) -> str:
    """What a student types through a key-less take of ``stop`` at ``attempt``, answering from ``key``."""
    return "".join(typed(q, student, attempt, key["answers"][q.id], render_bank) + "\n"
                   for q in drawn(bank, stop, student, attempt))


def every_question_policy(tmp_path) -> Path:
    """The older policy, kept as an option (attempt_policy.yaml): every question of the stop in bank order,
    a verdict after each answer. These tests script a whole stop's answers in that order; the default
    (mastery) policy's terminal quiz is tested in test_mastery.py."""
    policy = tmp_path / "every_question.yaml"
    policy.write_text("default: {mode: cooldown, cooldown_s: 120}\n")
    return policy


def test_take_a_stop_through_stdin_passes_and_is_stored(bank, key_of, run_cli, tmp_path):
    store = tmp_path / "quiz.sqlite3"
    stdin = script(bank, key_of("tina"), 1, "tina")
    code, out, err = run_cli(["quiz", "take", "--stop", 1, "--student", "tina", "--store", store, "--policy", every_question_policy(tmp_path)], stdin)
    assert code == 0, err
    n = len(bank.questions(1))
    assert f"Stop 1 passed: {n}/{n}" in out and f"Question 1/{n}" in out
    with AttemptStore(store) as s:
        assert s.completed_stops("tina") == {1}
        assert all(a.status == "correct" and a.attempt == 1 for a in s.attempts("tina"))
    code, out, _ = run_cli(["quiz", "status", "--student", "tina", "--store", store])
    assert code == 0 and "stop1" in out and f"{n}/{n}" in out and "chapter complete: no (1/8" in out
    # A stop not started has no draw: no "0/<size of its bank>", which reads as that many questions to answer.
    stop2 = next(line for line in out.splitlines() if "stop2" in line)
    assert f"0/{len(bank.questions(2))}" not in stop2 and "—" in stop2


def test_wrong_answer_is_told_without_the_key_and_the_retry_is_the_whole_stop_fresh(bank, key_of, run_cli, tmp_path):
    """Issue 12: no explanation (it states the key) before the stop is passed; a retry asks every question again,
    with fresh variants and a fresh option order, so blind retrying of the missed ones cannot pass."""
    store = tmp_path / "quiz.sqlite3"
    qid = "stop2.clip-objective-good"
    question = bank.by_id[qid]
    lines = []
    for q in bank.questions(2):
        answer = key_of("uma")["answers"][q.id]
        lines.append(typed(q, "uma", 1, answer + 1.0 if q.id == qid else answer))
    lines.append("y")  # start attempt 2 now
    lines += [typed(q, "uma", 2, key_of("uma", 2)["answers"][q.id]) for q in bank.questions(2)]
    policy = tmp_path / "policy.yaml"  # the older policy, kept as an option: a verdict after each answer
    policy.write_text("default: {mode: cooldown, cooldown_s: 0}\n")
    code, out, err = run_cli(["quiz", "take", "--stop", 2, "--student", "uma", "--store", store, "--policy", policy],
                             "\n".join(lines) + "\n")
    assert code == 0, err
    before_pass = out.split("Stop 2 passed")[0]
    assert "Not right." in before_pass and question.explanation[:40] not in before_pass
    assert f"({qid}): not right. Hint: {question.hint or 'Reread'}"[:60] in before_pass and "Book §5.2, p. 142" in before_pass
    n = len(bank.questions(2))
    assert f"attempt 1: {n - 1}/{n} right" in out and f"Stop 2 passed: {n}/{n}" in out
    assert question.explanation[:40] in out.split("Stop 2 passed")[1]  # explanations once passed
    first, second = render(question, "uma", 1), render(question, "uma", 2)
    assert first.params != second.params
    assert f"{qid} · attempt 2" in out
    assert f"One token with r = {second.params['r']}, Â = {second.params['adv']} and ε = {second.params['eps']}" in out
    with AttemptStore(store) as s:
        assert [(a.attempt, a.status) for a in s.attempts("uma", qid)] == [(1, "wrong"), (2, "correct")]
        assert all(len(s.attempts("uma", q.id)) == 2 for q in bank.questions(2))  # the whole stop was asked again
        assert s.completed_stops("uma") == {2}


def test_unparseable_input_is_asked_again_not_recorded(bank, key_of, run_cli, tmp_path):
    store = tmp_path / "quiz.sqlite3"
    stdin = "zzz\n\n" + script(bank, key_of("vic"), 1, "vic")
    code, out, _ = run_cli(["quiz", "take", "--stop", 1, "--student", "vic", "--store", store, "--policy", every_question_policy(tmp_path)], stdin)
    assert code == 0 and "Could not read that: expected exactly one of a, b, c, d" in out
    with AttemptStore(store) as s:
        assert len(s.attempts("vic", "stop1.vanilla-pg-flaw")) == 1


def test_end_of_input_saves_progress_and_the_next_take_resumes(bank, key_of, run_cli, tmp_path):
    store = tmp_path / "quiz.sqlite3"
    full = script(bank, key_of("walt"), 1, "walt").splitlines(keepends=True)
    code, out, _ = run_cli(["quiz", "take", "--stop", 1, "--student", "walt", "--store", store, "--policy", every_question_policy(tmp_path)], "".join(full[:3]))
    assert code == 1 and "progress saved" in out
    code, out, _ = run_cli(["quiz", "take", "--student", "walt", "--store", store, "--policy", every_question_policy(tmp_path)], "".join(full[3:]))
    assert code == 1  # stop 1 finished, then stop 2 started and input ended
    n = len(bank.questions(1))
    # Only the unanswered were asked, and they keep their numbers (issue 13 item 7: no renumbering on resume).
    assert f"Question 4/{n}" in out and f"Question 1/{n}" not in out and f"Stop 1 passed: {n}/{n}" in out
    with AttemptStore(store) as s:
        assert s.completed_stops("walt") == {1}


def test_take_survives_being_killed_mid_quiz(bank, key_of, tmp_path):
    """SIGKILL after two answers: both are kept, and the next take asks only the rest."""
    store = tmp_path / "quiz.sqlite3"
    lines = script(bank, key_of("xena"), 1, "xena").splitlines(keepends=True)
    code = "import sys; from ppo_course.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = ["quiz", "take", "--stop", "1", "--student", "xena", "--store", str(store), "--policy",
            str(every_question_policy(tmp_path))]
    proc = subprocess.Popen([sys.executable, "-c", code, *argv], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True, cwd=tmp_path)
    try:
        proc.stdin.write("".join(lines[:2]))
        proc.stdin.flush()  # the pipe stays open: the process waits for answer 3 when killed
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with sqlite3.connect(store) as db:
                    if db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 2:
                        break
            except sqlite3.OperationalError:
                pass  # the child has not created the tables yet
            time.sleep(0.1)
        else:
            pytest.fail("the scripted take never recorded two answers")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    from ppo_course.cli import main
    import io

    old_stdin = sys.stdin
    sys.stdin = io.StringIO("".join(lines[2:]))
    try:
        assert main(argv) == 0
    finally:
        sys.stdin = old_stdin
    with AttemptStore(store) as s:
        assert s.completed_stops("xena") == {1}
        assert sorted(a.attempt for a in s.attempts("xena")) == [1] * len(bank.questions(1))


def test_keyless_bank_records_responses_that_the_instructor_grades(bank, key_of, run_cli, tmp_path):
    public = tmp_path / "public" / "quiz_bank"
    export_public(public)
    public_bank = load_bank(public)
    store, out_file = tmp_path / "quiz.sqlite3", tmp_path / "mine.json"
    stdin = drawn_script(bank, key_of("yuki"), 3, "yuki", render_bank=public_bank)
    code, out, err = run_cli(["quiz", "take", "--stop", 3, "--student", "yuki", "--store", store, "--bank", public, "--out", out_file], stdin)
    assert code == 0, err
    assert "No answer keys here" in out and "Not right" not in out and "Correct" not in out
    asked = drawn(bank, 3, "yuki")
    n_claims = len({q.claim for q in bank.questions(3)})
    assert f"This attempt asks {len(asked)} questions on the stop's {n_claims} claims" in " ".join(out.split())
    submitted = json.loads(out_file.read_text())
    assert submitted["student_id"] == "yuki" and submitted["attempt"] == 1
    assert set(submitted["answers"]) == {q.id for q in asked} and n_claims <= len(asked) < len(bank.questions(3)) // 2
    code, _, err = run_cli(["quiz", "grade", out_file, "--out", tmp_path / "report.json"])
    report = json.loads((tmp_path / "report.json").read_text())
    assert code == 0 and report["stops"]["stop3"]["passed"] is True and report["complete"] is False


def test_student_bundle_without_keys_module_takes_and_writes_responses(bank, key_of, tmp_path):
    """The exported package alone (no keys.py) is importable and runs `quiz take` in record mode."""
    root = tmp_path / "bundle"
    export_public(root / "quiz_bank")
    public_bank = load_bank(root / "quiz_bank")
    stdin = drawn_script(bank, key_of("zed"), 1, "zed", render_bank=public_bank)
    code = (
        "import sys; import quiz_bank; assert quiz_bank.__file__.startswith(sys.argv[1]), quiz_bank.__file__;"
        "from quiz_bank.loader import keys_installed; assert not keys_installed();"
        "from ppo_course.cli import main; sys.exit(main(sys.argv[2:]))"
    )
    argv = ["quiz", "take", "--stop", "1", "--student", "zed", "--store", str(tmp_path / "s.sqlite3"), "--out", str(tmp_path / "zed.json")]
    env = {**os.environ, "PYTHONPATH": str(root)}
    result = subprocess.run([sys.executable, "-c", code, str(root), *argv], input=stdin, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "No answer keys here" in result.stdout
    answers = json.loads((tmp_path / "zed.json").read_text())["answers"]
    assert set(answers) == {q.id for q in drawn(bank, 1, "zed")}


def test_keyless_retake_of_a_recorded_stop_changes_nothing_without_a_flag(bank, key_of, run_cli, tmp_path):
    """Issue 20 item 7: `quiz take --stop 1` again after finishing does not silently open a new attempt,
    `--attempt 2` answers the grader's next attempt, and `quiz status` says what is recorded."""
    public = tmp_path / "public" / "quiz_bank"
    export_public(public)
    public_bank = load_bank(public)
    store, out_file = tmp_path / "quiz.sqlite3", tmp_path / "mine.json"
    argv = ["quiz", "take", "--stop", 1, "--student", "zoe", "--store", store, "--bank", public, "--out", out_file]
    assert run_cli(argv, drawn_script(bank, key_of("zoe"), 1, "zoe", render_bank=public_bank))[0] == 0
    first = out_file.read_text()
    code, out, _ = run_cli(argv, "a\n")  # one typed answer: it must not be recorded anywhere
    assert code == 0 and "already recorded for attempt 1; nothing changed" in out
    assert out_file.read_text() == first
    with AttemptStore(store) as s:
        assert {a.attempt for a in s.attempts("zoe")} == {1}
    code, out, _ = run_cli(["quiz", "status", "--student", "zoe", "--store", store, "--bank", public])
    assert code == 0 and "recorded" in out and "not graded here" in out and "submit to grade" not in out
    stdin = drawn_script(bank, key_of("zoe", 2), 1, "zoe", attempt=2, render_bank=public_bank)
    assert run_cli([*argv, "--attempt", 2], stdin)[0] == 0
    second = json.loads(out_file.read_text())
    assert second["attempt"] == 2 and "attempts" not in second
    assert set(second["answers"]) == {q.id for q in drawn(bank, 1, "zoe", 2)}


def test_a_failed_attempt_under_a_cooldown_does_not_offer_an_attempt_it_would_refuse(bank, key_of, run_cli, tmp_path):
    """A new user's finding: "Start attempt 2 now? [Y/n]" then "cannot start: the next attempt opens in 120 s".
    With a 120 s cooldown the terminal quiz now says when the next attempt opens and asks nothing."""
    store = tmp_path / "quiz.sqlite3"
    wrong = "stop2.clip-objective-good"  # a number question: its key + 1 is wrong
    lines = [typed(q, "vic", 1, key_of("vic")["answers"][q.id] + (1.0 if q.id == wrong else 0))
             if q.id == wrong else typed(q, "vic", 1, key_of("vic")["answers"][q.id]) for q in bank.questions(2)]
    code, out, err = run_cli(["quiz", "take", "--stop", 2, "--student", "vic", "--store", store, "--policy",
                              every_question_policy(tmp_path)], "\n".join(lines) + "\n")
    assert code in (0, 1), err
    assert "The next attempt at stop 2 is not open yet: the next attempt opens in" in out
    assert "Start attempt 2 now" not in out and "cannot start" not in out
