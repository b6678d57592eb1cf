"""Hypothesis' examples of the hidden tests, generated once per grader version and replayed for every student.

The hidden tests run hypothesis derandomised (`grading_settings`: no database, no
shrinking, one bug reported) with a seed drawn from the grader's secret and
`grader_version` (`grader.hidden.conftest.seed_hidden_examples`; the test
function's digest when none was drawn). Their
example sequence is then fixed: it depends on the strategies, the settings and
the seed, never on the student. For a test that passes, hypothesis runs the
body on examples 1..n; for one that fails first on example k, it stops
generating (no shrink phase, ``report_multiple_bugs=False``) and runs example k
once more (the "final" run) to raise its error, or a ``FlakyFailure`` holding
the first error when the final run passes.

`run_replayed` does the same without the engine: the examples come from one
recording run of hypothesis itself (a body that only records its arguments,
with the real test's seed and settings), cached per grader version in this
trusted process (`grader.hidden.cache.version_key`) and in the grader's store on disk; each body call runs under
hypothesis' own per-example context (its settings and its deterministic
``random`` seeding). So the student's functions receive the same calls in the
same order, a failure is raised from the same example after the same final
re-run, and grades and feedback do not change (tests/grading/test_hypothesis_replay.py
checks the call sequences against hypothesis' own run for every hidden test).

The file name holds "hypothesis" on purpose: the collector leaves its frames
out of a grader error's traceback, as it does hypothesis' own.

Not replayed (hypothesis runs them as usual): a test with explicit examples,
a seed other than its drawn one, a database, shrinking, `report_multiple_bugs`, a deadline or the
explain phase, i.e. anything whose example sequence may depend on the outcome.
"""

from __future__ import annotations

import copy
import inspect
import os
from typing import Any, Callable

from hypothesis import Phase, given
from hypothesis.errors import FlakyFailure
from hypothesis.internal.entropy import deterministic_PRNG
from hypothesis.internal.reflection import function_digest
from hypothesis._settings import local_settings

_EXAMPLES: dict[bytes, list[dict[str, Any]]] = {}


def replay_enabled() -> bool:
    """False when ``PPO_COURSE_NO_HYPOTHESIS_REPLAY`` is set (hypothesis then runs every test itself)."""
    return not os.environ.get("PPO_COURSE_NO_HYPOTHESIS_REPLAY")


def replayable(test: Callable) -> bool:
    """True for a `@given` test whose example sequence cannot depend on the test's outcome (see the module doc)."""
    if not getattr(test, "is_hypothesis_test", False):
        return False
    s = getattr(test, "_hypothesis_internal_use_settings", None)
    handle = getattr(test, "hypothesis", None)
    if s is None or handle is None or not hasattr(handle, "inner_test") or not hasattr(handle, "_given_kwargs"):
        return False
    inner = handle.inner_test
    return (s.derandomize and s.database is None and s.deadline is None and not s.report_multiple_bugs
            and set(s.phases) <= {Phase.explicit, Phase.reuse, Phase.generate}
            and not getattr(test, "hypothesis_explicit_examples", None)
            and not getattr(inner, "hypothesis_explicit_examples", None)
            and getattr(test, "_hypothesis_internal_use_seed", None) == getattr(test, "_ppo_course_drawn_seed", None)
            and getattr(test, "_hypothesis_internal_use_reproduce_failure", None) is None
            and all(not str(a).startswith("_") for a in handle._given_kwargs))


def _record(test: Callable) -> list[dict[str, Any]]:
    """The examples hypothesis gives `test`'s body, in order: one run of the engine on a recording body."""
    handle = test.hypothesis
    inner = handle.inner_test
    given_kwargs = dict(handle._given_kwargs)
    seen: list[dict[str, Any]] = []
    signature = inspect.signature(inner)

    def recorder(*args, **kwargs):
        bound = signature.bind(*args, **kwargs).arguments
        seen.append({k: copy.deepcopy(bound[k]) for k in given_kwargs})

    recorder.__signature__ = signature  # the same parameters (fixtures + given)
    recorder.__name__ = inner.__name__
    wrapped = given(**given_kwargs)(recorder)
    # The seed the real test runs with (hypothesis.core.get_random_for_wrapped_test): the drawn one
    # (`grader.hidden.conftest.seed_hidden_examples`), else the one derandomize takes from the digest.
    wrapped._hypothesis_internal_use_seed = _seed_of(test)
    test._hypothesis_internal_use_settings(wrapped)
    fixtures = {name: None for name in inspect.signature(wrapped).parameters}
    wrapped(**fixtures)
    return seen


def _seed_of(test: Callable) -> int:
    """The seed of `test`'s example sequence: its drawn seed, or hypothesis' derandomised one (the digest)."""
    drawn = getattr(test, "_ppo_course_drawn_seed", None)
    if drawn is not None:
        return int(drawn)
    return int.from_bytes(function_digest(test.hypothesis.inner_test), "big")


def examples(test: Callable) -> list[dict[str, Any]]:
    """`test`'s example sequence (recorded once per grader version and test, see `_record`; kept in the grader's
    store on disk too, `grader.hidden.disk_cache`, where this process switched it on)."""
    from grader.hidden import disk_cache
    from grader.hidden.cache import digest, version_key

    inner = test.hypothesis.inner_test
    key = digest("hypothesis_examples", inner.__module__, inner.__qualname__, function_digest(inner).hex(),
                 repr(test._hypothesis_internal_use_settings), str(_seed_of(test)))
    if key not in _EXAMPLES:
        found = disk_cache.load(version_key(), key)
        if found is disk_cache.MISSING:
            found = _record(test)
            disk_cache.save(version_key(), key, found)
        _EXAMPLES[key] = found
    return _EXAMPLES[key]


def _once(test: Callable, testargs: dict[str, Any], example: dict[str, Any]) -> None:
    """One body call, in hypothesis' per-example context (`StateForActualGivenExecution.execute_once`)."""
    with local_settings(test._hypothesis_internal_use_settings), deterministic_PRNG():
        test.hypothesis.inner_test(**testargs, **copy.deepcopy(example))


def run_replayed(test: Callable, testargs: dict[str, Any]) -> None:
    """Run the `@given` test `test` with fixtures `testargs` on its replayed examples, as hypothesis would.

    Raises:
        The first failing example's error from its final re-run (as hypothesis); a `FlakyFailure`
        holding the first error when the re-run passes; a BaseException other than hypothesis'
        failure exceptions (e.g. pytest's skip) at once.
    """
    from hypothesis.core import failure_exceptions_to_catch

    caught = failure_exceptions_to_catch()
    sequence = examples(test)
    for number, example in enumerate(sequence, 1):
        try:
            _once(test, testargs, example)
        except caught as first:
            try:
                _once(test, testargs, example)
            except BaseException as final:
                final.add_note(f"Failing test case: example {number} of {len(sequence)} (replayed)")
                raise
            raise FlakyFailure(f"Hypothesis {test.__name__}(...) produces unreliable results: "
                               "Failed on the first call but did not on a subsequent one", [first]) from None
