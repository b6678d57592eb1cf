"""``ppo-course quiz grade-batch``: the offline quiz's responses files of a class graded into one gradebook CSV.

Each file names its student (``--by-folder``: it must be the folder that holds it); the files of one student are
graded together by ``quiz_bank.grading.grade`` (each declared attempt on its own draw), unless two of them answer
the same attempt (the student's row is then rejected, naming both files).
"""

from __future__ import annotations

import sys

from ppo_course.syllabus import STOPS


def _attempt_clash(student_id: str, files: list) -> str | None:
    """Why the files naming ``student_id`` cannot be graded together (None when they can): two of them answer the
    same attempt. Answers merge across files ("a later file wins a tie"), so a classmate's file naming this student,
    sorted after the student's own, replaced the student's answers; the student is rejected, naming both files."""
    first: dict[int, str] = {}
    for rel, r in files:
        for n in sorted({r.attempt, *r.attempts.values()}):
            if n in first:
                return (f"{first[n]} and {rel} both answer attempt {n} of {student_id!r}: one file per attempt "
                        "counts; keep the student's own file and grade again")
            first[n] = rel
    return None


def _write_gradebook(rows: list[dict], out) -> None:
    """The gradebook CSV at ``out``: one row per student (or rejected file), sorted by id."""
    import csv

    from ppo_course.text_safety import csv_row

    columns = ["student_id", *[f"stop{s}" for s in STOPS], "total", "max_total", "stops_passed", "complete", "status", "message"]
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, restval="")
        writer.writeheader()
        # Ids, messages and unknown question ids come from the students' files: capped, never a formula.
        writer.writerows(csv_row(r) for r in sorted(rows, key=lambda r: r["student_id"]))


def grade_batch(args) -> int:
    """Grade every responses file under ``args.directory`` into the gradebook CSV ``args.out``; returns the exit code.

    Args:
        args: the parsed ``quiz grade-batch`` options (``directory``, ``out``, ``bank``, ``by_folder``).

    Every file is bound to its student (``--by-folder``: the folder that holds it); a student two of whose files
    answer the same attempt is rejected (`_attempt_clash`); ids and messages are written capped and formula-safe.
    """
    from collections import defaultdict

    from quiz_bank.engine import ResponsesError
    from quiz_bank.grading import grade, load_responses
    from quiz_bank.loader import load_bank
    from quiz_bank.symbolic import SymbolicChecker

    bank = load_bank(args.bank)
    if not args.directory.is_dir():
        print(f"error: {args.directory} is not a directory", file=sys.stderr)
        return 2
    by_student = defaultdict(list)
    rows = []
    for path in sorted(args.directory.rglob("*.json")):
        try:
            r = load_responses(path)
        except ResponsesError as exc:
            rows.append({"student_id": path.stem, "status": "rejected", "message": str(exc)})
            continue
        if getattr(args, "by_folder", False):
            rel = path.relative_to(args.directory)
            owner = rel.parts[0] if len(rel.parts) > 1 else path.stem
            if r.student_id != owner:
                rows.append({"student_id": owner, "status": "rejected",
                             "message": f"{rel} is {r.student_id!r}'s responses file, handed in by {owner!r}: "
                                        "a file counts only for the student who answered it"})
                continue
        by_student[r.student_id].append((path.relative_to(args.directory).as_posix(), r))
    with SymbolicChecker() as checker:  # one worker for the whole batch
        for student_id, files in sorted(by_student.items()):
            if (clash := _attempt_clash(student_id, files)) is not None:
                rows.append({"student_id": student_id, "status": "rejected", "message": clash})
                continue
            data = grade(bank, [r for _, r in files], checker=checker).to_json()
            row = {"student_id": student_id, "status": "graded"}
            for name, s in data["stops"].items():
                row[name] = s["score"]
            row.update(total=data["score"], max_total=data["max_score"], stops_passed=data["stops_passed"],
                       complete=data["complete"])
            if data["unknown_question_ids"]:
                row["message"] = "unknown question ids: " + " ".join(data["unknown_question_ids"])
            rows.append(row)
    _write_gradebook(rows, args.out)
    rejected = sum(r["status"] == "rejected" for r in rows)
    print(f"graded {len(rows) - rejected} student(s), rejected {rejected} file(s) → {args.out}")
    return 0
