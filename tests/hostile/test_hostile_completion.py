"""A chapter completed on a partial or preview grading (red-team attack a104).

With ``require_exercises: true`` (``quiz_bank/completion.yaml``), ``ppo-course quiz grade
--results graded/<id>/results.json`` marks the chapter complete when the results.json has
"every exercise at full marks". On main it read only the exercises the file names: a
results.json of ``grade --exercises ex1_ratio`` (one exercise of seven), or of a fast-profile
preview (exercise 7's training run never graded, every maximum the fast tier's), at its
own maxima gave ``complete: true``, while the export of the same student leaves the chapter
incomplete (``grader.reports.export``: a fast preview is never complete, a partial batch
has no completion column). The published files contradicted each other, and the chapter
read as complete without exercises 2-7. Root fix: ``quiz_bank.grading.exercises_from_results``
asks for the whole assignment (every syllabus exercise, status graded, profile full, not out
of time), as the export does.

The results.json files are written by the grader's own writer (``GradeResult.to_results_json``
of ``grader.student.zero_result``, every test then given its full points).
"""

from __future__ import annotations

import json

import pytest

from ppo_course.syllabus import EXERCISES
from quiz_bank.grading import Report, exercises_from_results

ALL_STOPS = set(range(1, 9))


def _results_json(tmp_path, profile, exercises, name, **update):
    from grader.student import zero_result

    result = zero_result(profile, exercises, "graded")
    full = result.model_copy(update={"tests": [t.model_copy(update={"score": t.max_score}) for t in result.tests],
                                     "status": "graded", "message": "", **update})
    exercises_scores = {stem: e.model_copy(update={"score": e.max_score}) for stem, e in full.exercises.items()}
    data = full.model_copy(update={"exercises": exercises_scores}).to_results_json()
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _complete(path) -> bool:
    return Report("mallory", {}, exercises=exercises_from_results(path), exercises_required=True,
                  kept_passed=ALL_STOPS).complete


@pytest.mark.parametrize("profile, exercises, update, why", [
    ("full", ["ex1_ratio"], {}, "not graded: ex2_clipped_loss"),
    ("full", ["ex1_ratio", "ex4_gae"], {}, "not graded"),
    ("fast", None, {}, "profile 'fast'"),
    ("full", None, {"out_of_time": True}, "out of time"),
])
def test_a104_a_partial_or_preview_grading_completes_no_chapter(tmp_path, profile, exercises, update, why):
    path = _results_json(tmp_path, profile, exercises, "results.json", **update)
    got = exercises_from_results(path)
    assert got["below_full_marks"] == []  # every exercise the file names is at its own maximum ...
    assert not got["full_marks"] and any(why in p for p in got["problems"]), got["problems"]
    assert not _complete(path)  # ... and still no chapter


def test_a104_twin_the_whole_assignment_at_full_marks_completes_it(tmp_path):
    path = _results_json(tmp_path, "full", None, "results.json")
    got = exercises_from_results(path)
    assert set(got["scores"]) == set(EXERCISES) and got["problems"] == [] and got["full_marks"]
    assert _complete(path)
    data = json.loads(path.read_text())
    data["extra_data"]["exercises"]["ex4_gae"]["score"] = float("nan")  # NaN is never full marks
    path.write_text(json.dumps(data))
    assert not _complete(path)
