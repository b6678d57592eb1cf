"""Regrades that explain themselves: what a grader change did to each student, test by test.

``grade-batch`` regrades a student whenever the grader fingerprint
(``grader.fingerprint.grader_fingerprint``) differs from the one in the student's
``batch.json``. Before the new grading replaces them, the published
``results.json`` and ``batch.json`` are kept in ``OUT_DIR/.batch/published/``
(:func:`keep_published`); after the batch, :func:`write_regrade_report`
compares them with the new results and writes ``OUT_DIR/regrade.md`` and
``OUT_DIR/regrade.csv``: whose score moved, on which test, from what to what,
and why (the test's diagnosis before and after).

The snapshot of a student is taken only from a record graded by *another*
fingerprint, and kept until the next grader change, so a regrade killed
half-way and resumed still reports every student against the published
version.

Options of ``grade-batch``:

* ``--never-lower``: a published exercise score is never lowered. Where the
  regrade gives an exercise less than the published results did (same
  submission), that exercise keeps its published tests and score, and the
  student's message, feedback and regrade.md say so. Per exercise, because
  that is the gradebook's unit: an exercise's tests always come from one
  grading.
* ``--latest-only``: grade only the latest submission of each student, under
  the attempt rule the TA states (``grader.intake.attempts``; folder names are never
  guessed).
"""

from __future__ import annotations

import csv
import io
import math
import shutil
from dataclasses import dataclass
from pathlib import Path

from grader.records.gradebook import REGRADE_CSV, REGRADE_MD

PUBLISHED_DIR = "published"  # under OUT_DIR/.batch
CSV_COLUMNS = ("student_id", "exercise", "test", "old_score", "new_score", "old_max_score", "max_score", "old_status",
               "new_status", "old_diagnosis", "new_diagnosis", "why", "kept_published", "published_score")

# ----------------------------------------------------------------------- snapshots


def keep_published(out_dir: Path, student_id: str, fingerprint: str, record, submission_hash: str | None = None) -> None:
    """Copy a student's results.json and batch.json into ``.batch/published/<id>/`` before a regrade.

    When ``record`` (the student's current ``StudentRecord``) was graded by another fingerprint,
    or (``submission_hash`` given: ``--never-lower``) for another submission; a snapshot is never
    replaced by a half-done regrade's (the record goes before the regrade writes anything).
    """
    if record is None or record.score is None:  # nothing to keep from a grader fault (no score was published)
        return
    if record.grader_fingerprint == fingerprint and (submission_hash is None or record.submission_hash == submission_hash):
        return
    src = Path(out_dir) / student_id
    if not (src / "results.json").is_file():
        return
    from grader.records.gradebook import RECORD
    from grader.records.publish import write_record
    from ppo_course.atomic_files import atomic_write_text

    dest = Path(out_dir) / ".batch" / PUBLISHED_DIR / student_id
    dest.mkdir(parents=True, exist_ok=True)
    atomic_write_text(dest / "results.json", (src / "results.json").read_text(encoding="utf-8"))
    write_record(dest / RECORD, record)


def published(out_dir: Path, student_id: str):
    """(published ``StudentRecord``, published ``grader.records.gradebook.PublishedResults``) of a student, or None."""
    from grader.records.gradebook import StudentRecord, read_results

    folder = Path(out_dir) / ".batch" / PUBLISHED_DIR / student_id
    try:
        record = StudentRecord.model_validate_json((folder / "batch.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    results = read_results(folder / "results.json")
    return None if results is None else (record, results)


def drop_published(out_dir: Path) -> None:
    """Forget every snapshot (after a report was written for a batch with no grader change left)."""
    shutil.rmtree(Path(out_dir) / ".batch" / PUBLISHED_DIR, ignore_errors=True)


# ----------------------------------------------------------------------- never lower


def never_lower(new, old):
    """``new`` where every exercise that scored more in ``old`` (the published result) keeps its published tests.

    Args:
        new: this regrade's typed ``GradeResult``.
        old: the published result, typed (``grader.records.gradebook.load_result``; any grader version).

    Returns:
        (the result to publish, one note per kept exercise such as ``"ex4_gae kept at its published 10
        (the regrade gives 8)"``, the regrade's tests of the kept exercises for regrade.md).

    A kept exercise takes the published score of each test this version still has, clamped to the
    test's points in this version, and this regrade's score for a test the published result did not have;
    then (:func:`_fill_to_published`) its tests are raised to the published exercise score, capped at this
    version's maximum: an unchanged submission's exercise never drops unless its maximum fell below the
    published score, and then the note states the rule. The exercise is kept only when that gives more than
    the regrade; its score is always the sum of its tests.
    """
    notes: list[str] = []
    replaced: list = []
    kept_tests: dict[str, object] = {}
    exercises = dict(new.exercises)
    for stem, ex in new.exercises.items():
        before = old.exercises.get(stem)
        if before is None:
            continue
        now = {t.name: t for t in new.tests if t.exercise == stem}
        tests = {t.name: t for t in now.values()}
        for t in old.tests:
            cur = now.get(t.name)
            if t.exercise != stem or cur is None:
                continue  # a test this grader version no longer has: its points are gone
            score = min(t.score, cur.max_score)
            same = t.status == cur.status and t.diagnosis == cur.diagnosis  # then this grading's words are true too
            tests[t.name] = cur.model_copy(update={"score": score} if same else
                                           {"score": score, "status": t.status, "output": t.output,
                                            "diagnosis": t.diagnosis, "detail": ""})
        score = _fill_to_published(tests, min(before.score, ex.max_score))
        if not score > ex.score + 1e-9:
            continue
        replaced += now.values()
        kept_tests.update(tests)
        exercises[stem] = before.model_copy(update={"score": score, "max_score": ex.max_score})
        if score < before.score - 1e-9:  # only where this version's maximum is below the published score
            notes.append(f"{stem} kept at {score:g} of its published {before.score:g}, clamped to this version's "
                         f"maximum for {stem} ({ex.max_score:g}): never lower keeps a published score up to the new "
                         f"maximum (the regrade gives {ex.score:g})")
        else:
            notes.append(f"{stem} kept at its published {before.score:g} (the regrade gives {ex.score:g})")
    if not notes:
        return new, [], []
    tests = [kept_tests.get(t.name, t) for t in new.tests]
    return new.model_copy(update={"tests": tests, "exercises": exercises}), notes, replaced


def _fill_to_published(tests: dict, target: float) -> float:
    """Raise the kept tests (in place, each up to its points in this version) until they sum to ``target``, the
    published exercise score capped at this version's maximum; returns their sum.

    A points change that moves points between an exercise's tests clamps the published tests one by one below
    the published total although the maximum is unchanged: the difference goes to the tests with room left,
    passed ones first, so that an unchanged submission's exercise never drops.
    """
    score = round(sum(t.score for t in tests.values()), 6)
    for name, t in sorted(tests.items(), key=lambda kv: kv[1].status != "passed"):
        room = min(t.max_score - t.score, target - score)
        if room > 1e-9:
            tests[name] = t.model_copy(update={"score": round(t.score + room, 6)})
            score = round(score + room, 6)
    return score


def apply_never_lower(out_dir: Path, sid: str, submission_hash: str, fingerprint: str, outcome):
    """``--never-lower`` on a student's typed ``grader.records.outcome.StudentOutcome``; returns the outcome to publish.

    Against the published snapshot (:func:`published`): a grader change keeps each exercise's published
    score where it is higher (:func:`never_lower`: clamped to this version's points, said in the regrade
    lines); a changed submission is regraded in full, and a regrade line says so.
    """
    before = published(out_dir, sid)
    if before is None:
        return outcome
    old_record, old = before
    if old_record.score is None or outcome.fault:  # a grader fault has no score to keep or to compare
        return outcome
    if old_record.submission_hash != submission_hash:
        line = (f"your submission changed since the published grading ({old_record.score:g} / "
                f"{old_record.max_score:g}), so it was regraded in full: {outcome.result.score:g} / "
                f"{outcome.result.max_score:g} (never lower keeps scores only across a grader change)")
        return outcome.model_copy(update={"regrade": [*outcome.regrade, line]})
    if old_record.grader_fingerprint == fingerprint or not outcome.graded:
        return outcome
    result, notes, replaced = never_lower(outcome.result, old.result)
    if not notes:
        return outcome
    return outcome.model_copy(update={"result": result, "never_lower": notes, "regrade_tests": replaced})


# --------------------------------------------------------------------------- report


@dataclass
class TestChange:
    """One test whose score moved in a regrade, with its diagnosis before and after."""

    __test__ = False
    student_id: str
    exercise: str
    test: str
    old_score: float | None
    new_score: float | None
    max_score: float
    old_status: str
    new_status: str
    old_diagnosis: str
    new_diagnosis: str
    old_max_score: float | None = None
    kept_published: bool = False
    #: The score results.json now publishes for the test (``new_score`` is the regrade's own; they differ where
    #: ``--never-lower`` kept the published score). None: the test is not in the published results.
    published_score: float | None = None

    @property
    def why(self) -> str:
        """The diagnosis before → after, and a change of the test's points when there is one."""
        text = f"{_why(self.old_status, self.old_diagnosis)} → {_why(self.new_status, self.new_diagnosis)}"
        if self.old_max_score is not None and not math.isclose(self.old_max_score, self.max_score, abs_tol=1e-9):
            text += f" (the test's points changed: {self.old_max_score:g} → {self.max_score:g})"
        return text


def test_changes(student_id: str, old_tests: list, new_tests: list) -> list[TestChange]:
    """Every test whose score differs between two lists of typed ``TestResult`` (added or removed tests included)."""
    old = {t.name: t for t in old_tests}
    new = {t.name: t for t in new_tests}
    changes = []
    for name in list(old) + [n for n in new if n not in old]:
        a, b = old.get(name), new.get(name)
        if a and b and math.isclose(a.score, b.score, abs_tol=1e-9):
            continue
        ref = b or a
        changes.append(TestChange(student_id, ref.exercise, name, a.score if a else None, b.score if b else None,
                                  ref.max_score, a.status if a else "absent", b.status if b else "absent",
                                  (a.diagnosis or "") if a else "", (b.diagnosis or "") if b else "",
                                  a.max_score if a else None))
    return changes


@dataclass
class StudentRegrade:
    """One regraded student: totals before and after, the moved tests, the never-lower notes."""

    student_id: str
    old_total: float
    new_total: float
    old_fingerprint: str
    submission_changed: bool
    changes: list[TestChange]
    notes: list[str]


def collect(out_dir: Path, records, fingerprint: str) -> list[StudentRegrade]:
    """The :class:`StudentRegrade` of every student with a snapshot from another grader (or, kept by
    ``--never-lower``, of another submission), sorted by id."""
    from grader.records.gradebook import read_results

    out = []
    for r in sorted(records, key=lambda r: r.student_id):
        if r.grader_fingerprint != fingerprint or r.score is None:  # a grader fault has no score to compare
            continue
        before = published(out_dir, r.student_id)
        if before is None or (before[0].grader_fingerprint == fingerprint
                              and before[0].submission_hash == r.submission_hash):
            continue
        old_record, old = before
        new = read_results(Path(out_dir) / r.student_id / "results.json")
        if new is None or old_record.score is None:
            continue
        kept_stems = {n.split(" ", 1)[0] for n in new.never_lower}
        changes = test_changes(r.student_id, old.result.tests, new.result.tests)
        for c in changes:
            c.kept_published = c.exercise in kept_stems
        # With --never-lower a kept exercise shows no moved test: list what the regrade would have done.
        if kept_stems:
            for c in test_changes(r.student_id, old.result.tests, new.regrade_tests):
                if c.exercise in kept_stems:
                    c.kept_published = True
                    changes.append(c)
        shown = {t.name: t.score for t in new.result.tests}
        for c in changes:
            c.published_score = shown.get(c.test)
        out.append(StudentRegrade(r.student_id, old_record.score, r.score, old_record.grader_fingerprint,
                                  old_record.submission_hash != r.submission_hash, changes, new.never_lower))
    return out


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{round(x, 4):g}"


def _why(status: str, diagnosis: str) -> str:
    return "passed" if status == "passed" else (diagnosis or status or "failed")


def regrade_markdown(regrades: list[StudentRegrade], fingerprint: str, never_lower_on: bool) -> str:
    """regrade.md: a summary, then per test and per student what moved and why."""
    from grader.mistakes.diagnose import DIAGNOSES
    from ppo_course.text_safety import md_inline

    moved = [s for s in regrades if not math.isclose(s.old_total, s.new_total, abs_tol=1e-9) or s.changes]
    olds = sorted({s.old_fingerprint for s in regrades})
    lines = ["# Regrade report", "",
             f"Grader fingerprint {', '.join(f'`{o}`' for o in olds) or '–'} → `{fingerprint}`. "
             f"{len(regrades)} students regraded, {len(moved)} with a changed test; "
             f"{sum(s.new_total > s.old_total + 1e-9 for s in regrades)} up, "
             f"{sum(s.new_total < s.old_total - 1e-9 for s in regrades)} down"
             + (" (never lower: on)." if never_lower_on else "."), ""]
    by_test: dict[tuple[str, str], list[TestChange]] = {}
    for s in regrades:
        for c in s.changes:
            by_test.setdefault((c.exercise, c.test), []).append(c)
    if by_test:
        lines += ["## Per test", "", "| test | students | moved | why (diagnosis before → after) |",
                  "| --- | ---: | --- | --- |"]
        for (stem, test), cs in sorted(by_test.items()):
            moves = sorted({f"{_fmt(c.old_score)} → {_fmt(c.new_score)}" for c in cs})
            whys = sorted({c.why for c in cs})
            lines.append(f"| `{test}` | {len(cs)} | {', '.join(moves)} | {'; '.join(whys)} |")
        lines.append("")
    lines += ["## Per student", ""]
    if not moved:
        lines += ["No score moved.", ""]
    for s in moved:
        head = f"### {md_inline(s.student_id)}: {_fmt(s.old_total)} → {_fmt(s.new_total)}"  # a folder name: escaped
        if s.submission_changed and s.old_fingerprint == fingerprint:
            head += " (the submission changed: regraded in full, never lower applies to a grader change only)"
        elif s.submission_changed:
            head += " (the submission changed too)"
        lines += [head, ""]
        for n in s.notes:
            lines.append(f"- never lower: {n}")
        for c in s.changes:
            text = DIAGNOSES.get(c.new_diagnosis, "") if c.new_diagnosis else ""
            kept = " (published score kept)" if c.kept_published else ""
            lines.append(f"- `{c.test}`: {_fmt(c.old_score)} → {_fmt(c.new_score)} / {c.max_score:g}{kept}; "
                         f"{c.why}" + (f": {text}" if text else ""))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def regrade_csv(regrades: list[StudentRegrade]) -> str:
    """regrade.csv: one row per moved test (:data:`CSV_COLUMNS`); ids neutralised against formulas."""
    from ppo_course.text_safety import csv_cell as neutralise_cell

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for s in regrades:
        for c in s.changes:
            writer.writerow([neutralise_cell(c.student_id), c.exercise, neutralise_cell(c.test), _fmt(c.old_score),
                             _fmt(c.new_score), _fmt(c.old_max_score), f"{c.max_score:g}", c.old_status, c.new_status,
                             c.old_diagnosis, c.new_diagnosis, c.why, "yes" if c.kept_published else "no",
                             _fmt(c.published_score)])
    return buf.getvalue()


def write_regrade_report(out_dir: Path, records, fingerprint: str, never_lower_on: bool = False) -> Path | None:
    """Write regrade.md and regrade.csv when some student of ``records`` (the class) was regraded after a grader
    change; else remove them and return None.

    Both files describe the class as it is now: a report left from an earlier run would name students who
    have since left, or scores the gradebook no longer has.
    """
    from ppo_course.atomic_files import atomic_write_text

    regrades = collect(out_dir, records, fingerprint)
    if not regrades:
        for name in (REGRADE_MD, REGRADE_CSV):
            (Path(out_dir) / name).unlink(missing_ok=True)
        return None
    atomic_write_text(Path(out_dir) / REGRADE_CSV, regrade_csv(regrades))
    return atomic_write_text(Path(out_dir) / REGRADE_MD, regrade_markdown(regrades, fingerprint, never_lower_on))
