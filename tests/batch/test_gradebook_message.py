"""gradebook.csv's message column names each exercise that was not really graded
(grader/batch.py: exercise_reasons)."""

from __future__ import annotations

from grader.batch import exercise_reasons


def _test(stem, kind, status, diagnosis=None, output=""):
    tags = [stem, kind] + ([f"diagnosis:{diagnosis}"] if diagnosis else [])
    return {"name": f"{stem} · {kind} · t", "score": 0.0, "max_score": 1.0, "status": status, "output": output,
            "visibility": "visible" if kind == "public" else "after_published", "tags": tags}


def test_reasons_for_missing_broken_and_unimplemented_modules():
    syntax = ("Failed: doc\nDiagnosis [module_broken]: cannot be imported.\n"
              "SyntaxError: expected ':' (ex4_gae.py, line 12)")
    sibling = syntax.replace("Failed: doc", "Failed: other")
    results = {
        "extra_data": {"exercise_status": {"ex1_ratio": "graded", "ex4_gae": "broken", "ex5_rollout_buffer": "graded",
                                           "ex6_kl_reward": "broken", "ex7_ppo_step": "missing"}},
        "tests": [
            _test("ex1_ratio", "public", "failed", "max_instead_of_min"),
            _test("ex4_gae", "hidden", "failed", "module_broken", "Failed: x\nDiagnosis [module_broken]: ..."),
            _test("ex4_gae", "public", "failed", "module_broken", syntax),
            _test("ex5_rollout_buffer", "public", "failed", "not_implemented"),
            _test("ex5_rollout_buffer", "hidden", "failed", "not_implemented"),
            _test("ex6_kl_reward", "public", "failed", "module_broken", sibling.replace("ex4_gae.py", "ex4_gae.py")
                  .replace("line 12", "line 12")),
            _test("ex7_ppo_step", "public", "failed", "module_missing"),
        ],
    }
    assert exercise_reasons(results) == ["ex4_gae: SyntaxError line 12", "ex5_rollout_buffer: not implemented",
                                         "ex6_kl_reward: SyntaxError in ex4_gae.py line 12", "ex7_ppo_step: missing"]


def test_a_graded_exercise_gives_no_reason():
    results = {"extra_data": {"exercise_status": {"ex1_ratio": "graded"}},
               "tests": [_test("ex1_ratio", "public", "passed"), _test("ex1_ratio", "hidden", "failed", "wrong_value")]}
    assert exercise_reasons(results) == []
