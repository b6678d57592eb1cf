"""The hidden tests' replayed examples are hypothesis' own: same bodies called with the same arguments, in the
same order, also when an example fails (hypothesis then stops and runs that example once more).

The independent side is hypothesis itself: each hidden `@given` test is run by its own wrapper with its body
swapped for a spy (`functools.wraps` keeps the body's digest, hence hypothesis' derandomised seed; asserted),
and the spy's record is compared with what `grader.hidden.hypothesis_replay` feeds the same spy.
"""

from __future__ import annotations

import functools
import importlib
import inspect

import pytest
from hypothesis.errors import FlakyFailure
from hypothesis.internal.reflection import function_digest

from grader.hidden import hypothesis_replay

MODULES = ["test_ex1_ratio", "test_ex2_clipped_loss", "test_ex3_full_loss", "test_ex4_gae", "test_ex5_rollout_buffer",
           "test_ex6_kl_reward"]


def _given_tests():
    from grader.hidden.conftest import seed_hidden_examples

    out = []
    for name in MODULES:
        module = importlib.import_module(f"grader.hidden.{name}")
        for attr, fn in vars(module).items():
            if attr.startswith("test_") and getattr(fn, "is_hypothesis_test", False):
                seed_hidden_examples(fn)  # as in grading: the seed drawn from the secret and version (issue 19)
                out.append(pytest.param(fn, id=f"{name}.{attr}"))
    return out


GIVEN_TESTS = _given_tests()


class Boom(AssertionError):
    pass


def _run_hypothesis(test, body) -> BaseException | None:
    handle = test.hypothesis
    real = handle.inner_test
    handle.inner_test = body
    try:
        test(**{p: None for p in inspect.signature(test).parameters})
    except BaseException as exc:  # noqa: BLE001 - the outcome is compared
        return exc
    finally:
        handle.inner_test = real
    return None


def _run_replay(test, body) -> BaseException | None:
    handle = test.hypothesis
    real = handle.inner_test
    handle.inner_test = body
    try:
        hypothesis_replay.run_replayed(test, {p: None for p in inspect.signature(test).parameters})
    except BaseException as exc:  # noqa: BLE001
        return exc
    finally:
        handle.inner_test = real
    return None


def _logged(test, fail_at, fail_again, runner):
    log: list = []
    inner = test.hypothesis.inner_test
    given_names = set(test.hypothesis._given_kwargs)

    @functools.wraps(inner)
    def spy(*args, **kwargs):
        bound = inspect.signature(inner).bind(*args, **kwargs).arguments
        log.append({k: bound[k] for k in given_names})
        n = len(log)
        if fail_at is not None and (n == fail_at or (fail_again and n == fail_at + 1)):
            raise Boom(f"call {n}")

    assert function_digest(spy) == function_digest(inner)  # hypothesis' seed is the real test's
    assert test._hypothesis_internal_use_seed == test._ppo_course_drawn_seed  # the drawn one, not the digest
    return log, runner(test, spy)


@pytest.mark.parametrize("test", GIVEN_TESTS)
def test_replay_is_hypothesis_sequence(test):
    """Passing: every example, in order. Failing at call 3 (and on its re-run): calls 1-3 and 3 again,
    the same error type. Failing at call 2 only once: hypothesis' FlakyFailure holding the first error."""
    assert hypothesis_replay.replayable(test)
    for fail_at, fail_again in ((None, True), (3, True), (2, False)):
        want_log, want_exc = _logged(test, fail_at, fail_again, _run_hypothesis)
        got_log, got_exc = _logged(test, fail_at, fail_again, _run_replay)
        assert got_log == want_log, (fail_at, fail_again)
        assert type(got_exc) is type(want_exc)
        if isinstance(want_exc, FlakyFailure):
            assert [type(e) for e in got_exc.exceptions] == [type(e) for e in want_exc.exceptions] == [Boom]
        if fail_at is None:
            assert len(want_log) == test._hypothesis_internal_use_settings.max_examples
        else:
            assert len(want_log) == fail_at + 1 and want_log[-1] == want_log[-2]


def test_examples_cached_per_version():
    """The second request for a test's examples is the recorded list itself (no new engine run)."""
    test = GIVEN_TESTS[0].values[0]
    assert hypothesis_replay.examples(test) is hypothesis_replay.examples(test)


def test_not_replayable_with_shrinking():
    """A test that shrinks (the public tests) is left to hypothesis: its sequence depends on the outcome."""
    from hypothesis import given, strategies as st

    from ppo_course.grading_kit.inputs import grading_settings

    @grading_settings(max_examples=5, shrink=True)
    @given(x=st.integers())
    def shrinking(x):
        pass

    @grading_settings(max_examples=5, shrink=False)
    @given(x=st.integers())
    def plain(x):
        pass

    assert not hypothesis_replay.replayable(shrinking)
    assert hypothesis_replay.replayable(plain)
