"""`requires` in grader/points.yaml: a hidden property test that a function computing nothing passes
(inputs untouched) counts only beside the value tests it names (red team, attack a100). Without a
sandbox: the schema and `ExercisePoints.counted` on hand-made tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from grader.points import ExercisePoints, load_points

REPO = Path(__file__).resolve().parents[2]


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


def test_a_computing_mistake_shows_work_and_keeps_the_property():
    """The promise of the points table: a student whose value test fails with a value the function computed
    (a catalogued mistake or an unnamed `wrong_value` alike) keeps the property's points; no work (None,
    zeros or an input unchanged: `computes_nothing`, another type, an error) does not."""
    from grader.points import shows_work

    ex = _ex({"test_values": 1, "test_untouched": {"points": 0.5, "requires": ["test_values"]}})
    diagnosis = {"test_values": "max_instead_of_min"}
    worked = lambda n: shows_work(False, diagnosis.get(n))  # noqa: E731
    assert ex.counted("hidden", "test_untouched", True, lambda n: False, worked)
    diagnosis["test_values"] = "wrong_value"
    assert ex.counted("hidden", "test_untouched", True, lambda n: False, worked)
    for nothing in ("computes_nothing", "wrong_type", "wrong_shape", "wrong_dtype", "raises_error", "not_implemented",
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


_GAE_WITH_DELTA = '''

def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    if rewards.dim() != 2 or rewards.shape != values.shape or rewards.shape != mask.shape:
        raise ValueError("rewards, values and mask must be [batch, resp_len] of one shape")
    with torch.no_grad():
        m = mask.bool()
        r = torch.where(m, rewards, torch.zeros((), dtype=rewards.dtype))
        v = torch.where(m, values, torch.zeros((), dtype=values.dtype))
        adv = torch.zeros_like(r)
        last = torch.zeros_like(r[:, 0])
        for t in reversed(range(r.shape[1])):
            delta = DELTA
            last = torch.where(m[:, t], delta + gamma * lam * last, torch.zeros((), dtype=r.dtype))
            adv[:, t] = last
        return adv, adv + v
'''


def test_an_uncatalogued_mistake_earns_what_a_catalogued_one_of_the_same_size_earns(tmp_path):
    """Points by behaviour, never by catalogue membership: GAE without its bootstrap term (δ = r − V, in no
    catalogue entry; named `gae_no_bootstrap` by its fitted family, grader/mistakes/families.py) and GAE bootstrapping from the same step (δ = r + γV_t − V_t, the catalogued
    `gae_wrong_timestep`) are the same code but for one term; both keep the gated 0.5 of
    test_gae_whiten_inputs_untouched, both lose test_gae_carries_no_gradient (its expected answer is the
    values, so a value mistake fails it, named by its value, catalogued or not), and score the same."""
    from grader.grade import grade_submission
    from grader.points import NO_WORK_DIAGNOSES

    solution = (REPO / "solutions" / "ex4_gae.py").read_text(encoding="utf-8")
    results = {}
    for label, delta in (("uncatalogued", "r[:, t] - v[:, t]"),
                         ("catalogued", "r[:, t] + gamma * v[:, t] - v[:, t]")):
        folder = tmp_path / label
        folder.mkdir()
        (folder / "ex4_gae.py").write_text(solution + _GAE_WITH_DELTA.replace("DELTA", delta), encoding="utf-8")
        results[label] = grade_submission(folder, exercises=["ex4_gae"], profile="fast")
    by_test = {label: {t.test: t for t in r.tests if t.exercise == "ex4_gae"} for label, r in results.items()}
    assert by_test["catalogued"]["test_gae_matches_reference"].diagnosis == "gae_wrong_timestep"
    uncatalogued = by_test["uncatalogued"]["test_gae_matches_reference"]
    assert uncatalogued.status == "failed" and uncatalogued.diagnosis not in NO_WORK_DIAGNOSES
    # No catalogue entry, but a fitted family (grader/mistakes/families.py) models it: named on evidence.
    assert uncatalogued.diagnosis == "gae_no_bootstrap"
    for label in results:
        t = by_test[label]["test_gae_whiten_inputs_untouched"]
        assert t.status == "passed" and t.score == t.max_score > 0, (label, t.output)
    tied = {label: by_test[label]["test_gae_carries_no_gradient"] for label in results}
    assert [(t.status, t.score) for t in tied.values()] == [("failed", 0.0)] * 2, tied
    assert (tied["catalogued"].diagnosis, tied["uncatalogued"].diagnosis) == ("gae_wrong_timestep", "gae_no_bootstrap")
    scores = {label: r.exercises["ex4_gae"].score for label, r in results.items()}
    assert scores["uncatalogued"] == scores["catalogued"] < 10, scores
