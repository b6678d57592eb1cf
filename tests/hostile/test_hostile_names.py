"""Folder names that impersonate a classmate (red-team attack a102).

`grade-batch` takes each student id from the folder's name. A folder named
"\u0430lice" (a Cyrillic a), "alice\u200b" (a zero-width space), "alice\ufeff" or
"alice\u00a0" showed in gradebook.csv, feedback and the exports exactly like
alice's own id: the TA saw two "alice" rows, one with another student's
grade. Now such a name is a problem of the entry (`grader.intake.class_list.id_problem`):
rejected with its code points named, so the TA renames it; ids that differ
only by case or width are named in a warning. Honest ids in any one script
(accents, Cyrillic, CJK with kana) are untouched.
"""

from __future__ import annotations

import csv
import shutil

import pytest

from grader.intake.class_list import discover, id_problem, look_alike_warnings
from hostile_helpers import SOLUTIONS
from hostile_guards import guarded_batch

IMPOSTORS = ["\u0430lice", "alice\u200b", "alice\ufeff", "alice\u00a0", "alice ", "\uff21lice", "al\u202eecila"]
HONEST = ["alice", "José", "Иван", "alice smith", "alice_2", "山田たろう", "김민준", "o'brien"]


@pytest.mark.parametrize("name", IMPOSTORS)
def test_a_name_that_shows_like_another_id_is_a_problem(name):
    problem = id_problem(name)
    assert problem is not None and "rename it to the student id" in problem


@pytest.mark.parametrize("name", HONEST)
def test_honest_ids_in_one_script_are_fine(name):
    assert id_problem(name) is None


def test_ids_differing_by_case_or_width_are_named_for_the_ta():
    warned = look_alike_warnings(["alice", "ALICE", "bob", "\uff42\uff4f\uff42"])
    assert len(warned) == 2 and all("differ only by case or character width" in w for w in warned)
    assert look_alike_warnings(["alice", "bob"]) == []


def test_discover_rejects_the_impostor_and_keeps_alice(tmp_path):
    for name in ["alice", "\u0430lice", "alice\u200b"]:
        (tmp_path / name).mkdir()
    entries, _ = discover(tmp_path)
    by_id = {e.student_id: e for e in entries}
    assert by_id["alice"].problem is None
    assert "CYRILLIC" in by_id["\u0430lice"].problem and "U+200B" in by_id["alice\u200b"].problem


@pytest.mark.slow
def test_a102_an_impostor_folder_in_a_real_batch(cohort_root):
    """alice (a correct ex1) beside "\u0430lice" (a copy of it): alice graded, the impostor rejected with the
    reason, exactly one gradebook row that reads "alice", three batches alike."""
    subs = cohort_root / "subs"
    for name in ("alice", "\u0430lice"):
        (subs / name).mkdir(parents=True)
        shutil.copyfile(SOLUTIONS / "ex1_ratio.py", subs / name / "ex1_ratio.py")
    books = []
    for run in range(3):
        out = cohort_root / f"out{run}"
        guarded_batch(subs, out, [subs / "alice"], ["ex1_ratio"])
        with open(out / "gradebook.csv", newline="", encoding="utf-8") as fh:
            rows = {r["student_id"]: r for r in csv.DictReader(fh)}
        books.append(rows)
        assert set(rows) == {"alice", "\u0430lice"}
        assert rows["\u0430lice"]["status"] == "rejected", rows["\u0430lice"]
        assert "mixes letters" in " ".join(rows["\u0430lice"].values())
        assert rows["alice"]["status"] == "graded" and float(rows["alice"]["total"]) > 0, rows["alice"]
    assert books[0] == books[1] == books[2]
