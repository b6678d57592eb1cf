"""Issue 19, classes 7 and 8: code similarity cannot see, and identity taken from folder names.

Class 7 (a97): the solution stored zlib-compressed in a data file and executed from a one-line
module ran in full (10/10) and showed 0 % similarity. Its honest twin hands in the same code as
plain source. ``similarity`` must flag the attacker for review with the reason (exec, zlib, a
file read), and must not flag the twin or the student it copied for that.

Class 8 (a98): a classmate named ``alice_2`` made alice's own submission vanish under
``--latest-only``. With the TA's roster, alice and alice_2 are two students, both graded,
alice's score is what alice alone gets (the solution, full marks), and bob's two attempt
folders (listed by the roster) give one row ``bob`` graded from his latest. Three reruns give
the same gradebook.
"""

from __future__ import annotations

import csv
import os
import shutil
import zlib

import pytest

from hostile_helpers import SOLUTIONS, TWINS

pytestmark = pytest.mark.xdist_group("hostile")

LOADER = ("import pathlib, zlib\n"
          "exec(zlib.decompress((pathlib.Path(__file__).parent / 'notes.dat').read_bytes()))\n")


def _write(folder, files: dict[str, bytes | str]):
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def test_a97_code_loaded_from_data_is_flagged_for_review_and_its_twin_is_not(tmp_path):
    from grader.reports.similarity import run_similarity

    solution = (SOLUTIONS / "ex1_ratio.py").read_text()
    subs = tmp_path / "subs"
    _write(subs / "origin", {"ex1_ratio.py": solution})
    _write(subs / "twin", {"ex1_ratio.py": solution})  # the honest twin: the same copy, in plain sight
    _write(subs / "mallory", {"ex1_ratio.py": LOADER, "notes.dat": zlib.compress(solution.encode())})
    _write(subs / "honest", {"ex1_ratio.py": (TWINS / "ex1_unstable.py").read_text()})
    report = run_similarity(subs, tmp_path / "out")
    flagged_for_review = {f.owner for f in report.review}
    assert flagged_for_review == {"mallory"}
    reasons = " | ".join(f.reason for f in report.review)
    assert "exec()" in reasons and "zlib" in reasons and ".read_bytes()" in reasons
    assert any({p.a.owner, p.b.owner} == {"origin", "twin"} for p in report.flagged)  # the plain copy is seen
    with open(tmp_path / "out" / "flagged_for_review.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["student_id"] for r in rows} == {"mallory"} and all(r["file"] == "ex1_ratio.py" for r in rows)
    assert "Flagged for review" in (tmp_path / "out" / "similarity.html").read_text()


@pytest.mark.parametrize("name, data", [
    ("ex1_ratio.pyc", b"\x00" * 16),                 # a sourceless import: Python runs it, similarity cannot read it
    ("helper.py", "f = getattr(__builtins__, 'ex' 'ec')\n"),
    ("helper.py", "import marshal\n"),
    ("helper.py", "def ok(:\n"),                     # does not parse: cannot be compared
])
def test_a97_other_ways_to_hide_code_are_flagged(tmp_path, name, data):
    from grader.reports.code_loading import scan_submission

    _write(tmp_path / "s", {name: data})
    assert scan_submission(tmp_path / "s", "s"), name


def test_a97_the_stubs_and_the_solutions_are_clean():
    """The honest side of the rule: none of the course's own modules would be flagged."""
    from grader.reports.code_loading import scan_source

    repo = SOLUTIONS.parent
    for folder in ("solutions", "exercises"):
        for path in sorted((repo / folder).glob("*.py")):
            assert scan_source(path.read_text()) == [], path


@pytest.mark.slow
def test_a98_a_classmate_named_like_an_attempt_drops_nobody(cohort_root, monkeypatch):
    from grader import batch
    from grader.intake.attempts import AttemptRule
    from grader.reports.export import export_batch
    from lms.roster import read_roster

    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "pinned")
    subs, out = cohort_root / "submissions", cohort_root / "out"
    solution, twin = (SOLUTIONS / "ex1_ratio.py").read_text(), (TWINS / "ex1_unstable.py").read_text()
    _write(subs / "alice", {"ex1_ratio.py": solution})
    _write(subs / "alice_2", {"ex1_ratio.py": twin})   # a classmate, not alice's second attempt
    _write(subs / "bob", {"ex1_ratio.py": solution})    # bob's first attempt ...
    _write(subs / "bob_v2", {"ex1_ratio.py": twin})     # ... and his latest
    for path in [subs, *subs.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    roster_csv = cohort_root / "roster.csv"
    roster_csv.write_text("student_id,sis_user_id,attempts\nalice,S1,\nalice_2,S2,\nbob,S3,bob;bob_v2\n")
    rule = AttemptRule(roster=read_roster(roster_csv))
    books = []
    for _ in range(3):
        # the full profile: `export` refuses a fast-profile batch (a preview); on ex1 alone they grade alike
        batch.run_batch(subs, out, jobs=1, profile="full", exercises=["ex1_ratio"], progress=False, report=False,
                        log=lambda m: None, latest_only=True, attempt_rule=rule)
        books.append((out / "gradebook.csv").read_text())
    assert books[0] == books[1] == books[2]
    rows = {r["student_id"]: r for r in csv.DictReader(books[0].splitlines())}
    assert set(rows) == {"alice", "alice_2", "bob"}
    assert float(rows["alice"]["total"]) == float(rows["alice"]["max_total"]) > 0  # alice's own: the solution
    assert float(rows["alice_2"]["total"]) < float(rows["alice_2"]["max_total"])  # the classmate's own (twin)
    assert rows["bob"]["total"] == rows["alice_2"]["total"]  # bob graded from bob_v2 (the twin), his latest
    assert "bob" in (out / "attempts.md").read_text() and "left out" in (out / "attempts.md").read_text()
    done = export_batch(out, "canvas", cohort_root / "canvas.csv", roster=roster_csv)
    assert done.left_out == []
    canvas_ids = {r[2] for r in csv.reader(open(cohort_root / "canvas.csv", newline=""))}
    assert {"S1", "S2", "S3"} <= canvas_ids
    shutil.rmtree(out)
