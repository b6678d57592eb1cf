"""Hostile layouts of a submission against the one intake (issue 10, "Also"; red-team round after issue 10).

The intake (`grader.intake.submission`) is shared by every path (`grade`, `grade-batch`,
the Gradescope runner, nbgrader's autograde), so these checks go through
`stage_submission` and `grade_submission`. Each layout below crashed the
intake with an OS error before it was fixed (`grade` died with a traceback and
wrote no results.json; the batch reported "crashed" with the grader's own
staging path in the gradebook):

* a zip holding both a file and a folder of the same name (`ex1_ratio.py`
  and `ex1_ratio.py/y.py`);
* a zip entry whose folder name is longer than a file name may be (300 bytes),
  and one whose path is longer than a path may be (60 000 bytes);
* a folder named like a Python file (`notes.py/`) in a zip or a folder: the
  NUL-byte scan read it as a file.

Asserted: a clear verdict (rejected, or graded as its honest twin when the
layout is harmless), never an exception; no text of the grader's own paths
in the verdict; the message capped; the same verdict on three reruns; nothing
left in the staging folders.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from hostile_helpers import MARKER, SOLUTIONS

pytestmark = pytest.mark.xdist_group("confine")  # no shared guards: may run beside the attacks

HONEST = (SOLUTIONS / "ex1_ratio.py").read_text()


def _zip(path: Path, extra: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("ex1_ratio.py", HONEST)
        for name, text in extra.items():
            zf.writestr(name, text)
    return path


UNREADABLE = {
    "file_and_folder": {"ex1_ratio.py/y.py": "x = 1\n"},
    "long_folder_name": {f"{MARKER}{'a' * 300}/x.txt": "x\n"},
    "long_path": {"=a/" * 20_000 + "x.txt": "x\n"},
}


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_an_unpackable_zip_is_rejected_not_a_crash(case, tmp_path):
    from ppo_course.submission_layout import entry_for
    from ppo_course.submission_rules import Rejected, SubmissionLimits, stage_submission

    bundle = _zip(tmp_path / f"{MARKER}.zip", UNREADABLE[case])
    messages = set()
    for run in range(3):
        with pytest.raises(Rejected) as caught:
            stage_submission(entry_for(bundle), tmp_path / f"staging{run}", SubmissionLimits())
        messages.add(str(caught.value))
    (message,) = messages  # the same verdict on three reruns
    assert "cannot be unpacked" in message
    assert str(tmp_path) not in message, "the verdict shows the grader's own staging path"
    assert len(message) < 8_000


@pytest.mark.slow
def test_an_unpackable_zip_gets_a_verdict_from_grade(tmp_path):
    from grader.grade import grade_submission

    bundle = _zip(tmp_path / f"{MARKER}.zip", UNREADABLE["file_and_folder"])
    result = grade_submission(bundle, exercises=["ex1_ratio"], profile="fast")
    assert (result.status, result.score) == ("rejected", 0)
    assert "cannot be unpacked" in result.message and "ppo-intake-" not in result.message
    assert not list(Path("/tmp").glob(f"ppo-intake-*/submission/ex1_ratio.py/y.py"))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["zip", "folder"])
def test_a_folder_named_like_a_python_file_is_graded_as_its_twin(kind, tmp_path):
    from grader.grade import grade_submission

    twin = tmp_path / "twin"
    twin.mkdir()
    (twin / "ex1_ratio.py").write_text(HONEST)
    if kind == "zip":
        odd = _zip(tmp_path / f"{MARKER}.zip", {"notes.py/readme.txt": "hello\n"})
    else:
        odd = tmp_path / MARKER
        (odd / "notes.py").mkdir(parents=True)
        (odd / "notes.py" / "readme.txt").write_text("hello\n")
        (odd / "ex1_ratio.py").write_text(HONEST)
    got = grade_submission(odd, exercises=["ex1_ratio"], profile="fast")
    want = grade_submission(twin, exercises=["ex1_ratio"], profile="fast")
    assert got.status == want.status == "graded", got.message
    assert got.score == want.score == want.max_score
