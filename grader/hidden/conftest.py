"""Fixtures of the hidden graders: the student's module (through the sandbox provider) and the reference.

`grader.grade` registers the provider (a plugin with `is_student_provider =
True`); the fixtures below only ask it for modules. Each test module declares
`EXERCISE` (the module stem) and `KIND = "hidden"`. Their `@given` tests draw their examples from a seed
drawn from the grader's secret and `grader_version` (`pytest_collection_modifyitems`
below), and run on examples replayed from one recording per grader version (`pytest_pyfunc_call`).
"""

from __future__ import annotations

import pytest
import torch

from ppo_course.grading_kit.provider import find_provider


def _provider(config: pytest.Config):
    provider = find_provider(config)
    if provider is None:
        raise RuntimeError("the hidden graders run through grader.grade.grade_submission (no student provider)")
    return provider


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    """One torch thread: deterministic reductions, fair on a shared machine."""
    torch.set_num_threads(1)


@pytest.fixture
def student(request: pytest.FixtureRequest):
    """The student's module for this test module's EXERCISE.

    Function-scoped: the provider caches the loaded module and reloads it only
    after a crash or time-out, so one dead child costs one test, not the rest.
    """
    return _provider(request.config).load(request.module.EXERCISE)


@pytest.fixture
def provider(request: pytest.FixtureRequest):
    """The registered student provider (for known-good loads and error names)."""
    return _provider(request.config)


@pytest.fixture
def error_name(request: pytest.FixtureRequest):
    """Maps an exception raised by the student's code to its type name (None if not theirs)."""
    return _provider(request.config).error_name


@pytest.fixture(scope="session")
def reference():
    """The trusted reference implementation (`ppo_reference`)."""
    import ppo_reference

    return ppo_reference


def seed_hidden_examples(test) -> None:
    """Give a hidden `@given` test its drawn seed (`grader.hidden.draws.hypothesis_seed`), idempotently.

    Hypothesis' own derandomised seed is the function's digest, which the source alone decides, so its
    examples would be the same in every version; the drawn seed keeps them unknown to students and
    fixed for one secret + version.
    """
    from grader.hidden.draws import hypothesis_seed

    if not getattr(test, "is_hypothesis_test", False):
        return
    inner = getattr(getattr(test, "hypothesis", None), "inner_test", test)
    seed = hypothesis_seed(inner.__module__, inner.__qualname__)
    test._hypothesis_internal_use_seed = seed
    test._ppo_course_drawn_seed = seed


def pytest_collection_modifyitems(session, config, items):
    """Every hidden `@given` test gets its drawn seed before it runs (`seed_hidden_examples`)."""
    for item in items:
        module = getattr(item, "module", None)
        if getattr(module, "KIND", None) == "hidden" and hasattr(item, "obj"):
            seed_hidden_examples(item.obj)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    """Run a hidden `@given` test on its replayed examples (`grader.hidden.hypothesis_replay`): the same
    calls in the same order as hypothesis' own run, without generating them again for every student."""
    from grader.hidden.cache import version_key
    from grader.hidden.hypothesis_replay import replay_enabled, replayable, run_replayed

    test = pyfuncitem.obj
    if not (replay_enabled() and replayable(test) and version_key() is not None):
        return None
    testargs = {arg: pyfuncitem.funcargs[arg] for arg in pyfuncitem._fixtureinfo.argnames}
    run_replayed(test, testargs)
    return True
