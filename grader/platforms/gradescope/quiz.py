"""The quiz on Gradescope: grade a quiz responses file handed in with the exercises (keys on the grading side).

Enabled by ``ppo-course gradescope-bundle --quiz`` (``gradescope_config.json``:
``"quiz": true``). The submission may hold one responses file written by
``ppo-course quiz take`` in the student bundle (any ``*.json`` with
``student_id`` and ``answers``, at any depth, at most 1 MB); it is graded by
``quiz_bank.grading.grade`` under the web quiz's mastery rule (each submission is
an attempt: one question or more per claim, drawn for the student and the
attempt by ``quiz_bank.offline``; a stop passes when every claim is answered
right on questions not seen in an earlier submission). One Gradescope test per
stop (1 point when passed, else 0) is appended, tagged ``quiz``; the feedback
says passed or not and, when not, the claims missed and the section to reread,
as the quiz server's stop page does: never a key, an explanation or which
option was right. Without a responses file
every stop scores 0 with a message saying what to hand in.

Bound to its student, from Gradescope's
``/autograder/submission_metadata.json``: the file's ``student_id`` must be
the submitter's one quiz id (their SID, else the e-mail's local part:
`quiz_ids`; a file naming anyone else, or another of the submitter's names,
scores 0 with the reason), and the variants are those of attempt
``len(previous_submissions) + 1``, a count Gradescope keeps, whatever number
the file writes (a file answered for another attempt scores 0 with the
reason and the command to run). A stop passed in an earlier submission
stays passed (``extra_data.quiz.passed_stops`` of the previous results).
Without the metadata file (a local run) the file's own id and attempt are used.
"""

from __future__ import annotations

from pathlib import Path

from ppo_course.syllabus import N_STOPS

MAX_RESPONSES_BYTES = 1_000_000
METADATA = Path("/autograder/submission_metadata.json")


def quiz_ids(metadata: dict) -> dict[str, str]:
    """Every name of every submitter (SID, e-mail, the e-mail's local part, Gradescope's user id) → that user's one
    quiz id: the SID when there is one, else the e-mail's local part, else the e-mail, else the user id.

    The offline quiz draws an attempt's questions, and counts what earlier attempts showed, from the student id
    (``quiz_bank.offline``): a student answering as another of their names got another draw and a history of
    nothing seen, so a question an earlier submission had told about counted again. Each user answers as one id.
    """
    ids: dict[str, str] = {}
    for user in metadata.get("users") or []:
        if not isinstance(user, dict):
            continue
        email = user.get("email") if isinstance(user.get("email"), str) else ""
        names = [str(user[f]) for f in ("sid", "email", "id") if user.get(f) not in (None, "")]
        if "@" in email:
            names.insert(1 if user.get("sid") not in (None, "") else 0, email.split("@", 1)[0])
        for name in names:
            ids.setdefault(name, names[0])
    return ids


def submitter_from(metadata: dict) -> tuple[set[str], int, set[int]]:
    """(ids naming the submitter, the attempt this submission is, stops passed in earlier submissions).

    Gradescope's metadata: ``users`` (each with ``email``, ``sid``, ``name``) and
    ``previous_submissions`` (each with its ``results``). Which of the names a file may answer as: `quiz_ids`.
    """
    names = set(quiz_ids(metadata))
    previous = [p for p in metadata.get("previous_submissions") or [] if isinstance(p, dict)]
    passed: set[int] = set()
    for p in previous:
        quiz = ((p.get("results") or {}).get("extra_data") or {}).get("quiz") or {}
        passed |= {int(s) for s in quiz.get("passed_stops") or [] if str(s).isdigit()}
    return names, len(previous) + 1, passed


def _read_metadata(path: Path | None) -> dict | None:
    import json

    if path is None or not Path(path).is_file():
        return None
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


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


def _graded(bank, responses: list, ids: dict[str, str], attempt: int | None, passed_before: set[int]):
    """(report.json, problem) of one student's responses files under the submitter's one quiz id (`quiz_ids`).

    A file answering as another name of the same user scores 0 with the id to answer as (its draw is not the one
    graded, and would have had its own history of what was seen); without metadata, the file's own id is used.
    """
    from quiz_bank.grading import grade

    claimed = responses[0].student_id
    submitter = ids.get(claimed, sorted(set(ids.values()))[0]) if ids else claimed
    graded = grade(bank, responses, submitter=submitter, attempt=attempt)
    graded.kept_passed = passed_before
    problem = graded.problem
    if claimed in ids and claimed != submitter:
        problem = (f"this file answers as {claimed!r}, but your quiz id on Gradescope is {submitter!r} (one id for "
                   f"every submission: what an earlier one showed you counts as seen): run `ppo-course quiz take "
                   f"--student {submitter}" + (f" --attempt {attempt}`" if attempt else "`") + " and hand in its file")
    return graded.to_json(), problem


def add_quiz_results(results: dict, submission: Path, metadata_path: Path | None = METADATA) -> dict:
    """Append one test per stop to ``results`` (in place) and ``extra_data.quiz``; returns ``results``."""
    from quiz_bank.engine import ResponsesError
    from quiz_bank.grading import load_responses
    from quiz_bank.loader import load_bank

    bank = load_bank()
    metadata = _read_metadata(metadata_path)
    _, attempt, passed_before = submitter_from(metadata) if metadata else (set(), None, set())
    ids = quiz_ids(metadata) if metadata else {}
    paths, problem = find_responses(submission)
    report = None
    if paths:
        try:
            responses = [load_responses(p) for p in paths]
            if len({r.student_id for r in responses}) > 1:
                problem = "the quiz responses files name different students; hand in your own file only"
            else:
                report, problem = _graded(bank, responses, ids, attempt, passed_before)
        except (ResponsesError, ValueError) as exc:
            problem = f"the quiz responses file could not be read: {str(exc)[:300]}"
    tests = results.setdefault("tests", [])
    for stop in range(1, N_STOPS + 1):
        if report is None or problem is not None:
            score, output = 0.0, f"Quiz stop {stop}: not graded: {problem}."
            if report is not None and report["stops"][f"stop{stop}"]["passed_before"]:
                score, output = 1.0, f"Quiz stop {stop}: passed in an earlier submission (kept). This file: {problem}."
        else:
            s = report["stops"][f"stop{stop}"]
            score = 1.0 if s["passed"] else 0.0
            if s["passed_before"]:
                output = f"Quiz stop {stop}: passed in an earlier submission (kept)."
            else:
                # The web quiz's feedback (quiz_bank.mastery): the claims missed and where to reread, never which
                # option was right. Each submission is a new attempt with its own draw, and a question told about
                # here is stale from then on, so remembering this verdict answers nothing that counts again.
                missed = "; ".join(f"{c['claim']} ({c['cite']})" for c in s["claims_missed"])
                output = (f"Quiz stop {stop}: passed." if s["passed"] else
                          f"Quiz stop {stop}: not passed — a stop passes when every claim is answered right, on "
                          f"questions not seen before. Claims to reread: {missed}. The next submission asks them "
                          "again with other questions.")
        tests.append({"name": f"quiz stop {stop} (every claim, on unseen questions)", "score": score, "max_score": 1.0,
                      "status": "passed" if score else "failed", "output": output, "visibility": "visible",
                      "tags": ["quiz", f"stop{stop}"]})
    extra = results.setdefault("extra_data", {})
    passed_stops = sorted(passed_before | ({int(k[4:]) for k, v in report["stops"].items() if v["passed"]}
                                           if report and problem is None else set()))
    extra["quiz"] = {"graded": report is not None and problem is None, "problem": problem,
                     "stops_passed": len(passed_stops), "complete": len(passed_stops) == N_STOPS,
                     "passed_stops": passed_stops}
    if attempt is not None:
        extra["quiz"]["graded_as_attempt"] = attempt
        extra["quiz"]["next_attempt"] = attempt + 1
    results["score"] = float(sum(t.get("score", 0.0) for t in tests))
    extra["max_score"] = float(extra.get("max_score", 0.0)) + N_STOPS
    return results
