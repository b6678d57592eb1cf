"""``ppo_course.training.alarms``: each danger sign on hand-written step records (no training run)."""

from __future__ import annotations

import math

from ppo_course.training.alarms import CLIP_STUCK_STEPS, Alarms

# A healthy step of the reference's toy run (its step 5, rounded): the values every record starts from.
HEALTHY = {"ppo/mean_scores": 0.12, "objective/kl": 0.58, "ppo/policy/entropy": 1.75, "ppo/policy/clipfrac": 0.02,
           "ppo/loss/value": 2.3}


def _row(step: int, **changes: float) -> dict[str, float]:
    row = {"step": float(step), **HEALTHY}
    row.update({k.replace("__", "/"): v for k, v in changes.items()})
    return row


def _kinds(alarms: Alarms, rows: list[dict[str, float]]) -> list[tuple[int, str]]:
    return [(a.step, a.kind) for row in rows for a in alarms.check(row)]


def test_a_healthy_run_raises_nothing():
    alarms = Alarms(target_kl=6.0, reference=[_row(s) for s in range(1, 11)])
    assert _kinds(alarms, [_row(s) for s in range(1, 11)]) == []


def test_nan_and_inf_stop_the_run_at_their_step():
    got = Alarms(6.0).check(_row(3, **{"ppo__policy__entropy": math.nan}))
    assert [(a.step, a.kind, a.statistic, a.stops) for a in got] == [(3, "nan", "ppo/policy/entropy", True)]
    assert Alarms(6.0).check(_row(1, **{"ppo__loss__value": math.inf}))[0].kind == "nan"


def test_a_kl_blow_up_is_judged_against_the_target_and_the_reference_run():
    # 5 × target_kl = 30 nats; with the reference at 20 nats that step, the bound is 3 × 20 + 6 = 66.
    assert _kinds(Alarms(6.0), [_row(1, objective__kl=31.0)]) == [(1, "kl_blowup")]
    assert _kinds(Alarms(6.0, [_row(1, objective__kl=20.0)]), [_row(1, objective__kl=31.0)]) == [(1, "departs")]
    assert _kinds(Alarms(6.0, [_row(1, objective__kl=20.0)]), [_row(1, objective__kl=67.0)]) == [(1, "kl_blowup")]
    assert _kinds(Alarms(6.0), [_row(1, objective__kl=-6.5)]) == [(1, "kl_blowup")]  # a KL far below 0


def test_the_value_loss_blows_up_past_ten_times_the_reference():
    reference = [_row(1), _row(2, ppo__loss__value=2.0)]
    assert _kinds(Alarms(6.0, reference), [_row(1), _row(2, ppo__loss__value=19.0)]) == [(2, "departs")]
    assert _kinds(Alarms(6.0, reference), [_row(1), _row(2, ppo__loss__value=21.0)]) == [(2, "value_blowup")]


def test_entropy_collapse_is_a_quarter_of_the_first_step():
    rows = [_row(1, ppo__policy__entropy=1.6), _row(2, ppo__policy__entropy=0.41), _row(3, ppo__policy__entropy=0.39)]
    assert _kinds(Alarms(6.0), rows) == [(3, "entropy_collapse")]  # 0.25 × 1.6 = 0.4


def test_a_clip_fraction_stuck_at_zero_or_one_stops_after_five_steps():
    rows = [_row(s, ppo__policy__clipfrac=0.0) for s in range(1, CLIP_STUCK_STEPS + 1)]
    assert _kinds(Alarms(6.0), rows) == [(CLIP_STUCK_STEPS, "clip_stuck_0")]
    rows = [_row(s, ppo__policy__clipfrac=0.95) for s in range(1, CLIP_STUCK_STEPS + 1)]
    assert _kinds(Alarms(6.0), rows) == [(CLIP_STUCK_STEPS, "clip_stuck_1")]
    # A reference run whose clip fraction is 0 too: not the student's doing, so no alarm.
    reference = [_row(s, ppo__policy__clipfrac=0.0) for s in range(1, CLIP_STUCK_STEPS + 1)]
    rows = [_row(s, ppo__policy__clipfrac=0.0) for s in range(1, CLIP_STUCK_STEPS + 1)]
    assert _kinds(Alarms(6.0, reference), rows) == []


def test_the_first_departure_from_the_reference_is_flagged_once_and_does_not_stop():
    reference = [_row(s) for s in range(1, 4)]
    alarms = Alarms(6.0, reference)
    # 1e-4 + 1e-3 × 0.12 = 2.2e-4: a difference of 2e-4 is rounding, 3e-4 departs.
    assert alarms.check(_row(1, ppo__mean_scores=0.12 + 2e-4)) == []
    got = alarms.check(_row(2, ppo__mean_scores=0.12 + 3e-4))
    assert [(a.kind, a.statistic, a.stops) for a in got] == [("departs", "ppo/mean_scores", False)]
    assert alarms.check(_row(3, ppo__mean_scores=0.5)) == []
