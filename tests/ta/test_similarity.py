"""``ppo-course similarity``: a disguised copy is flagged, two honest implementations of the book's formulas are not.

The plagiarised pair: ``solutions/ex4_gae.py`` and the same file with every identifier renamed,
the functions in reverse order and the comments replaced (``similarity_calibration.disguise``).
The honest pair: ``ppo_reference/gae.py`` + ``masked.py`` (written independently of the
solutions, ARCHITECTURE.md) and ``solutions/ex4_gae.py``: both type in GAE (Book §5.5) and
the masked whitening, nothing else in common.
"""

from __future__ import annotations

import csv
import zipfile
from pathlib import Path

import pytest

from ta_support import ROOT, write_student
from grader.intake.attempts import AttemptRule
from lms.roster import read_roster
from grader.reports.similarity import run_similarity
from similarity_calibration import disguise

SOLUTION_GAE = (ROOT / "solutions" / "ex4_gae.py").read_text()
REFERENCE_GAE = (ROOT / "ppo_reference" / "gae.py").read_text() + "\n\n" + (ROOT / "ppo_reference" / "masked.py").read_text()
STUB_GAE = (ROOT / "exercises" / "ex4_gae.py").read_text()


@pytest.fixture(scope="module")
def class_report(tmp_path_factory):
    """A class of five: a copied pair (one zipped), an honest pair, a student who handed in the stub."""
    base = tmp_path_factory.mktemp("sim")
    subs = base / "subs"
    write_student(subs, "orig", {"ex4_gae.py": SOLUTION_GAE})
    with zipfile.ZipFile(subs / "copier.zip", "w") as zf:  # zips go through the batch's intake
        zf.writestr("work/ex4_gae.py", "# </pre><script>alert(1)</script>\n" + disguise(SOLUTION_GAE))
    write_student(subs, "honest", {"ex4_gae.py": REFERENCE_GAE.replace("ppo_reference", "mine")})
    write_student(subs, "stub1", {"ex4_gae.py": STUB_GAE})
    write_student(subs, "stub2", {"ex4_gae.py": STUB_GAE, "notes.py": "=cmd|' /C calc'!A0 = 1\n"})
    report = run_similarity(subs, base / "out", stubs_dir=ROOT / "exercises")
    return report, base / "out"


def _flagged(report) -> set[frozenset[str]]:
    return {frozenset((p.a.owner, p.b.owner)) for p in report.flagged}


def test_disguised_copy_is_flagged(class_report):
    report, _ = class_report
    assert frozenset(("copier", "orig")) in _flagged(report)


def test_honest_pair_following_the_book_is_not_flagged(class_report):
    report, _ = class_report
    assert frozenset(("honest", "orig")) not in _flagged(report)
    assert frozenset(("copier", "honest")) not in _flagged(report)


def test_untouched_stubs_are_boilerplate(class_report):
    report, _ = class_report
    stub_pair = next(p for p in report.pairs if {p.a.owner, p.b.owner} == {"stub1", "stub2"} and p.a.module == "ex4_gae")
    assert stub_pair.overlap_tokens == 0 and not stub_pair.flagged


def test_csv_lists_exactly_the_flagged_pairs_and_html_escapes_code(class_report):
    report, out = class_report
    with open(out / "flagged_pairs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {frozenset((r["student_a"], r["student_b"])) for r in rows} == _flagged(report)
    assert all(r["flagged"] == "yes" and float(r["similarity_a"]) >= 0 for r in rows)
    html = (out / "similarity.html").read_text()
    assert "copier" in html and "<mark>" in html
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # student text is escaped


def test_archive_and_reference_impl_are_compared(tmp_path):
    subs, archive, refs = tmp_path / "subs", tmp_path / "2024", tmp_path / "refs"
    write_student(subs, "new", {"ex4_gae.py": disguise(SOLUTION_GAE)})
    write_student(subs, "other", {"ex4_gae.py": STUB_GAE})
    write_student(archive, "old", {"ex4_gae.py": SOLUTION_GAE})
    refs.mkdir()
    (refs / "public_gae.py").write_text(SOLUTION_GAE)
    report = run_similarity(subs, tmp_path / "out", archives=[archive], references=[refs], stubs_dir=ROOT / "exercises")
    assert _flagged(report) == {frozenset(("new", "archive:2024/old")), frozenset(("new", "reference:public_gae.py"))}
    assert report.n_students == 2


def test_cli_runs_and_rejects_a_missing_folder(tmp_path, capsys):
    from ppo_course.cli import main

    subs = tmp_path / "subs"
    write_student(subs, "a", {"ex4_gae.py": SOLUTION_GAE})
    write_student(subs, "b", {"ex4_gae.py": disguise(SOLUTION_GAE)})
    assert main(["similarity", str(subs), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "1 flagged" in out and "1 module pairs compared (a pair = one module of two owners" in out
    assert "the first" not in out  # every flagged pair is shown: nothing to say about a cut
    assert main(["similarity", str(tmp_path / "nope"), "--out", str(tmp_path / "out")]) == 2


def test_cli_says_when_it_shows_only_the_first_flagged_pairs(tmp_path, capsys, monkeypatch):
    """Issue 21 item 7: the terminal listed the first 20 pairs without saying so. Three copies: 3 flagged pairs."""
    from grader.commands import similarity as command
    from ppo_course.cli import main

    monkeypatch.setattr(command, "SHOWN", 2)
    subs = tmp_path / "subs"
    for sid in ("a", "b", "c"):
        write_student(subs, sid, {"ex4_gae.py": SOLUTION_GAE})
    assert main(["similarity", str(subs), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "3 flagged" in out and "the first 2 of 3; all in flagged_pairs.csv" in out
    assert len([line for line in out.splitlines() if line.startswith("  ")]) == 2


@pytest.mark.slow
def test_default_thresholds_separate_honest_from_copied_pairs():
    """The calibration of docs/ta_guide.md §8 at the default thresholds (similarity_calibration.py).

    Every copied pair flagged; no honest pair flagged but reference vs solutions ex5, which share
    their error messages word for word (the one the guide names), and ex5 catalogue entries that
    subclass the solution's buffer (the same text again); the highest other honest share
    stays below the threshold and the lowest copied share above it.
    """
    from grader.reports.similarity import SimilarityConfig
    from similarity_calibration import measure

    config = SimilarityConfig()
    m = measure(config)
    assert len(m["honest"]) >= 100 and len(m["copied"]) >= 600
    assert all(p.flagged for _, p in m["copied"])
    flagged = [label for label, p in m["honest"] if p.flagged]
    assert "reference vs solutions ex5_rollout_buffer" in flagged
    # The only others: ex5 catalogue entries built on the solution's buffer (they inherit its add() and
    # its error messages, which the reference shares word for word): copies of that one text.
    # Two pairs of the team's own correct entries share most of their text on purpose: the documented
    # ValueError checks added to both ex1 entries word for word, and TRL's batched-forward ex7 written from the
    # running-sums one (the same stub scaffolding, one loop changed). Named here, so a new pair still fails.
    team_pairs = {"catalogue correct/ex1_ratio__negative_cross_entropy vs correct/ex1_ratio__onehot_float64",
                  "catalogue correct/ex7_ppo_step__counter_and_running_sums vs correct/ex7_ppo_step__trl_batched_forward"}
    assert all("ex5_rollout_buffer" in label or label in team_pairs for label in flagged), flagged
    others = [p.score for label, p in m["honest"] if not p.flagged]
    assert max(others) < config.threshold < min(p.score for _, p in m["copied"])


def test_a_module_that_does_not_parse_is_compared_and_its_review_note_says_so(tmp_path):
    """A syntax error is flagged for review (what it runs cannot be read), but its text is still fingerprinted.

    Found trying the TA guide as a new user: the review reason said "not compared" while
    all_pairs.csv compared (and flagged) the same module against its copy.
    """
    broken = SOLUTION_GAE.replace("def whiten(", "def whiten(:", 1)  # one stray colon: a SyntaxError
    assert broken != SOLUTION_GAE
    subs = tmp_path / "subs"
    write_student(subs, "orig", {"ex4_gae.py": SOLUTION_GAE})
    write_student(subs, "typo", {"ex4_gae.py": broken})
    report = run_similarity(subs, tmp_path / "out", stubs_dir=ROOT / "exercises")
    assert frozenset(("orig", "typo")) in _flagged(report)  # the same file but one character: compared
    [note] = [f for f in report.review if f.owner == "typo"]
    assert "does not parse" in note.reason and "not compared" not in note.reason
    assert "still compared" in note.reason
def test_a_resubmission_is_not_its_own_copy_under_grade_batchs_attempt_rule(tmp_path, capsys):
    """Issue 21: ``yan ~ yan_2`` (100%) was flagged. With ``--roster`` / ``--attempts`` (grade-batch's rule) only
    each student's latest attempt is compared, under the student id; a copy by a classmate is still flagged."""
    from ppo_course.cli import main

    subs = tmp_path / "subs"
    write_student(subs, "yan", {"ex4_gae.py": SOLUTION_GAE})
    write_student(subs, "yan_2", {"ex4_gae.py": SOLUTION_GAE})  # yan's resubmission: the same file
    write_student(subs, "zoe", {"ex4_gae.py": disguise(SOLUTION_GAE)})  # a classmate's disguised copy
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,attempts\nyan,yan;yan_2\nzoe,\n", encoding="utf-8")
    plain = run_similarity(subs, tmp_path / "plain", stubs_dir=ROOT / "exercises")
    assert frozenset(("yan", "yan_2")) in _flagged(plain)  # no rule: folder names are never guessed
    by_roster = run_similarity(subs, tmp_path / "r", stubs_dir=ROOT / "exercises",
                               attempt_rule=AttemptRule(roster=read_roster(roster)))
    assert _flagged(by_roster) == {frozenset(("yan", "zoe"))} and by_roster.n_students == 2
    by_pattern = run_similarity(subs, tmp_path / "p", stubs_dir=ROOT / "exercises",
                                attempt_rule=AttemptRule(pattern=r"(?P<student>[a-z]+)(_(?P<attempt>\d+))?"))
    assert _flagged(by_pattern) == {frozenset(("yan", "zoe"))}
    assert main(["similarity", str(subs), "--out", str(tmp_path / "cli"), "--roster", str(roster)]) == 0
    out = capsys.readouterr().out
    pairs = [line.split() for line in out.splitlines() if " ~ " in line]  # "  yan ~ zoe  ex4_gae  97% / 97%"
    assert [p[:3] for p in pairs] == [["yan", "~", "zoe"]] and "1 flagged" in out
