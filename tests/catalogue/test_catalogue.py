"""The mistake catalogue against the hidden graders (issue 3, part 5).

Every buggy entry of `tests/catalogue/buggy/` is appended to the solution
module of its exercise and graded with `grader.grade.grade_submission` in the
fast profile; it must lose points on that exercise, and the diagnosis id the
entry expects must appear on at least one failed test. Every correct variant
of `tests/catalogue/correct/` must get full marks on its exercise.

The grading runs once per module (entries are packed several to a submission,
one per exercise; ex7 entries alone beside the solution's ex1-ex6), then the
kill rate is printed and written to `tests/catalogue/KILL_RATE.md` by
`catalogue_tool.write_kill_rate`. Entries the graders are known to miss are
listed in KNOWN_GAPS as strict xfails with the reason: they show up in every
run's summary and turn into failures ("XPASS(strict)") once the graders catch
them, so that the list cannot go stale.

One name per mistake (issue 21, item 12): the same grading run holds every
public and hidden test of the entry's exercise, so
`test_every_failing_test_names_the_mistake` checks, for every buggy entry of
exercises 1-7, that each failing test (public or hidden) names the entry's own
mistake (`DIAGNOSIS` or one of `ALSO`; for exercise 7 a stage id too), and that
the public tests name nothing the hidden tests do not.
"""

from __future__ import annotations

import os
import time

import pytest
import torch

import catalogue_tool

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("catalogue_grading")]

ENTRIES = catalogue_tool.load_entries()

# entry name -> why the hidden graders miss it today (reported to the lead; see KILL_RATE.md).
# Strict xfails: once a grader catches one, the test XPASSes, fails, and the line goes.
_GRAPH_FACT = ("a fact of the autograd graph, measured in the student's process, is feedback worth 0 (issue 31, "
               "class 1: no point rests on a measurement made where student code runs); still diagnosed: {}")
KNOWN_GAPS: dict[str, str] = {
    "ex5_rollout_buffer__stores_graph": _GRAPH_FACT.format("test_buffer_stores_detached"),
    "ex2_clipped_loss__unseen1_u12_torch_minimum_at_boundary": (
        "by decision: torch.minimum gives the solution's values everywhere and differs only in the gradient at "
        "r = 1 ± ε exactly (the tie splits it); the docstring's boundary-gradient promise is deliberately ungraded"),
    "ex2_clipped_loss__unseen2_v08_torch_minimum_at_boundary": (
        "by decision, as unseen1's u12: torch.minimum gives the solution's values everywhere and differs only in the "
        "gradient at r = 1 ± ε exactly (the tie splits it); the docstring's boundary-gradient promise is deliberately "
        "ungraded"),
}


_REPORT_PATH: dict[str, object] = {}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade the whole catalogue once; write KILL_RATE.md; return {entry name: Outcome}."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        started = time.perf_counter()
        outcomes = catalogue_tool.grade_entries(ENTRIES, tmp_path_factory.mktemp("catalogue"), profile="fast")
        seconds = time.perf_counter() - started
    finally:
        torch.set_num_threads(previous)
    # The committed KILL_RATE.md is refreshed on request only (PPO_COURSE_WRITE_KILL_RATE=1 or
    # `catalogue_tool.py grade`), so that a plain test run leaves the checkout clean.
    target = (catalogue_tool.HERE if os.environ.get("PPO_COURSE_WRITE_KILL_RATE") == "1"
              else tmp_path_factory.mktemp("kill_rate")) / "KILL_RATE.md"
    path = catalogue_tool.write_kill_rate(outcomes, ENTRIES, target, "fast", seconds)
    _REPORT_PATH["path"] = path
    print(f"\n{catalogue_tool.summary_line(outcomes)} ({seconds:.0f} s); see {path}")
    return {o.entry: o for o in outcomes}


def _params(kind):
    out = []
    for e in ENTRIES:
        if e.kind != kind:
            continue
        marks = [pytest.mark.xfail(reason=KNOWN_GAPS[e.name], strict=True)] if e.name in KNOWN_GAPS else []
        out.append(pytest.param(e, id=e.name, marks=marks))
    return out


@pytest.mark.parametrize("entry", _params("buggy"))
def test_buggy_entry_loses_points_with_its_diagnosis(entry, graded):
    """The exercise loses points, and a failed test names the expected diagnosis."""
    o = graded[entry.name]
    assert o.error is None, o.error
    assert o.lost_points, (f"{entry.name} ({entry.description}) got full marks "
                           f"{o.score:g}/{o.max_score:g} on {entry.exercise}: the graders do not catch it")
    assert o.diagnosed, (f"{entry.name} lost points ({o.score:g}/{o.max_score:g}) but no failed test names "
                         f"{entry.diagnosis!r}; failed tests {o.failed_tests} said {o.diagnoses_seen}")


@pytest.mark.parametrize("entry", _params("correct"))
def test_correct_variant_gets_full_marks(entry, graded):
    """A correct-but-different implementation scores the exercise's maximum."""
    o = graded[entry.name]
    assert o.error is None, o.error
    assert o.max_score > 0, f"{entry.exercise} has no points to earn (not graded: {o.exercise_status})"
    assert not o.lost_points, (f"{entry.name} is correct but scored {o.score:g}/{o.max_score:g}; "
                               f"failed tests {o.failed_tests}, diagnoses {o.diagnoses_seen}")


def test_kill_rate_report_written(graded):
    """KILL_RATE.md holds the counts of this very run (written by the tool, not by hand)."""
    text = _REPORT_PATH["path"].read_text(encoding="utf-8")
    buggy = [o for o in graded.values() if o.kind == "buggy"]
    killed = sum(o.lost_points and not o.error for o in buggy)
    assert f"**{killed} / {len(buggy)}**" in text
    for name in graded:
        assert f"`{name}`" in text


def test_ex7_mistakes_are_named_specifically(graded):
    """Issue 16's goal: at least 80% of the realistic ex7 mistakes get a specific and correct diagnosis, and
    no ex7 entry is named with a specific id that is not one of its mistakes (when in doubt, say less)."""
    ex7 = [o for o in graded.values() if o.kind == "buggy" and o.exercise == "ex7_ppo_step"]
    assert len(ex7) >= 25
    named = [o for o in ex7 if o.specific_and_correct]
    assert len(named) >= 0.8 * len(ex7), f"{len(named)}/{len(ex7)} named specifically and correctly"
    wrong = {o.entry: o.diagnoses_seen for o in ex7 if o.diagnosed and not o.specific_and_correct}
    assert not wrong, f"ex7 entries with a wrong specific diagnosis: {wrong}"


# Failing tests that are about another, real mistake every appended entry makes: the entry's replacement
# function drops the docstring's ValueError checks, which the 0.25-point tests (`*_rejects_*`) catch.
OTHER_MISTAKE_OF_EVERY_ENTRY = catalogue_tool.OTHER_MISTAKE_OF_EVERY_ENTRY
# Exercise 7: a step mistake the catalogue cannot name exactly is named by the stage where the step first departs
# from the reference (grader/mistakes/ppo_step_stages.py).
EX7_STAGE_IDS = frozenset(d for d in catalogue_tool.GENERIC_DIAGNOSES if d.startswith("ppo_step_stage_"))
# entry name -> why a failing test still names something else (strict xfails: fixed ones XPASS and fail).
NAMING_GAPS: dict[str, str] = {
    "ex4_gae__unseen1_u31_returns_reward_to_go": (
        "returns as the undiscounted reward-to-go: the returns tests name returns_not_a_plus_v, but "
        "test_gae_hand_case (public) and test_gae_no_bootstrap_past_last_token (hidden) say only the generic "
        "wrong_value (the advantages are right there; no variant reproduces a reward-to-go return)"),
}


def _naming_params():
    return [pytest.param(e, id=e.name, marks=[pytest.mark.xfail(reason=NAMING_GAPS[e.name], strict=True)]
                         if e.name in NAMING_GAPS else []) for e in ENTRIES if e.kind == "buggy"]


@pytest.mark.parametrize("entry", _naming_params())
def test_every_failing_test_names_the_mistake(entry, graded):
    """Every failing public and hidden test names the entry's mistake; public tests name nothing hidden ones don't."""
    o = graded[entry.name]
    assert o.error is None, o.error
    allowed = {entry.diagnosis, *entry.also}
    if entry.exercise == "ex7_ppo_step":
        allowed |= EX7_STAGE_IDS
    failures = [f for f in o.failures
                if not (f["diagnosis"] == OTHER_MISTAKE_OF_EVERY_ENTRY and "_reject" in f["test"])]
    wrong = [(f["kind"], f["test"], f["diagnosis"]) for f in failures if f["diagnosis"] not in allowed]
    assert not wrong, f"{entry.name} ({entry.diagnosis}): failing tests name something else: {wrong}"
    # The entry's own mistake named publicly is named by the hidden tests too. A second mistake of the entry (ALSO)
    # may show on one side's inputs only (ex2's renormalised advantages: NaN on a public one-token row).
    public = {f["diagnosis"] for f in failures if f["kind"] == "public"} - set(entry.also)
    hidden = {f["diagnosis"] for f in failures if f["kind"] == "hidden"}
    assert public <= hidden, (f"{entry.name}: the public tests name {sorted(public)}, the hidden tests "
                              f"{sorted(hidden)}")
