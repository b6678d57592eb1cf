"""``ppo-course quiz ...``: take, key, grade, grade-batch, status, validate, export-public
(and, on an instructor install, the server's ``serve``, ``tokens``, ``export`` ...: added through
``quiz_bank.extension_point``).

Exit codes: 0 done (a grade was produced, whatever the score; the bank is valid), 1 the bank is invalid / a take
ended before the stop was finished, 2 a usage error or a malformed input file (the message says what and where).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ppo_course.syllabus import STOPS
from quiz_bank.extension_point import instructor_extension

HELP = "take, grade and report the stop 1–8 quiz (100% per stop to complete the chapter)"


#: The verbs a student uses; where the answer keys are absent (the student bundle) the others (key, grade,
#: grade-batch, export-public and the server's serve, tokens, export ...) are left out of --help and argv.
STUDENT_VERBS = ("take", "status", "validate")


def _hide_verbs(verbs, names: tuple[str, ...]) -> None:
    """Remove the verbs ``names`` from the sub-parsers action ``verbs`` (its --help and its choices)."""
    for name in names:
        verbs.choices.pop(name, None)
    verbs._choices_actions[:] = [a for a in verbs._choices_actions if a.dest not in names]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the quiz verbs as sub-parsers of ``ppo-course quiz``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bank", type=Path, default=None, help="question bank folder (default: the installed bank)")
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument("--store", type=Path, default=None, help="attempts database (default: $PPO_COURSE_QUIZ_STORE or ~/.ppo_course/quiz.sqlite3)")
    verbs = parser.add_subparsers(dest="quiz_command", metavar="VERB")

    take = verbs.add_parser("take", parents=[common, store], help="take the quiz in the terminal (answers are read from stdin)")
    take.add_argument("--stop", type=int, choices=STOPS, metavar="N", help="one stop (default: every stop not yet passed)")
    take.add_argument("--student", help="your student id (default: $PPO_COURSE_STUDENT, else asked)")
    take.add_argument("--out", type=Path, default=None, help="responses file to submit, written when no keys are installed (default: quiz_responses_<student>.json)")
    take.add_argument("--new-attempt", action="store_true", help="start a new attempt even where a stop is passed or recorded (a passed stop stays passed)")
    take.add_argument("--attempt", type=int, default=None, metavar="N", help="no keys: answer the variants of attempt N (the number your grader's feedback gives)")
    take.add_argument("--policy", type=Path, default=None, help="attempt policy YAML (default: the course's, as the quiz server)")

    key = verbs.add_parser("key", parents=[common], help="instructor: the correct responses for one student's variants")
    key.add_argument("--student", required=True)
    key.add_argument("--attempt", type=int, default=1)
    key.add_argument("--out", type=Path, required=True)

    grade = verbs.add_parser("grade", parents=[common], help="grade responses file(s) of one student")
    grade.add_argument("responses", type=Path, nargs="+", metavar="RESPONSES.json")
    grade.add_argument("--out", type=Path, required=True, metavar="report.json")
    grade.add_argument("--results", type=Path, default=None, help="the student's results.json (exercise scores)")
    grade.add_argument("--require-exercises", action="store_true", default=None, help="complete also needs every exercise at full marks (default: completion.yaml)")
    grade.add_argument("--student", default=None, help="who handed the file(s) in (a file naming another student scores 0); default: the file's student_id")
    grade.add_argument("--ledger", type=Path, default=None, help="the grader's attempt counts and passed stops (default: quiz_ledger.json beside --out)")

    batch = verbs.add_parser("grade-batch", parents=[common], help="TA: grade a folder of responses files into a CSV gradebook")
    batch.add_argument("directory", type=Path, metavar="DIR")
    batch.add_argument("--out", type=Path, required=True, metavar="quiz_gradebook.csv")
    batch.add_argument("--by-folder", action="store_true", help="DIR/<student>/…: a file counts only for the student whose folder holds it")

    status = verbs.add_parser("status", parents=[common, store], help="progress per stop and chapter completion")
    status.add_argument("--student", default=None, help="one student (default: $PPO_COURSE_STUDENT, else every student in the store)")

    verbs.add_parser("validate", parents=[common], help="check the bank: schema, ids, keys; errors give file, line and question id")

    export = verbs.add_parser("export-public", help="write the key-less bank (what ships to students)")
    export.add_argument("out_dir", type=Path)

    extension = instructor_extension()  # the server's verbs (serve, tokens, export); absent from the student bundle
    if extension is not None:
        extension.add_server_arguments(verbs)
    if not (Path(__file__).resolve().parent / "instructor" / "keys.py").is_file():  # the student's bundle: no keys
        _hide_verbs(verbs, tuple(name for name in verbs.choices if name not in STUDENT_VERBS))


def run(args: argparse.Namespace) -> int:
    """Dispatch to the verb; heavy imports happen here, not at ``--help`` time."""
    verb = getattr(args, "quiz_command", None)
    handlers = {"take": _take, "key": _key, "grade": _grade, "grade-batch": _grade_batch,
                "status": _status, "validate": _validate, "export-public": _export}
    extension = instructor_extension()
    if extension is not None:
        handlers.update(extension.SERVER_VERBS)
    if verb not in handlers:
        print("usage: ppo-course quiz {take,key,grade,grade-batch,status,validate,export-public,serve,tokens,revoke,export,migrate,backup,restore} ...",
              file=sys.stderr)
        return 2
    from quiz_bank.engine import KeysUnavailable, ResponsesError
    from quiz_bank.loader import BankInvalid

    try:
        return handlers[verb](args)
    except BankInvalid as exc:
        print(f"the question bank is invalid:\n{exc}", file=sys.stderr)
        return 1
    except (ResponsesError, KeysUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _console():
    from rich.console import Console

    return Console(highlight=False)


def _write_json(path: Path, data) -> None:
    """Write ``data`` as indented JSON atomically (``ppo_course.atomic_files``: a crash never leaves half a file)."""
    import json

    from ppo_course.atomic_files import atomic_write_text

    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- validate / export / key


def _validate(args) -> int:
    from quiz_bank.loader import keys_installed, validate_bank

    bank, errors = validate_bank(args.bank)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"{len(errors)} error(s)", file=sys.stderr)
        return 1
    qs = bank.questions()
    n_param = sum(q.is_parametric for q in qs)
    per_stop = ", ".join(f"{s}:{len(bank.questions(s))}" for s in sorted(bank.stops))
    keyed = "keys checked" if keys_installed() and bank.has_fixed_keys else "no keys (public bank)"
    print(f"OK: {len(bank.stops)} stops, {len(qs)} questions (per stop {per_stop}), "
          f"{n_param} parametric ({n_param / len(qs):.0%}); {keyed}")
    return 0


def _export(args) -> int:
    from quiz_bank.export import export_public

    written = export_public(args.out_dir)
    print(f"wrote the key-less bank to {args.out_dir} ({len(written)} files)")
    return 0


def _grade_batch(args) -> int:
    """``quiz grade-batch``: ``quiz_bank.batch_grading.grade_batch``."""
    from quiz_bank.batch_grading import grade_batch

    return grade_batch(args)


def _key(args) -> int:
    from quiz_bank.grading import answer_key
    from quiz_bank.loader import load_bank

    if args.attempt < 1:
        print("error: --attempt starts at 1", file=sys.stderr)
        return 2
    _write_json(args.out, answer_key(load_bank(args.bank), args.student, args.attempt))
    print(f"wrote the key of {args.student!r}, attempt {args.attempt}, to {args.out}")
    return 0


# ---------------------------------------------------------------- grade


def _grade(args) -> int:
    from quiz_bank.grading import grade, load_responses
    from quiz_bank.ledger import Ledger, digest_of
    from quiz_bank.loader import load_bank

    bank = load_bank(args.bank)
    responses = [load_responses(p) for p in args.responses]
    if len({r.student_id for r in responses}) > 1:
        print(f"error: the responses files belong to different students: {sorted({r.student_id for r in responses})}", file=sys.stderr)
        return 2
    student = args.student or responses[0].student_id
    try:
        ledger = Ledger(args.ledger or args.out.parent / "quiz_ledger.json")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    attempt = ledger.attempt_for(student, digest_of(args.responses))
    report = grade(bank, responses, results=args.results, require_exercises=args.require_exercises,
                   submitter=student, attempt=attempt)
    report.kept_passed = ledger.passed(student)
    data = report.to_json()
    data["graded_as_attempt"] = attempt
    if report.problem is None:
        ledger.add_passed(student, [s for s in bank.stops if report.stop_passed(s)])
    ledger.save(_write_json)
    _write_json(args.out, data)
    _print_report(data)
    print(f"attempt counts and passed stops kept in {ledger.path} (--ledger): keep it beside the results")
    if report.unknown_question_ids:
        print(f"warning: unknown question ids (not in the bank): {', '.join(report.unknown_question_ids)}", file=sys.stderr)
    return 0


def _print_report(data: dict) -> None:
    from rich.table import Table

    table = Table(title=f"Quiz — {data['student_id']}")
    for col in ("stop", "score", "passed"):
        table.add_column(col)
    for name, s in data["stops"].items():
        table.add_row(name, f"{s['score']}/{s['max_score']}", "yes" if s["passed"] else "no")
    console = _console()
    console.print(table)
    console.print(f"chapter complete: {'yes' if data['complete'] else 'no'} ({data['stops_passed']}/8 stops passed)")
    if data.get("problem"):
        console.print(f"scored 0: {data['problem']}", markup=False)
    if (data.get("exercises") or {}).get("faulted"):
        console.print(f"exercises: {'; '.join(data['exercises']['problems'])}", markup=False)
    for name, claim in ((n, c) for n, s in data["stops"].items() if not s["passed"] for c in s["claims_missed"]):
        console.print(f"{name}: reread {claim['claim']} ({claim['cite']})", markup=False)
    if "graded_as_attempt" in data:
        console.print(f"graded as attempt {data['graded_as_attempt']}; the next submission is attempt "
                      f"{data['graded_as_attempt'] + 1} (`ppo-course quiz take --attempt {data['graded_as_attempt'] + 1}`)")


# ---------------------------------------------------------------- status


def _status(args) -> int:
    import os

    from quiz_bank.loader import keys_installed, load_bank
    from quiz_bank.storage import AttemptStore

    bank = load_bank(args.bank)
    student = args.student or os.environ.get("PPO_COURSE_STUDENT")
    console = _console()
    with AttemptStore(args.store) as store:
        students = [student] if student else store.students()
        if not students:
            console.print("no attempts stored yet")
            return 0
        keyed = keys_installed() and bank.has_fixed_keys
        for sid in students:
            console.print(_status_table(bank, store, sid, keyed))
            done = store.completed_stops(sid)
            if keyed:
                console.print(f"chapter complete: {'yes' if len(done) == 8 else 'no'} ({len(done)}/8 stops passed)")
            else:
                console.print("not graded here (no keys): hand in your responses file; the grader's report says "
                              "which stops passed")
    return 0


def _status_table(bank, store, sid: str, keyed: bool):
    """One student's progress: per stop, the latest attempt and, with keys, whether the stop is passed.

    Truthful by construction: "passed" is the stored completion, which no later
    attempt removes; the latest attempt is shown as in progress, failed or passed."""
    from rich.table import Table

    done = store.completed_stops(sid)
    table = Table(title=f"Quiz progress — {sid}")
    for col in ("stop", "latest attempt", "answered", "passed" if keyed else "status"):
        table.add_column(col)
    for s in sorted(bank.stops):
        qs = bank.questions(s)
        rows = store.stop_attempts(sid, s)  # a key-less take records its attempt's mastery draw too
        answers = [a for q in qs for a in store.attempts(sid, q.id)]
        latest = max((a.attempt for a in answers), default=0)
        if rows:
            latest = rows[-1][0]
            asked = rows[-1][1]
        else:
            asked = tuple(q.id for q in qs)
        answered = sum(any(a.attempt == latest and a.question_id == qid for a in answers) for qid in asked)
        if keyed:
            state = "yes" if s in done else ("in progress" if latest and answered < len(asked) else "no")
        elif latest == 0:
            state = "not started"
        else:
            state = (f"attempt {latest} recorded, not graded here" if answered == len(asked)
                     else f"attempt {latest} in progress")
        # A stop not started has no draw yet: its bank's size is not the number an attempt asks.
        table.add_row(f"stop{s}", str(latest or "—"), f"{answered}/{len(asked)}" if rows or latest else "—", state)
    return table


# ---------------------------------------------------------------- take


def _take(args) -> int:
    import os

    from quiz_bank.loader import keys_installed, load_bank
    from quiz_bank.storage import AttemptStore
    from quiz_bank.take import Session

    bank = load_bank(args.bank)
    console = _console()
    reader = _StdinReader(console)
    student = args.student or os.environ.get("PPO_COURSE_STUDENT")
    if not student:
        console.print("Student id: ", end="")
        student = (reader.read_line() or "").strip()
        if not student:
            print("error: a student id is needed (--student ID)", file=sys.stderr)
            return 2
    keyed = keys_installed() and bank.has_fixed_keys
    if args.attempt is not None and (args.attempt < 1 or keyed):
        print("error: --attempt N (N ≥ 1) is for a take without keys (the student bundle)", file=sys.stderr)
        return 2
    policy = None
    if keyed:
        from quiz_bank.take import course_policy

        try:
            policy = course_policy(args.policy)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    with AttemptStore(args.store) as store:
        session = Session(bank, store, student, console, reader, keyed=keyed, policy=policy,
                          new_attempt=args.new_attempt, attempt=args.attempt)
        finished = session.run([args.stop] if args.stop else None)
        if not keyed:
            out = args.out or Path(f"quiz_responses_{_safe_name(student)}.json")
            _write_json(out, session.responses_file())
            console.print(f"Your responses are saved in {out}: submit this file to be graded.")
    return 0 if finished else 1


def _safe_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


class _StdinReader:
    """Reads one answer per line from stdin; ``None`` at end of input (so takes are scriptable)."""

    def __init__(self, console) -> None:
        self.console = console

    def read_line(self) -> str | None:
        line = sys.stdin.readline()
        if line == "":
            return None
        if not sys.stdin.isatty():
            self.console.print(line.rstrip("\n"), markup=False)  # echo scripted input for a readable transcript
        return line.rstrip("\n")
