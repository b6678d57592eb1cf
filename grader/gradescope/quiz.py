"""The quiz on Gradescope: grade a quiz responses file handed in with the exercises (keys on the grading side).

Enabled by ``ppo-course gradescope-bundle --quiz`` (``gradescope_config.json``:
``"quiz": true``). The submission may hold one responses file written by
``ppo-course quiz take`` in the student bundle (any ``*.json`` with
``student_id`` and ``answers``, at any depth, at most 1 MB); it is graded by
``quiz_bank.engine.grade`` (the 100% rule per stop, each student's own
variants). One Gradescope test per stop (1 point when passed at 100%, else 0)
is appended, tagged ``quiz``; the feedback names the missed question ids and
the sections to reread, never a key or an explanation. Without a responses
file every stop scores 0 with a message saying what to hand in.
"""

from __future__ import annotations

from pathlib import Path

MAX_RESPONSES_BYTES = 1_000_000
N_STOPS = 8


def find_responses(submission: Path) -> tuple[list[Path], str | None]:
    """Candidate responses files in the submission (sorted), or a reason why there is none usable."""
    import json

    found = []
    if not submission.is_dir():
        return [], "no submission folder"
    for path in sorted(submission.rglob("*.json")):
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_RESPONSES_BYTES:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if isinstance(data, dict) and "answers" in data and "student_id" in data:
            found.append(path)
    if not found:
        return [], "no quiz responses file (quiz_responses_<you>.json from `ppo-course quiz take`) in the submission"
    return found, None


def add_quiz_results(results: dict, submission: Path) -> dict:
    """Append one test per stop to ``results`` (in place) and ``extra_data.quiz``; returns ``results``."""
    from quiz_bank.engine import ResponsesError, grade, load_responses
    from quiz_bank.loader import load_bank

    paths, problem = find_responses(submission)
    report = None
    if paths:
        try:
            responses = [load_responses(p) for p in paths]
            if len({r.student_id for r in responses}) > 1:
                problem = "the quiz responses files name different students; hand in your own file only"
            else:
                report = grade(load_bank(), responses).to_json()
        except (ResponsesError, ValueError) as exc:
            problem = f"the quiz responses file could not be read: {str(exc)[:300]}"
    tests = results.setdefault("tests", [])
    for stop in range(1, N_STOPS + 1):
        if report is None:
            score, output = 0.0, f"Quiz stop {stop}: not graded: {problem}."
        else:
            s = report["stops"][f"stop{stop}"]
            missed = [q["id"] for q in s["questions"] if not q["correct"]]
            score = 1.0 if s["passed"] else 0.0
            output = (f"Quiz stop {stop}: {s['score']}/{s['max_score']} right — "
                      + ("passed (100%)." if s["passed"] else "a stop passes only at 100%. Not right yet: "
                         + ", ".join(missed) + ". Reread the sections they cite and retake the stop."))
        tests.append({"name": f"quiz stop {stop} (100% to pass)", "score": score, "max_score": 1.0,
                      "status": "passed" if score else "failed", "output": output, "visibility": "visible",
                      "tags": ["quiz", f"stop{stop}"]})
    extra = results.setdefault("extra_data", {})
    extra["quiz"] = {"graded": report is not None, "problem": problem,
                     "stops_passed": report["stops_passed"] if report else 0,
                     "complete": bool(report and report["complete"])}
    results["score"] = float(sum(t.get("score", 0.0) for t in tests))
    extra["max_score"] = float(extra.get("max_score", 0.0)) + N_STOPS
    return results
