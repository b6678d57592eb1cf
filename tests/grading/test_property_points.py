"""`requires` in grader/points.yaml: a hidden property test that a function computing nothing passes
(inputs untouched) counts only beside the value tests it names (red team, attack a100). Without a
sandbox: the schema and `ExercisePoints.counted` on hand-made tables."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from grader.points import ExercisePoints, load_points


def _ex(hidden: dict, public: dict | None = None) -> ExercisePoints:
    return ExercisePoints.model_validate({"title": "t", "hidden": hidden, "public": public or {}})


def test_a_property_counts_only_when_every_required_test_passed():
    ex = _ex({"test_values_a": 1, "test_values_b": 1,
              "test_untouched": {"points": 0.5, "requires": ["test_values_a", "test_values_b"]}})
    assert ex.counted("hidden", "test_untouched", True, lambda n: True)
    assert not ex.counted("hidden", "test_untouched", True, lambda n: n == "test_values_a")  # b failed
    assert not ex.counted("hidden", "test_untouched", True, lambda n: False)  # a function computing nothing
    assert not ex.counted("hidden", "test_untouched", False, lambda n: True)  # it failed itself
    assert ex.counted("hidden", "test_values_a", True, lambda n: False)  # a value test needs nothing else


def test_a_known_mistake_shows_work_and_keeps_the_property():
    """The promise of the points table: a student whose value test fails naming a catalogued mistake (the
    function computes, with a known bug) keeps the property's points; no work (None, zeros, an error) does not."""
    from grader.points import shows_work

    ex = _ex({"test_values": 1, "test_untouched": {"points": 0.5, "requires": ["test_values"]}})
    diagnosis = {"test_values": "max_instead_of_min"}
    worked = lambda n: shows_work(False, diagnosis.get(n))  # noqa: E731
    assert ex.counted("hidden", "test_untouched", True, lambda n: False, worked)
    for nothing in ("wrong_value", "wrong_type", "wrong_shape", "wrong_dtype", "raises_error", "not_implemented",
                    "not_finite", None):
        diagnosis["test_values"] = nothing
        assert not ex.counted("hidden", "test_untouched", True, lambda n: False, worked), nothing
    assert shows_work(True, None)


def test_a_public_test_whose_twin_requires_values_needs_them_too():
    """A whiten that always raises ValueError passed the public and hidden one-element tests (1 point of
    exercise 4 for doing nothing): the hidden one requires the values, so its public twin does too."""
    ex = _ex({"test_values": 1, "test_raises": {"points": 0.5, "requires": ["test_values"]}},
             {"test_p": {"points": 0.5, "twins": ["test_raises"]}})
    assert not ex.counted("public", "test_p", True, lambda n: n == "test_raises")
    assert ex.counted("public", "test_p", True, lambda n: True)


@pytest.mark.parametrize("hidden,public,words", [
    ({"test_a": {"points": 1, "requires": ["test_nope"]}}, {}, "not other hidden tests"),
    ({"test_a": {"points": 1, "requires": ["test_a"]}}, {}, "not other hidden tests"),
    ({"test_a": 1, "test_b": {"points": 1, "requires": ["test_a"]}, "test_c": {"points": 1, "requires": ["test_b"]}},
     {}, "require other tests themselves"),
    ({"test_a": 1}, {"test_p": {"points": 1, "twins": ["test_a"], "requires": ["test_a"]}}, "only hidden tests"),
])
def test_requires_is_checked(hidden, public, words):
    with pytest.raises(ValidationError, match=words):
        _ex(hidden, public)


def test_every_property_that_doing_nothing_has_requires_the_values():
    """The course's table: every hidden test of a property that a function returning None (or raising
    ValueError) also has (inputs untouched, no gradient into constants, whiten's one-element error) names
    the value tests of the functions it probes (measured in tests/hostile/test_hostile_points.py)."""
    for stem, ex in load_points().exercises.items():
        for name, entry in ex.hidden.items():
            doing_nothing_passes = name.endswith("inputs_untouched") or "no_gradient" in name \
                or name == "test_whiten_raises_for_one_element"
            if doing_nothing_passes and entry.points:
                assert entry.requires, f"{stem}.{name} pays for doing nothing"
                assert all(ex.hidden[r].points > 0 for r in entry.requires), (stem, name, entry.requires)
