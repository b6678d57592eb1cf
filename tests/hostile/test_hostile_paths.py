"""Feedback that names the grader's checkout (red-team attack a106).

A test that fails in the grader's own code (``grader_error``) shows the test's
own frames in feedback (`OutcomeCollector.diagnose_exception`). On main they
were absolute paths: ``File "/work/wt/identity/ppo_course/public_tests/test_ex5_rollout_buffer.py"``
(seen with a105 before its fix). The same submission's feedback then differed by
the folder the grader is checked out in (another machine, another TA, CI), and
told students where the grader lives. Now every install root (the folder holding
the packages, the venv, the interpreter) is cut from the text: the detail reads
``ppo_course/public_tests/...`` from any checkout.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ppo_course.grading_kit.collect import OutcomeCollector, portable_paths

REPO = Path(__file__).resolve().parents[2]


def _raised_in(path: Path) -> BaseException:
    code = compile("def test_fake(buf):\n    return buf.phase\n", str(path), "exec")
    scope: dict = {}
    exec(code, scope)  # noqa: S102 - our own two lines, compiled under the checkout's file name
    try:
        scope["test_fake"](7)
    except AttributeError as exc:
        return exc
    raise AssertionError("the fake test did not raise")


def test_a106_a_grader_error_names_no_absolute_path_of_the_checkout():
    exc = _raised_in(REPO / "ppo_course" / "public_tests" / "test_fake_a106.py")
    diagnosis, detail = OutcomeCollector(lambda e: None).diagnose_exception(exc)
    assert diagnosis == "grader_error"
    assert 'File "ppo_course/public_tests/test_fake_a106.py", line 2, in test_fake' in detail
    assert str(REPO) not in detail and "'int' object has no attribute 'phase'" in detail


def test_portable_paths_cuts_the_venv_and_the_interpreter_too():
    text = f"{sys.prefix}/lib/python3.11/site-packages/x.py and {sys.base_prefix}/lib/python3.11/y.py and /etc/z"
    got = portable_paths(text)
    assert sys.prefix not in got and sys.base_prefix not in got and "/etc/z" in got
    assert "lib/python3.11/site-packages/x.py" in got
