"""Static checks: every grader test has points (and vice versa), every diagnosis id used exists, and the
student-side code imports nothing instructor-side."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader.mistakes.diagnose import DIAGNOSES
from grader.points import EXERCISES, load_points

REPO = Path(__file__).resolve().parents[2]
HIDDEN = REPO / "grader" / "hidden"
PUBLIC = REPO / "ppo_course" / "public_tests"


def _test_names(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]


def _module_constant(path: Path, name: str):
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    return None


@pytest.mark.parametrize("stem", EXERCISES)
def test_points_cover_exactly_the_tests(stem):
    """points.yaml lists exactly the test functions of each hidden and public module."""
    points = load_points().exercises[stem]
    for kind, folder in (("hidden", HIDDEN), ("public", PUBLIC)):
        path = folder / f"test_{stem}.py"
        assert path.is_file(), f"missing {path}"
        assert _module_constant(path, "EXERCISE") == stem
        assert _module_constant(path, "KIND") == kind
        assert sorted(_test_names(path)) == sorted(getattr(points, kind)), f"{kind} tests of {stem}"


def test_exercise_totals():
    """Exercises 1-6 are worth 10 points each, exercise 7 twenty; public tests carry points too."""
    points = load_points()
    assert [points.exercises[s].max_score for s in EXERCISES] == [10, 10, 10, 10, 10, 10, 20]
    assert all(points.exercises[s].public for s in EXERCISES)


def test_points_file_rejects_a_typo(tmp_path):
    """An unknown key or a missing exercise is a validation error naming the problem."""
    import pydantic
    import yaml

    from grader.points import POINTS_FILE

    data = yaml.safe_load(POINTS_FILE.read_text(encoding="utf-8"))
    data["exercises"]["ex1_ratio"]["hidden"]["test_logprobs_match_reference"] = {"point": 2}
    bad = tmp_path / "points.yaml"
    bad.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(pydantic.ValidationError, match="point"):
        load_points(bad)
    del data["exercises"]["ex7_ppo_step"]
    data["exercises"]["ex1_ratio"]["hidden"]["test_logprobs_match_reference"] = 2
    bad.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(pydantic.ValidationError, match="ex7_ppo_step"):
        load_points(bad)


def _string_ids_in_mismatch_calls(path: Path) -> set[str]:
    ids = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("Mismatch",) and node.args:
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                ids.add(node.args[0].value)
    return ids


def test_every_diagnosis_id_used_is_defined():
    """Ids in the buggy variants, the ex7 variants and every Mismatch(...) of the graders exist in DIAGNOSES."""
    from grader.mistakes import buggy_ppo_step, buggy_variants
    from grader.mistakes.variants_ex4_ex6 import ADAPTIVE_KL_VARIANTS

    used = {d for table in buggy_variants.VARIANTS.values() for d, _ in table}
    used |= {d for d, _ in ADAPTIVE_KL_VARIANTS}
    used |= {d for d, _ in buggy_ppo_step.PPO_STEP_VARIANTS + buggy_ppo_step.KL_COEF_VARIANTS}
    for path in [*HIDDEN.glob("*.py"), *PUBLIC.glob("*.py")]:
        used |= _string_ids_in_mismatch_calls(path)
    assert sorted(used - set(DIAGNOSES)) == []


def test_seed_ids_are_kept():
    """The ids the team agreed on first are all still there (they are never renamed)."""
    seed = """ratio_in_probability_space log_of_softmax logprobs_misaligned ratio_inverted ratio_detached
    max_instead_of_min clipped_advantage loss_sign_flipped per_row_mean padding_in_mean wrong_clip_bounds
    value_loss_min_instead_of_max value_clip_around_returns value_loss_half_factor entropy_sign entropy_unmasked
    approx_kl_wrong clipfrac_wrong gae_bootstraps_from_padding gae_wrong_timestep gae_runs_forward gae_missing_gamma
    gae_missing_lambda returns_not_a_plus_v whiten_biased_variance whiten_padding_in_stats whiten_shift_mean_ignored
    whiten_no_error_for_one_element buffer_add_during_train buffer_minibatches_during_collect buffer_use_after_purge
    buffer_wrong_minibatch_order buffer_aliases_inputs kl_wrong_direction kl_unmasked score_on_padding
    score_on_every_token last_token_sum_instead_of_mean adaptive_kl_no_clip adaptive_kl_wrong_update
    ppo_step_no_advantage_whitening ppo_step_no_grad_clip ppo_step_no_accumulation_scaling ppo_step_no_purge
    modifies_input wrong_dtype wrong_shape not_implemented""".split()
    assert [i for i in seed if i not in DIAGNOSES] == []
    assert all(isinstance(m, str) and len(m) > 20 for m in DIAGNOSES.values())


FORBIDDEN = ("grader", "ppo_reference", "solutions", "quiz_bank", "tests")


@pytest.mark.parametrize("folder", ["ppo_course/public_tests", "ppo_course/check_support", "ppo_course/grading_kit",
                                    "ppo_course/commands"])
def test_student_side_imports_nothing_instructor_side(folder):
    """The public tests and `ppo-course check` ship to students: no import of grader, reference or solutions."""
    for path in (REPO / folder).glob("*.py"):
        if folder.endswith("commands") and path.name != "check.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in FORBIDDEN, f"{path.name} imports {name}"
