"""End-to-end grading (fast profile): solutions get full marks, stubs zero with "not implemented",
a missing or broken module costs only its exercise, zips work, grading is deterministic."""

from __future__ import annotations

import json
import zipfile

import pytest

from grader.grade import grade_submission
from grader.points import EXERCISES, load_points

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("grader")]


def test_solutions_get_full_marks(graded_solutions):
    """Every test of every exercise passes on solutions/ (the fast profile leaves out the training run)."""
    failed = [(t.name, t.diagnosis) for t in graded_solutions.tests if t.status == "failed"]
    assert failed == []
    assert graded_solutions.status == "graded"
    for stem in EXERCISES:
        ex = graded_solutions.exercises[stem]
        assert ex.status == "graded" and ex.score == ex.max_score > 0
    # Only the slow training run (4 points) is left out in the fast profile.
    assert graded_solutions.max_score == load_points().max_score - 4


def test_stubs_get_zero_with_not_implemented(graded_stubs):
    """The exercises/ stubs score 0 and every failure says "not implemented"."""
    assert graded_stubs.score == 0
    assert {t.diagnosis for t in graded_stubs.tests} == {"not_implemented"}
    assert all("not implemented" in t.output for t in graded_stubs.tests)


def test_hidden_feedback_shows_no_inputs_public_feedback_does(submission_copy):
    """A known mistake is named in both; only public tests show expected vs got."""
    path = submission_copy / "ex2_clipped_loss.py"
    path.write_text(path.read_text(encoding="utf-8") + '''

def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    ratio = torch.exp(logp_new - logp_old.detach())
    obj = torch.max(ratio * advantages, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantages)
    m = mask.bool()
    return -torch.where(m, obj, torch.zeros_like(obj)).sum() / m.sum()
''', encoding="utf-8")
    result = grade_submission(submission_copy, exercises=["ex2_clipped_loss"], profile="fast")
    failed = [t for t in result.tests if t.status == "failed"]
    hidden = [t for t in failed if t.kind == "hidden"]
    public = [t for t in failed if t.kind == "public"]
    assert hidden and public
    assert {t.diagnosis for t in hidden} >= {"max_instead_of_min"}
    assert all("max_instead_of_min" in t.output for t in failed if t.diagnosis == "max_instead_of_min")
    for t in hidden:
        assert "expected" not in t.output and "input" not in t.output and "tensor(" not in t.output
    assert any("expected:" in t.output and "got:" in t.output for t in public)
    assert 0 < result.score < result.max_score


def test_missing_and_broken_modules_cost_only_their_exercise(submission_copy):
    """ex3 absent (saved as .txt) -> ex3 scores 0 (missing, the .txt named); ex4 with a syntax error -> 0 (broken,
    the error shown); ex1 intact."""
    (submission_copy / "ex3_full_loss.py").rename(submission_copy / "ex3_full_loss.txt")
    (submission_copy / "ex3_full_loss_notes.py").write_text("x = 1\n", encoding="utf-8")  # a helper, not a near miss
    (submission_copy / "ex4_gae.py").write_text("def compute_gae(:\n    pass\n", encoding="utf-8")
    result = grade_submission(submission_copy, exercises=["ex1_ratio", "ex3_full_loss", "ex4_gae"], profile="fast")
    ex = result.exercises
    assert ex["ex1_ratio"].score == ex["ex1_ratio"].max_score == 10
    assert (ex["ex3_full_loss"].status, ex["ex3_full_loss"].score, ex["ex3_full_loss"].max_score) == ("missing", 0, 10)
    assert "it holds 'ex3_full_loss.txt'." in ex["ex3_full_loss"].message
    assert "notes" not in ex["ex3_full_loss"].message
    assert (ex["ex4_gae"].status, ex["ex4_gae"].score) == ("broken", 0)
    assert "SyntaxError" in ex["ex4_gae"].message
    assert {t.diagnosis for t in result.tests if t.exercise == "ex3_full_loss"} == {"module_missing"}
    assert {t.diagnosis for t in result.tests if t.exercise == "ex4_gae"} == {"module_broken"}
    assert "ex4_gae" in result.feedback_markdown() and "SyntaxError" in result.feedback_markdown()


def test_zip_submission_under_one_top_folder(tmp_path, submission_copy):
    """A .zip whose modules sit under one top folder (plus macOS junk) grades like the folder."""
    archive = tmp_path / "alice.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for f in submission_copy.glob("*.py"):
            zf.write(f, f"alice/{f.name}")
        zf.writestr("__MACOSX/._ex1_ratio.py", b"junk")
    from_zip = grade_submission(archive, exercises=["ex1_ratio", "ex6_kl_reward"], profile="fast")
    from_dir = grade_submission(submission_copy, exercises=["ex1_ratio", "ex6_kl_reward"], profile="fast")
    assert from_zip.status == "graded"
    assert from_zip.score == from_dir.score == 20


def test_empty_and_unreadable_submissions(tmp_path):
    """Empty folder: graded 0 with a message. Corrupt zip, missing path, escaping zip: rejected, 0, a reason."""
    empty = tmp_path / "empty"
    empty.mkdir()
    result = grade_submission(empty, exercises=["ex1_ratio"])
    assert (result.status, result.score) == ("graded", 0)
    assert "no Python module" in result.message
    corrupt = tmp_path / "bob.zip"
    corrupt.write_bytes(b"PK\x03\x04 this is not a zip")
    evil = tmp_path / "eve.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../../escaped.py", "x = 1\n")
    # The words of the one intake (grader/intake/submission.py), the same on every path.
    for path, why in ((corrupt, "not a readable zip"), (tmp_path / "nope", "does not exist"), (evil, "escapes")):
        result = grade_submission(path, exercises=["ex1_ratio"])
        assert (result.status, result.score) == ("rejected", 0), path
        assert why in result.message
        assert result.to_results_json()["extra_data"]["status"] == "rejected"
    assert not (tmp_path.parent / "escaped.py").exists()


def test_grading_is_deterministic(submission_copy):
    """Grading the same submission twice gives identical results.json (timing aside)."""
    path = submission_copy / "ex4_gae.py"  # a mistake, so that diagnoses are part of the comparison
    path.write_text(path.read_text(encoding="utf-8").replace("shift_mean: bool = True", "shift_mean: bool = False"),
                    encoding="utf-8")
    runs = []
    for _ in range(2):
        data = grade_submission(submission_copy, exercises=["ex2_clipped_loss", "ex4_gae"], profile="fast").to_results_json()
        data["extra_data"].pop("timing")
        runs.append(json.dumps(data, sort_keys=True))
    assert runs[0] == runs[1]


def test_unknown_exercise_or_profile_is_a_usage_error(tmp_path):
    with pytest.raises(ValueError, match="unknown exercise"):
        grade_submission(tmp_path, exercises=["ex9_nope"])
    with pytest.raises(ValueError, match="profile"):
        grade_submission(tmp_path, profile="slow")


def test_a_hanging_module_costs_only_its_exercise(submission_copy):
    """An endless loop in ex1 is stopped by the CPU-time limit: ex1 fails (timeout/crash), ex6 is untouched."""
    import time

    from grader.sandbox import Limits

    path = submission_copy / "ex1_ratio.py"
    path.write_text(path.read_text(encoding="utf-8") + "\n\ndef logprobs_from_logits(logits, tokens):\n"
                    "    while True:\n        pass\n", encoding="utf-8")
    started = time.perf_counter()
    # Small limits keep this test short; the defaults are generous (grader/hidden/provider.py).
    limits = Limits(cpu_time_s=2, call_timeout_s=30, import_timeout_s=30, max_respawns=1)
    result = grade_submission(submission_copy, exercises=["ex1_ratio", "ex6_kl_reward"], profile="fast",
                              limits=limits)
    assert time.perf_counter() - started < 240
    ex1 = [t for t in result.tests if t.exercise == "ex1_ratio" and t.test.startswith("test_logprobs")]
    assert ex1 and {t.diagnosis for t in ex1} <= {"timeout", "crash"}
    assert result.exercises["ex6_kl_reward"].score == result.exercises["ex6_kl_reward"].max_score
