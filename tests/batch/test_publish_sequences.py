"""Every file a TA publishes agrees, for the right student, after any sequence of TA operations (hypothesis).

Operations, drawn in any order: a plain ``grade-batch``; a student's submission changed and the batch
rerun; a grader change (another points version) with or without ``--never-lower``; a batch killed
half-way (after a student's feedback.md, or after the student's results, before its record) and
resumed; a late resubmission (a new attempt folder, graded with ``--latest-only`` under the roster's
stated rule; without a roster, the student's folder edited); a student dropped from the roster (and
their folders), one enrolled (with or without a submission), a student's folders gone. After every
step (faults injected too: the grader's side failing for a student, reported grader_error, or its worker
lost) the gradebook, nbgrader's grades.csv, each student's batch.json / results.json / feedback.md,
report.md, regrade.md, attempts.csv and the csv, Canvas and Moodle exports (with the roster's
identities and the quiz's completion records) are checked by :func:`published_files.check_class`, and
every score against the stand-in grader's rules by hand (tests/batch/stand_in_grader.py: per module
``test_value`` and ``test_grad`` of 1 point, lost on ``BUG_VALUE`` / ``BUG_GRAD``;
stand_in_points.py: ``test_value`` worth 0.5).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from grader import batch
from grader.batch import run_batch
from published_files import Expected, check_class, identity, roster_csv

from grader.points import EXERCISES as ALL_EXERCISES

EXERCISES = list(ALL_EXERCISES)  # every exercise: chapter completion is known (a subset leaves it out)
EDITED = EXERCISES[:2]  # the modules the operations edit; the others stay right
GRADERS = {"v1": "stand_in_grader:grade_submission", "points": "stand_in_points:grade_submission",
           "v2": "stand_in_v2:grade_submission"}  # v2 (tests/ta): test_value fails SNEAKY, passes BUG_VALUE
SOURCES = ["ok", "BUG_VALUE", "BUG_GRAD", "BUG_VALUE BUG_GRAD", "SNEAKY"]
TA_TESTS = Path(__file__).resolve().parents[1] / "ta"
NAMES = ["ana", "bo", "cy", "dee", "eli", "fay", "gus"]

STEPS = st.one_of(
    st.tuples(st.just("grade")),
    st.tuples(st.just("change"), st.integers(0, 4), st.integers(0, len(EDITED) - 1), st.sampled_from(SOURCES), st.booleans()),
    st.tuples(st.just("grader"), st.sampled_from(sorted(GRADERS)), st.booleans()),
    st.tuples(st.just("crash"), st.sampled_from(["feedback", "results"]), st.booleans()),
    st.tuples(st.just("late"), st.integers(0, 4), st.sampled_from(SOURCES)),
    st.tuples(st.just("drop"), st.integers(0, 4)),
    st.tuples(st.just("enrol"), st.booleans()),
    st.tuples(st.just("vanish"), st.integers(0, 4)),
    st.tuples(st.just("broken"), st.integers(0, 4), st.sampled_from(["empty", "crash"])),
    # Fault injection: the grader's side fails for one student (a module the hidden tests import missing, the
    # reference raising, a sandbox that cannot import torch: the grader reports grader_error) or its worker dies.
    st.tuples(st.just("fault"), st.integers(0, 4), st.sampled_from(["grader_error", "worker_lost"])),
)


def by_hand(source: str | None, grader: str) -> tuple[float, float]:
    """(score, max) of one module (None: missing) under the stand-in ``grader`` (module docstring)."""
    value = 0.5 if grader == "points" else 1.0
    if source is None:
        return 0.0, value + 1.0
    value_ok = "SNEAKY" not in source if grader == "v2" else "BUG_VALUE" not in source
    return value * value_ok + ("BUG_GRAD" not in source), value + 1.0


def status_by_hand(sources: dict[str, str] | None) -> str:
    """The batch's status of a folder of ``sources`` (None: no folder): the stand-in's rules."""
    if sources is None:
        return "no-submission"
    if not sources:
        return "empty"
    faults = ("STANDIN_CRASH", "STANDIN_GRADER_ERROR")  # a worker lost; the grader's side failing (grader_error)
    return "grader_fault" if any(f in src for src in sources.values() for f in faults) else "graded"


@dataclass
class Cohort:
    """The test's model: who is on the roster, their folders (oldest first) and the source of each module."""

    base: Path
    with_roster: bool
    grader: str = "v1"
    people: dict = field(default_factory=dict)  # sid -> Identity (the roster, file order)
    folders: dict[str, list[str]] = field(default_factory=dict)  # sid -> folder names, oldest first
    sources: dict[str, dict[str, str]] = field(default_factory=dict)  # folder -> {stem: source}
    kept_earlier: set[str] = field(default_factory=set)
    quiz_done: dict[str, bool] = field(default_factory=dict)
    n: int = 0

    @property
    def subs(self) -> Path:
        return self.base / "subs"

    @property
    def out(self) -> Path:
        return self.base / "out"

    def enrol(self, sid: str, sources: list[str] | None, quiz: bool) -> None:
        """Add ``sid`` to the roster (and the class), with a submission folder of ``sources`` unless None."""
        self.n += 1
        self.people[sid] = identity(sid, self.n)
        self.quiz_done[sid] = quiz
        self.folders[sid] = []
        if sources is not None:
            self.add_folder(sid, sid, sources)

    def add_folder(self, sid: str, folder: str, sources: list[str]) -> None:
        self.folders[sid].append(folder)
        self.sources[folder] = {stem: "ok" for stem in EXERCISES} | dict(zip(EDITED, sources))
        self.write(folder)
        self.kept_earlier.discard(sid)

    def write(self, folder: str) -> None:
        path = self.subs / folder
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        (path / "README.txt").write_text("my submission\n", encoding="utf-8")
        for stem, src in self.sources[folder].items():
            (path / f"{stem}.py").write_text(src + "\n", encoding="utf-8")

    def files(self) -> None:
        """The roster and the quiz's completion records (``quiz grade-batch``'s CSV) as the model says."""
        attempts = {sid: f for sid, f in self.folders.items()} if self.with_roster else None
        (self.base / "roster.csv").write_text(roster_csv(list(self.people.values()), attempts), encoding="utf-8")
        lines = ["student_id,complete,status"] + [f"{sid},{done},graded" for sid, done in self.quiz_done.items()]
        (self.base / "quiz.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def expected(self, fingerprint: str) -> Expected:
        present = {sid for sid, f in self.folders.items() if f}
        students = set(self.people) if self.with_roster else present
        hand, status = {}, {}
        for sid in students:
            src = self.sources[self.folders[sid][-1]] if self.folders[sid] else None
            status[sid] = status_by_hand(src)
            if status[sid] != "graded":
                hand[sid] = None
                continue
            pairs = {stem: by_hand(src.get(stem), self.grader) for stem in EXERCISES}
            hand[sid] = ({s: p[0] for s, p in pairs.items()}, {s: p[1] for s, p in pairs.items()})
        graded_from = ({sid: f[-1] for sid, f in self.folders.items() if f} if self.with_roster else {})
        kept = set(self.kept_earlier) & students
        return Expected(students, dict(self.people), dict(self.quiz_done), self.grader, hand, kept, graded_from,
                        {sid: st for sid, st in status.items() if sid not in kept})


class _Killed(KeyboardInterrupt):
    """The batch dies here (Ctrl-C; a kill -9 leaves the same files: every write is atomic)."""


def _batch(cohort: Cohort, **kw) -> None:
    from grader.intake.attempts import AttemptRule
    from lms.roster import read_roster

    cohort.files()
    rule = AttemptRule(roster=read_roster(cohort.base / "roster.csv")) if cohort.with_roster else None
    run_batch(cohort.subs, cohort.out, jobs=1, progress=False, log=lambda m: None,
              formats=("nbgrader",), latest_only=cohort.with_roster, attempt_rule=rule, **kw)


def _crash(cohort: Cohort, monkeypatch, where: str, never_lower: bool) -> None:
    """A forced rerun killed at the first student: after its feedback.md (``feedback``) or after its results."""
    import grader.records.publish as publish_module

    # "feedback": killed as results.json is written; "results": killed as batch.json (the record) is written.
    target, name = (publish_module, "atomic_write_json") if where == "feedback" else (publish_module, "write_record")
    real = getattr(target, name)

    def then_die(*args, **kwargs):
        raise _Killed

    monkeypatch.setattr(target, name, then_die)
    try:
        with pytest.raises(KeyboardInterrupt):
            _batch(cohort, force=True, never_lower=never_lower, report=False)
    finally:
        monkeypatch.setattr(target, name, real)


def _exports(cohort: Cohort) -> dict[str, Path]:
    """The three exports; a batch with a grader fault is refused first, then written with --allow-grader-faults."""
    import json

    from ppo_course.cli import main

    faulted = any(json.loads(p.read_text())["status"] == "grader_fault" for p in cohort.out.glob("*/batch.json"))
    paths = {}
    for fmt in ("csv", "canvas", "moodle"):
        paths[fmt] = cohort.base / f"export.{fmt}.csv"
        paths[fmt].unlink(missing_ok=True)
        argv = ["export", str(cohort.out), "--format", fmt, "--out", str(paths[fmt]), "--roster",
                str(cohort.base / "roster.csv"), "--quiz-results", str(cohort.base / "quiz.csv"), "--strict"]
        with redirect_stderr(StringIO()), redirect_stdout(StringIO()):
            rc = main(argv)
            if faulted:
                assert rc == 1 and not paths[fmt].exists(), fmt  # refused: nothing written
                rc = main([*argv, "--allow-grader-faults"])
        assert rc == 0, fmt
    return paths


def _step(cohort: Cohort, step: tuple, n: int, monkeypatch, stand_in) -> dict:
    """Apply one TA operation to the cohort's folders and roster; the keyword arguments of the batch to run."""
    kind = step[0]
    on_roster = list(cohort.people)
    pick = (lambda i: on_roster[i % len(on_roster)]) if on_roster else (lambda i: None)
    # A class is never empty (export refuses a folder with no student record): someone else keeps a folder.
    others = lambda sid: any(f for s, f in cohort.folders.items() if s != sid)  # noqa: E731
    if kind == "change" and (sid := pick(step[1])) and cohort.folders[sid]:
        folder = cohort.folders[sid][-1]
        cohort.sources[folder][EDITED[step[2]]] = f"{step[3]} # edit {n}"
        cohort.write(folder)
        return {"never_lower": step[4]}
    if kind == "grader":
        cohort.grader = step[1]
        stand_in(GRADERS[cohort.grader])
        monkeypatch.setattr(batch, "grader_fingerprint", lambda g=cohort.grader: g)
        return {"never_lower": step[2]}
    if kind == "late" and (sid := pick(step[1])):
        sources = [f"{step[2]} # late {n}", f"ok # late {n}"]
        if cohort.with_roster:
            cohort.add_folder(sid, f"{sid}_late{n}", sources)
        elif cohort.folders[sid]:
            cohort.sources[cohort.folders[sid][-1]] = {stem: "ok" for stem in EXERCISES} | dict(zip(EDITED, sources))
            cohort.write(cohort.folders[sid][-1])
    elif kind == "drop" and (sid := pick(step[1])) and len(on_roster) > 1 and others(sid):
        for folder in cohort.folders.pop(sid):
            shutil.rmtree(cohort.subs / folder)
        del cohort.people[sid], cohort.quiz_done[sid]
        cohort.kept_earlier.discard(sid)
    elif kind == "enrol" and (free := NAMES[cohort.n:]):  # a new id (a dropped student's return is not modelled)
        cohort.enrol(free[0], ["ok", f"BUG_GRAD # {n}"] if step[1] else None, quiz=step[1])
    elif kind == "broken" and (sid := pick(step[1])) and cohort.folders[sid]:
        folder = cohort.folders[sid][-1]  # the latest submission: no Python file, or one that crashes its grading
        cohort.sources[folder] = {} if step[2] == "empty" else cohort.sources[folder] | {"ex3_full_loss": "STANDIN_CRASH"}
        cohort.write(folder)
    elif kind == "fault" and (sid := pick(step[1])) and cohort.folders[sid]:
        folder = cohort.folders[sid][-1]
        marker = "STANDIN_GRADER_ERROR" if step[2] == "grader_error" else "STANDIN_CRASH"
        cohort.sources[folder] = cohort.sources[folder] | {"ex5_rollout_buffer": f"{marker} # {n}"}
        cohort.write(folder)
    elif kind == "vanish" and (sid := pick(step[1])) and cohort.folders[sid] and others(sid):
        for folder in cohort.folders[sid]:
            shutil.rmtree(cohort.subs / folder)
        cohort.folders[sid] = []
        if cohort.with_roster and (cohort.out / sid / "batch.json").is_file():
            import json

            if json.loads((cohort.out / sid / "batch.json").read_text())["status"] != "no-submission":
                cohort.kept_earlier.add(sid)  # grader.batch_run.write_no_submission keeps the grade
    return {}


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("PUBLISH_SEQUENCE_EXAMPLES", "4")), deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])  # no shrinking: each example runs several batches
@given(with_roster=st.booleans(), first=st.lists(st.sampled_from(SOURCES), min_size=6, max_size=6),
       quiz=st.lists(st.booleans(), min_size=3, max_size=3), steps=st.lists(STEPS, min_size=1, max_size=5))
def test_published_files_agree_after_any_sequence_of_ta_operations(with_roster, first, quiz, steps, monkeypatch,
                                                                   stand_in):
    if str(TA_TESTS) not in os.environ["PYTHONPATH"].split(os.pathsep):  # stand_in_v2's folder, for the workers
        monkeypatch.setenv("PYTHONPATH", f"{os.environ['PYTHONPATH']}{os.pathsep}{TA_TESTS}")
    with tempfile.TemporaryDirectory() as tmp:
        cohort = Cohort(Path(tmp), with_roster)
        for i, sid in enumerate(NAMES[:3]):
            cohort.enrol(sid, first[2 * i:2 * i + 2], quiz[i])
        stand_in(GRADERS["v1"])
        monkeypatch.setattr(batch, "grader_fingerprint", lambda: "v1")
        _batch(cohort)
        check_class(cohort.out, _exports(cohort), cohort.expected(cohort.grader))
        for n, step in enumerate(steps):
            if step[0] == "crash":
                _crash(cohort, monkeypatch, step[1], step[2])
                whole = list(cohort.out.glob("*/batch.json"))  # (export refuses a batch with no record left)
                check_class(cohort.out, _exports(cohort) if whole else {}, cohort.expected(cohort.grader),
                            finished=False)
                _batch(cohort, never_lower=step[2])  # the TA reruns the same command: it resumes
            else:
                _batch(cohort, **_step(cohort, step, n, monkeypatch, stand_in))
            check_class(cohort.out, _exports(cohort), cohort.expected(cohort.grader))


def test_a_killed_batch_keeps_roster_students_without_a_folder_in_its_gradebook(tmp_path, monkeypatch, stand_in):
    """Found by the property test above: dee is on the roster with no folder (no-submission), cy's folder is gone
    (her graded record is kept). A forced rerun killed at its first student wrote a gradebook without them,
    though their batch.json files (which the export reads) are there: gradebook and export disagreed."""
    cohort = Cohort(tmp_path, with_roster=True)
    for sid, sources in (("ana", ["ok", "ok"]), ("bo", ["BUG_VALUE", "ok"]), ("cy", ["ok", "BUG_GRAD"]),
                         ("dee", None)):
        cohort.enrol(sid, sources, quiz=True)
    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "v1")
    _batch(cohort)
    shutil.rmtree(cohort.subs / "cy")
    cohort.folders["cy"], cohort.kept_earlier = [], {"cy"}
    _crash(cohort, monkeypatch, "results", False)
    check_class(cohort.out, {}, cohort.expected("v1"), finished=False)
    rows = (cohort.out / "gradebook.csv").read_text().splitlines()[1:]
    assert {"cy", "dee"} <= {r.split(",")[0] for r in rows}  # (ana was killed mid-grading: no record, no row)
    _batch(cohort)
    check_class(cohort.out, _exports(cohort), cohort.expected("v1"))


def test_regrade_md_never_names_students_who_left_or_scores_that_are_gone(tmp_path, monkeypatch, stand_in):
    """A grader change regrades ana and bo (regrade.md lists them); cy enrols under the new grader, then ana and bo
    leave the course. No student of the class was regraded now: regrade.md (and regrade.csv) must not still name
    ana and bo with scores the gradebook no longer has."""
    cohort = Cohort(tmp_path, with_roster=False)
    for sid, sources in (("ana", ["ok", "ok"]), ("bo", ["BUG_VALUE", "ok"])):
        cohort.enrol(sid, sources, quiz=True)
    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "v1")
    _batch(cohort)
    _batch(cohort, **_step(cohort, ("grader", "points", False), 1, monkeypatch, stand_in))
    assert "### ana: 14 → 10.5" in (cohort.out / "regrade.md").read_text()
    _batch(cohort, **_step(cohort, ("enrol", True), 2, monkeypatch, stand_in))
    for sid in ("ana", "bo"):
        _batch(cohort, **_step(cohort, ("drop", 0), 3, monkeypatch, stand_in))
    assert sorted(cohort.people) == ["cy"]
    check_class(cohort.out, _exports(cohort), cohort.expected("points"))


def test_a_report_drawing_that_dies_leaves_the_old_pngs_whole_and_no_litter(tmp_path, monkeypatch):
    """report.png and report_tests.png go through the one atomic writer: a savefig that dies half-way (disk full, a
    kill) leaves the previous images as they were and no temporary file (before: '.report.png.tmp.png', a name
    the batch's sweep of stale temporaries does not match, stayed forever)."""
    from matplotlib.figure import Figure

    from grader.reports.analytics import TestStats, plot_heatmap
    from grader.reports.report import ClassSummary, plot_report

    summary = ClassSummary(n_students=1, status_counts={"graded": 1}, max_total=2.0, totals=[1.0],
                           exercise_max={"ex1_ratio": 2.0}, exercise_scores={"ex1_ratio": [1.0]})
    stats = [TestStats(exercise="ex1_ratio", test="test_value", n=2, pass_rate=0.5, mean_credit=0.5, top_diagnosis=None)]
    (tmp_path / "report.png").write_bytes(b"old report")
    (tmp_path / "report_tests.png").write_bytes(b"old heat map")

    def dies(self, fname, *args, **kwargs):
        Path(fname).write_bytes(b"\x89PNG half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", dies)
    with pytest.raises(OSError):
        plot_report(summary, tmp_path / "report.png")
    with pytest.raises(OSError):
        plot_heatmap(stats, tmp_path / "report_tests.png")
    assert (tmp_path / "report.png").read_bytes() == b"old report"
    assert (tmp_path / "report_tests.png").read_bytes() == b"old heat map"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.png", "report_tests.png"]


def test_attempts_csv_of_an_earlier_run_never_contradicts_the_gradebook(tmp_path, monkeypatch, stand_in):
    """With the roster's rule, ana_late1 is graded as ana (attempts.csv: 'ana_late1, ana, yes'). The TA then grades
    the same folder without a rule: every folder is its own student (rows ana and ana_late1), so an attempts.csv
    still saying ana_late1 was graded as ana contradicts the gradebook; it must go."""
    cohort = Cohort(tmp_path, with_roster=True)
    cohort.enrol("ana", ["ok", "ok"], quiz=True)
    cohort.enrol("bo", ["BUG_GRAD", "ok"], quiz=True)
    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "v1")
    _batch(cohort, **_step(cohort, ("late", 0, "BUG_VALUE"), 1, monkeypatch, stand_in))
    assert "ana_late1,ana,yes" in (cohort.out / "attempts.csv").read_text()
    check_class(cohort.out, _exports(cohort), cohort.expected("v1"))
    cohort.with_roster = False
    _batch(cohort)
    rows = [r.split(",")[0] for r in (cohort.out / "gradebook.csv").read_text().splitlines()[1:]]
    assert rows == ["ana", "ana_late1", "bo"]
    assert not (cohort.out / "attempts.csv").exists() and not (cohort.out / "attempts.md").exists()


def test_every_file_gives_a_student_one_status_and_the_quiz_reads_the_same_completion(tmp_path, monkeypatch,
                                                                                   stand_in):
    """bo's folder holds no Python file (status empty), cy's grading crashes (the stand-in's STANDIN_CRASH kills
    the worker). The gradebook, batch.json, results.json (``extra_data.status`` and ``batch_status``, the field
    Gradescope's results carry) and feedback.md must all give each the same status; before, bo's results.json
    said ``status: rejected`` (the grader's word for an unreadable submission) beside the gradebook's empty, and
    the batch's results.json had no batch_status where Gradescope's has one. The quiz's chapter completion,
    read from results.json (quiz_bank.grading.exercises_from_results), agrees with the export's."""
    from quiz_bank.grading import exercises_from_results

    cohort = Cohort(tmp_path, with_roster=False)
    cohort.enrol("ana", ["ok", "ok"], quiz=True)
    cohort.enrol("bo", ["ok", "ok"], quiz=True)
    cohort.enrol("cy", ["ok", "ok"], quiz=True)
    for stem in EXERCISES:
        (cohort.subs / "bo" / f"{stem}.py").unlink()
    (cohort.subs / "bo" / "README.txt").write_text("forgot the code\n")
    (cohort.subs / "cy" / "ex3_full_loss.py").write_text("STANDIN_CRASH\n")
    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "v1")
    _batch(cohort)
    paths = _exports(cohort)
    rows = {r[0]: r for r in __import__("csv").reader((cohort.out / "gradebook.csv").open())}
    status = {sid: rows[sid][-2] for sid in ("ana", "bo", "cy")}
    assert status == {"ana": "graded", "bo": "empty", "cy": "grader_fault"}
    for sid, want in status.items():
        extra = __import__("json").loads((cohort.out / sid / "results.json").read_text())["extra_data"]
        assert (extra.get("status"), extra.get("batch_status")) == (want, want), (sid, extra)
    complete = {r["student_id"]: r["chapter_complete"] for r in __import__("csv").DictReader(paths["csv"].open())}
    for sid in ("ana", "bo"):  # (cy's results.json holds no score: the grader failed)
        quiz = exercises_from_results(cohort.out / sid / "results.json")["full_marks"]
        assert complete[sid] == str(int(quiz)), (sid, complete[sid], quiz)
    assert complete == {"ana": "1", "bo": "0", "cy": ""}
