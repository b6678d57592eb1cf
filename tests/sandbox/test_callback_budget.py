"""The grader process as the victim (issue 10, class 5).

Exercise 7's known-good helpers run in the trusted process on the child's
behalf. A hostile child floods them: too many calls, too many bytes, too much
of the grader's CPU, or callbacks that keep a call running past its limit.
Each ends the child with a fixed message; the grader's memory stays bounded;
no callback time is added back to a deadline; and the submission's one
absolute deadline stops every later call at once.
"""

from __future__ import annotations

import time

import pytest

from grader.sandbox import Limits, StudentCrash, StudentTimeout
from grader.sandbox.submission_time import submission_deadline

pytestmark = pytest.mark.filterwarnings("ignore::ppo_course.config.HyperparameterWarning")

BROKEN = {f"{stem}.py": "raise RuntimeError('the student version must not be imported in known-good mode')\n"
          for stem in ("ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer", "ex6_kl_reward")}

FLOOD = {
    "ex7_ppo_step.py": '''
        import time
        import torch
        import ex4_gae

        def many_calls(n):
            x, m = torch.ones(1, 4), torch.ones(1, 4)
            for _ in range(n):
                ex4_gae.whiten(x, m)
            return n

        def big_calls(n, numel):
            # kept by the grader as pending gradients (wrt=...) unless a budget stops it
            x = torch.randn(1, numel, requires_grad=True)
            m = torch.ones(1, numel)
            out = []
            for _ in range(n):
                out.append(ex4_gae.whiten(x, m))
            return len(out)

        def busy_grader(n, numel):
            x, m = torch.randn(64, numel), torch.ones(64, numel)
            for _ in range(n):
                ex4_gae.whiten(x, m)
            return n

        def callbacks_for(seconds):
            x, m = torch.ones(1, 4), torch.ones(1, 4)
            end = time.monotonic() + seconds
            n = 0
            while time.monotonic() < end:
                ex4_gae.whiten(x, m)
                n += 1
            return n

        def sleep(seconds):
            time.sleep(seconds)
            return "woke"

        def honest():
            x, m = torch.arange(8.0).reshape(2, 4), torch.ones(2, 4)
            return ex4_gae.whiten(x, m)
        ''',
}


def _rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def test_an_honest_call_is_within_every_budget(load):
    child = load({**BROKEN, **FLOOD}, "ex7_ppo_step", known_good=True,
                 limits=Limits(call_timeout_s=60, import_timeout_s=30, max_callbacks=10))
    out = child.honest()
    assert out.shape == (2, 4)


def test_a_flood_of_calls_ends_the_child_with_a_fixed_message(load):
    child = load({**BROKEN, **FLOOD}, "ex7_ppo_step", known_good=True,
                 limits=Limits(call_timeout_s=120, import_timeout_s=30, max_callbacks=300))
    with pytest.raises(StudentCrash, match="more than 300 calls to the known-good exercise 1-6 pieces"):
        child.many_calls(1_000_000)


def test_a_flood_of_bytes_ends_the_child_and_bounds_the_graders_memory(load):
    """32 calls of 16 MiB each (512 MiB the grader would keep as pending gradients) against a 48 MiB budget."""
    child = load({**BROKEN, **FLOOD}, "ex7_ppo_step", known_good=True,
                 limits=Limits(call_timeout_s=120, import_timeout_s=30, max_callback_bytes=48 * 2**20))
    before = _rss_mib()
    with pytest.raises(StudentCrash, match="more than 48 MiB to and from the known-good"):
        child.big_calls(32, 4 * 2**20)  # 4 Mi float32 = 16 MiB per argument
    grown = _rss_mib() - before
    assert grown < 160, f"the grader grew by {grown:.0f} MiB against a 48 MiB budget"


def test_a_child_that_keeps_the_grader_busy_is_stopped_by_the_cpu_budget(load):
    child = load({**BROKEN, **FLOOD}, "ex7_ppo_step", known_good=True,
                 limits=Limits(call_timeout_s=300, import_timeout_s=30, max_callback_cpu_s=0.5,
                               max_callback_bytes=2**40, max_callbacks=10**9))
    started = time.process_time()
    with pytest.raises(StudentCrash, match=r"used more than 0.5 CPU s on the submission's behalf"):
        child.busy_grader(100_000, 4096)
    assert time.process_time() - started < 30


def test_callback_time_counts_against_the_call_limit(load):
    """A call that spends 20 s in callbacks is stopped at its 3 s limit (nothing is added back)."""
    child = load({**BROKEN, **FLOOD}, "ex7_ppo_step", known_good=True,
                 limits=Limits(call_timeout_s=3, import_timeout_s=30, max_callbacks=10**9))
    started = time.monotonic()
    with pytest.raises(StudentTimeout, match="longer than 3 s"):
        child.callbacks_for(20)
    assert time.monotonic() - started < 10


def test_the_submission_deadline_caps_every_call(load):
    """One absolute limit per submission: the call that crosses it and every later one stop at once."""
    child = load({**BROKEN, **FLOOD}, "ex7_ppo_step", known_good=True,
                 limits=Limits(call_timeout_s=60, import_timeout_s=30))
    with submission_deadline(2.0):
        started = time.monotonic()
        with pytest.raises(StudentTimeout, match=r"used up its 2 s of grading time"):
            child.sleep(30)
        assert time.monotonic() - started < 8
        later = time.monotonic()
        with pytest.raises(StudentTimeout, match=r"used up its 2 s"):
            child.sleep(0.01)  # a fresh child, but no time left
        assert time.monotonic() - later < 5


def test_nested_deadlines_keep_the_earlier_one():
    """A worker's deadline inside the batch's: the earlier of the two holds, and is restored after."""
    from grader.sandbox import submission_time

    with submission_deadline(100.0) as outer:
        with submission_deadline(5.0) as inner:
            assert inner < outer
            assert submission_time.cap_deadline(time.monotonic() + 60)[1] is True
        with submission_deadline(500.0) as later:
            assert later == outer
        assert submission_time.cap_deadline(time.monotonic() + 60)[1] is False  # 60 s from now is before the outer 100 s
    assert submission_time._SUBMISSION.get() is None
