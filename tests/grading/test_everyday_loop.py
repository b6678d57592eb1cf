"""Issue 13, items 1, 3 and 4: what a student reads when a function loops forever, prints too much, or
has a changed signature, in `ppo-course check` and in `ppo-course grade`.

Each test writes a small exercise-1 module as a student would (a correct `logprobs_from_logits`, and a
`probability_ratio` with the mistake), runs the command and reads its words.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.xdist_group("grader")

LOGPROBS = '''import torch


def logprobs_from_logits(logits, tokens):  # with the docstring's Raises clauses, as a full-marks ex1 keeps them
    if logits.ndim != 3 or tokens.is_floating_point() or tokens.dtype == torch.bool \
            or tuple(tokens.shape) != tuple(logits.shape[:2]):
        raise ValueError("logits must be [B, T, V] and tokens integer ids of shape [B, T]")
    return torch.log_softmax(logits, dim=-1).gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)


'''

RATIO_OK = ("    if logp_new.shape != logp_old.shape:\n        raise ValueError('one shape')\n"
            "    return (logp_new - logp_old).exp()\n")

# Framework frames a student must never read.
FRAMEWORK = ("pluggy", "_pytest", "inspect.py", "check_support", "grading_kit", "grader/sandbox", "site-packages")


def _ex1(folder: Path, ratio_body: str, signature: str = "logp_new, logp_old", head: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ex1_ratio.py").write_text(head + LOGPROBS + f"def probability_ratio({signature}):\n{ratio_body}",
                                         encoding="utf-8")
    return folder


def _check(folder: Path, *extra: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200", PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "ppo_course.cli", "check", str(folder), "-e", "ex1", *extra],
                          capture_output=True, text=True, env=env, timeout=timeout)


def _table_row(out: str, stem: str = "ex1_ratio") -> str:
    return next(line for line in out.splitlines() if line.startswith("│ " + stem))


# -- 1. an endless loop --------------------------------------------------------------------------

def test_check_names_the_function_that_loops_and_keeps_the_others_points(tmp_path):
    """`while True` in probability_ratio: check names exercise, test and function, within the per-call
    limit, and logprobs_from_logits' three tests still pass."""
    run = _check(_ex1(tmp_path / "s", "    while True:\n        pass\n"), "--call-seconds", "2")
    out = run.stdout
    assert "`probability_ratio` did not return within 2 s (an endless loop?)" in out
    assert "ex1_ratio · test_ratio_hand_cases" in out  # exercise and test, in the box's title
    assert "3/6 passed" in _table_row(out)  # the three logprobs tests
    assert "the test run died" not in out and run.returncode == 1


def test_check_survives_a_loop_that_swallows_the_interrupt(tmp_path):
    """A loop inside `except BaseException: pass` ignores the per-call limit: the process's CPU limit stops
    it, the test is charged with the function's name, and a fresh process runs the remaining tests."""
    body = ("    while True:\n        try:\n            while True:\n                pass\n"
            "        except BaseException:\n            pass\n")
    run = _check(_ex1(tmp_path / "s", body), "--call-seconds", "1", "--cpu-seconds", "6")
    out = run.stdout
    assert "`probability_ratio` did not return within 6 s (an endless loop?)" in out
    assert "3/6 passed" in _table_row(out)


@pytest.mark.slow
def test_grade_keeps_the_points_of_the_functions_that_return(tmp_path):
    """In the hidden grading, a looping probability_ratio costs its own tests only."""
    from grader.grade import grade_submission
    from grader.hidden.provider import EX1_6_LIMITS
    from grader.sandbox import Limits

    folder = _ex1(tmp_path / "s", "    while True:\n        pass\n")
    result = grade_submission(folder, exercises=["ex1_ratio"],
                              limits=Limits(**{**EX1_6_LIMITS, "cpu_time_s": 3}))
    # The tests worth points (a 0-point reported test checks both functions' documented errors).
    graded = [t for t in result.tests if t.max_score > 0 and "reject" not in t.test]
    # The Raises clause's test waits for both functions' values (``requires:``): nothing for it here.
    assert [t.score for t in result.tests if "reject" in t.test] == [0.0]
    logprobs = [t for t in graded if "logprobs" in t.test]  # 3 public + 5 hidden tests
    ratio = [t for t in graded if "ratio" in t.test]
    assert len(logprobs) == 8 and all(t.status == "passed" for t in logprobs), \
        [(t.test, t.diagnosis) for t in logprobs if t.status != "passed"]
    assert ratio and all(t.diagnosis == "timeout" for t in ratio)
    public = next(t for t in ratio if t.test == "test_ratio_hand_cases")
    assert "`probability_ratio` did not return within 3 s of CPU time (an endless loop?)" in public.output


# -- 3. debug prints -----------------------------------------------------------------------------

def test_check_shows_what_a_failing_test_printed_escaped(tmp_path):
    """A failing test's prints are shown (markup escaped, so `[red]` stays literal); a passing test's only
    with --show-output."""
    body = "    print('ratio debug [red]x[/red]', logp_new.shape)\n    return logp_new - logp_old\n"
    folder = _ex1(tmp_path / "s", body, head="")
    out = _check(folder).stdout
    assert "your code printed:" in out and "ratio debug [red]x[/red] torch.Size" in out
    # logprobs prints nothing: no output box for it; --show-output adds the passing tests' prints.
    folder2 = _ex1(tmp_path / "t", "    print('hello from ratio')\n" + RATIO_OK)
    quiet = _check(folder2).stdout
    assert "hello from ratio" not in quiet
    shown = _check(folder2, "--show-output").stdout
    assert "hello from ratio" in shown and "test_ratio_hand_cases: printed" in shown


def test_check_warns_about_many_printed_lines(tmp_path):
    """Code that prints thousands of lines passes, with a warning that printing slows grading."""
    body = "    for i in range(3000):\n        print(i)\n" + RATIO_OK
    out = _check(_ex1(tmp_path / "s", body)).stdout
    assert "all passed" in _table_row(out)
    assert "Warning: your code printed" in out and "lines; printing slows grading" in out


def test_check_print_limit_is_per_call_and_says_remove_debug_prints(tmp_path):
    """check: 20 MiB printed in every call passes (the limit is per call, so the total over the tests does
    not matter); 33 MiB in one call stops that test with the words a student can act on."""
    chatty = _check(_ex1(tmp_path / "chatty", "    import sys\n    sys.stdout.write('x' * (20 * 2**20))\n"
                                              + RATIO_OK)).stdout
    assert "all passed" in _table_row(chatty)
    flood = _check(_ex1(tmp_path / "flood", "    import sys\n    sys.stdout.write('x' * (33 * 2**20))\n"
                                            + RATIO_OK)).stdout
    assert "`probability_ratio` printed more than 32 MiB: remove debug prints" in flood
    assert "crashed, ran out of memory" not in flood and "3/6 passed" in _table_row(flood)


@pytest.mark.slow
def test_grade_print_limit_is_per_call_and_says_remove_debug_prints(tmp_path):
    """20 MiB per call is under the 32 MiB limit in every call (the total over the tests is far above it:
    the score must not depend on how much earlier tests printed); 40 MiB in one call is stopped with
    "printed more than 32 MiB: remove debug prints", not reported as a crash."""
    from grader.grade import grade_submission

    chatty = _ex1(tmp_path / "chatty", "    import sys\n    sys.stdout.write('x' * (20 * 2**20))\n" + RATIO_OK)
    result = grade_submission(chatty, exercises=["ex1_ratio"])
    assert result.exercises["ex1_ratio"].score == result.exercises["ex1_ratio"].max_score, \
        [(t.test, t.diagnosis) for t in result.tests if t.status != "passed"]
    flood = _ex1(tmp_path / "flood", "    import sys\n    sys.stdout.write('x' * (40 * 2**20))\n" + RATIO_OK)
    result = grade_submission(flood, exercises=["ex1_ratio"])
    hand = next(t for t in result.tests if t.test == "test_ratio_hand_cases")
    assert hand.diagnosis == "prints_too_much"
    assert "printed more than 32 MiB: remove debug prints" in hand.output
    assert "crashed, ran out of memory" not in hand.output


# -- 4. a wrong signature ------------------------------------------------------------------------

def test_check_says_the_signature_differs_before_running(tmp_path):
    """`def probability_ratio(logp_new, logp_old, clamp)`: one sentence naming the extra parameter,
    no framework frames, and the function is never run (no call with the stub's arguments can bind)."""
    body = "    raise RuntimeError('this must not run')\n"
    run = _check(_ex1(tmp_path / "s", body, signature="logp_new, logp_old, clamp"))
    out = run.stdout + run.stderr
    assert "`probability_ratio` has an extra required parameter `clamp`; keep the stub's signature" in out
    assert "this must not run" not in out and "raises_error" not in out
    assert not [f for f in FRAMEWORK if f in out], out
    assert "wrong signature" in _table_row(run.stdout)


def test_a_renamed_parameter_costs_only_the_calls_that_use_its_name(tmp_path):
    """`def probability_ratio(new, old)`: calls by position still run and pass; the gradient test, which
    names `logp_new`, fails with the signature sentence rather than a KeyError from the test machinery."""
    out = _check(_ex1(tmp_path / "s", "    return (new - old).exp()\n", signature="new, old")).stdout
    assert "`probability_ratio` renames parameter `logp_new` to `new`; keep the stub's signature" in out
    assert "5/6 passed, 1 wrong signature" in _table_row(out) and "KeyError" not in out


def test_check_shows_only_the_students_own_frames(tmp_path):
    """An exception deep inside torch shows the student's line, not pytest's, pluggy's or torch's frames."""
    body = "    return torch.cat([logp_new, logp_old], dim=5)\n"
    out = _check(_ex1(tmp_path / "s", body)).stdout
    assert "ex1_ratio.py" in out and "torch.cat" in out
    assert not [f for f in FRAMEWORK if f in out], out


@pytest.mark.slow
def test_grade_reports_the_signature_in_results_json(tmp_path):
    from grader.grade import grade_submission

    folder = _ex1(tmp_path / "s", RATIO_OK, signature="logp_new, logp_old, clamp")
    result = grade_submission(folder, exercises=["ex1_ratio"])
    ratio = [t for t in result.tests if "ratio" in t.test and t.max_score > 0]  # the tests worth points
    assert ratio and all(t.diagnosis == "wrong_signature" for t in ratio)
    public = next(t for t in ratio if t.test == "test_ratio_hand_cases")
    assert "`probability_ratio` has an extra required parameter `clamp`; keep the stub's signature" in public.output
    text = json.dumps([t.output for t in result.tests])
    assert not [f for f in FRAMEWORK if f in text]


@pytest.mark.parametrize("signature, said", [
    ("logp_new, logp_old, clamp", "has an extra required parameter `clamp`"),
    ("new, logp_old", "renames parameter `logp_new` to `new`"),
    ("logp_new", "is missing the parameter `logp_old`"),
    ("logp_old, logp_new", "takes its parameters in a different order"),
])
def test_signature_problems_read_from_the_source(tmp_path, signature, said):
    from ppo_course.grading_kit.signatures import signature_problems

    path = _ex1(tmp_path, RATIO_OK, signature=signature) / "ex1_ratio.py"
    assert said in signature_problems("ex1_ratio", path)["probability_ratio"]


def test_signature_problems_accept_extra_optional_parameters_and_unparsable_files(tmp_path):
    from ppo_course.grading_kit.signatures import signature_problems

    path = _ex1(tmp_path, RATIO_OK, signature="logp_new, logp_old, eps=1e-8") / "ex1_ratio.py"
    assert signature_problems("ex1_ratio", path) == {}
    path.write_text("def probability_ratio(:\n", encoding="utf-8")
    assert signature_problems("ex1_ratio", path) == {}  # the import reports the syntax error


def test_missing_default_is_named(tmp_path):
    from ppo_course.grading_kit.signatures import signature_problems

    path = tmp_path / "ex2_clipped_loss.py"
    path.write_text("def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps):\n    pass\n",
                    encoding="utf-8")
    assert "parameter `clip_eps` needs its default (clip_eps=0.2)" in \
        signature_problems("ex2_clipped_loss", path)["clipped_surrogate_loss"]


# -- 6. the nbgrader stub's bare NotImplementedError ----------------------------------------------

@pytest.mark.slow
def test_nbgrader_feedback_says_not_implemented_once(tmp_path):
    """nbgrader's cell stub is a bare `raise NotImplementedError()`: the feedback must not read
    "... (it raises NotImplementedError). NotImplementedError:"."""
    from grader.grade import grade_submission
    from grader.platforms.nbgrader_course.autograde import exercise_feedback

    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "ex1_ratio.py").write_text("def logprobs_from_logits(logits, tokens):\n    raise NotImplementedError()\n\n\n"
                                         "def probability_ratio(logp_new, logp_old):\n    raise NotImplementedError\n",
                                         encoding="utf-8")
    feedback = exercise_feedback(grade_submission(folder, exercises=["ex1_ratio"], profile="fast"), "ex1_ratio")
    assert "[not_implemented]" in feedback
    lines = [line.strip() for line in feedback.splitlines()]
    assert "NotImplementedError:" not in lines and "NotImplementedError: NotImplementedError" not in feedback
