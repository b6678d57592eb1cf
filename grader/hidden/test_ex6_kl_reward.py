"""Hidden graders, exercise 6 (stop 5): per-token KL, KL-shaped rewards, the adaptive KL controller (Book §5.5-5.8)."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.mistakes.variants_ex4_ex6 import adaptive_kl_candidates, adaptive_kl_values
from grader.hidden.draws import draw_float, draw_int, draw_seed
from grader.hidden.support import compare, expect_inputs_untouched, hidden_batches, tol
from ppo_course.grading_kit.feedback import Mismatch, expect_numbers_close, snapshot
from ppo_course.grading_kit.inputs import Batch, grading_settings, randn

EXERCISE = "ex6_kl_reward"
KIND = "hidden"


def _kl_case(batch: Batch):
    """(logp, ref_logp, mask): negative log-probs a few tenths apart, junk at padding."""
    logp = batch.data(1, 0.5) - 1.5
    ref_logp = batch.data(2, 0.5) - 1.5
    return logp, ref_logp, batch.mask()


def _scores(batch: Batch) -> torch.Tensor:
    return randn((batch.B,), batch.gen(3), batch.dtype, 3.0)


@grading_settings(max_examples=25, shrink=False)
@given(batch=hidden_batches())
def test_per_token_kl_matches_reference(student, reference, batch):
    """logp − ref_logp on real tokens and exactly 0 on padding (all positions compared)."""
    t = tol(batch.dtype, 20.0)
    compare(student, reference, "per_token_kl", _kl_case(batch), rtol=t, atol=t)


@grading_settings(max_examples=25, shrink=False)
@given(batch=hidden_batches(), kl_coef=st.sampled_from([0.02, 0.1, 0.5]))
def test_shaped_rewards_per_token(student, reference, batch, kl_coef):
    """placement="per_token": −kl_coef·kl on real tokens, the score added on the last real one, 0 on padding."""
    logp, ref_logp, mask = _kl_case(batch)
    t = tol(batch.dtype, 10.0)
    compare(student, reference, "kl_shaped_rewards", (_scores(batch), logp, ref_logp, mask),
            {"kl_coef": kl_coef, "placement": "per_token"}, rtol=t, atol=t)


@grading_settings(max_examples=25, shrink=False)
@given(batch=hidden_batches(), kl_coef=st.sampled_from([0.05, 0.3]))
def test_shaped_rewards_last_token(student, reference, batch, kl_coef):
    """placement="last_token": score − kl_coef·(the row's mean KL) on the last real token, 0 elsewhere."""
    logp, ref_logp, mask = _kl_case(batch)
    t = tol(batch.dtype, 10.0)
    compare(student, reference, "kl_shaped_rewards", (_scores(batch), logp, ref_logp, mask),
            {"kl_coef": kl_coef, "placement": "last_token"}, rtol=t, atol=t)


def test_shaped_rewards_defaults_and_positional(student, reference):
    """Defaults (kl_coef 0.05, per_token) and positional (0.2, "last_token"); full and one-token rows. Then float32
    logp with float64 scores, and with a float64 mask: the KL and the rewards keep logp's dtype (the docstring's
    "dtype/device of logp")."""
    batch = Batch(4, 5, (5, 1, 3, 2), "int", "float64", draw_seed("ex6.shaped_defaults"))
    logp, ref_logp, mask = _kl_case(batch)
    scores = _scores(batch)
    compare(student, reference, "kl_shaped_rewards", (scores, logp, ref_logp, mask), rtol=1e-9, atol=1e-9,
            what="kl_shaped_rewards(...) with defaults")
    compare(student, reference, "kl_shaped_rewards", (scores, logp, ref_logp, mask, 0.2, "last_token"),
            rtol=1e-9, atol=1e-9, what="kl_shaped_rewards(..., 0.2, 'last_token')")
    t = tol(torch.float32, 10.0)
    for placement in ("per_token", "last_token"):
        compare(student, reference, "kl_shaped_rewards", (scores, logp.float(), ref_logp.float(), mask, 0.2, placement),
                rtol=t, atol=t, what=f"kl_shaped_rewards(float64 scores, float32 logp, ..., {placement!r})")
    # A float64 mask beside float32 log-probs decides nothing either ("mask: bool/int/float").
    compare(student, reference, "per_token_kl", (logp.float(), ref_logp.float(), mask.double()), rtol=t, atol=t,
            what="per_token_kl(float32 logp, float32 ref_logp, float64 mask)")
    compare(student, reference, "kl_shaped_rewards", (scores.float(), logp.float(), ref_logp.float(), mask.double()),
            rtol=t, atol=t, what="kl_shaped_rewards(float32 scores and logp, float64 mask)")


def test_kl_outputs_carry_no_gradient(student, reference):
    """per_token_kl and kl_shaped_rewards return no graph into logp, ref_logp or the scores (they are rewards,
    not losses: "detached"; a score that keeps its graph would put the reward model in the policy's loss): with
    the inputs derived from one leaf θ and the output multiplied by a path of θ (`grader.hidden.tied`),
    d/dθ Σ out·(Pθ + w) is Pᵀ·out, the reference's values; an output that carries a graph adds a term."""
    from grader.hidden.tied import expect_tied_grad, tie_plan

    batch = Batch(2, 4, (4, 2), "float", "float64", draw_seed("ex6.no_gradient"))
    logp, ref_logp, mask = _kl_case(batch)
    scores = _scores(batch)
    for name, args, of in (("per_token_kl", (logp, ref_logp, mask), {"logp": logp, "ref_logp": ref_logp}),
                           ("kl_shaped_rewards", (scores, logp, ref_logp, mask),
                            {"scores": scores, "logp": logp, "ref_logp": ref_logp})):
        tie = tie_plan(f"ex6.no_gradient.{name}", of, [(None, (2, 4), True)], head_mask=mask)
        # The values first, on the real positions the tied answer (Pᵀ·out over real positions) is made of: a
        # value mistake there is named as such, not through the tied gradient; padding is the value tests' part.
        compare(student, reference, name, args, rtol=tol(batch.dtype, 5.0), atol=tol(batch.dtype, 5.0), mask=mask)
        # float64 differences and one product per position: exact to ~1e-15.
        expect_tied_grad(student, reference, name, args, {}, tie, constants=tuple(of),
                         diagnosis="rewards_keep_gradient", what=f"{name}(...)")


# (current_kl, n_steps) sequences: far above target (clip +0.2), below (clip −0.2), inside (no clip), at the
# target, below. The hand case's structure; the numbers are drawn per grader version (`_updates`).
UPDATES = [(30.0, 64), (0.5, 128), (7.2, 256), (6.0, 32), (2.0, 512)]


def _updates(target: float, label: str) -> list[tuple[float, int]]:
    """Five (current_kl, n_steps) around `target` with UPDATES' structure, drawn from the grader's secret."""
    def n(k: int) -> int:
        return 32 * draw_int(f"{label}.n{k}", 1, 16)
    return [(target * draw_float(f"{label}.far", 3.0, 6.0, 30), n(0)),
            (target * draw_float(f"{label}.low", 0.02, 0.5, 48), n(1)),
            (target * draw_float(f"{label}.inside", 1.01, 1.19, 18), n(2)),
            (target, n(3)),
            (target * draw_float(f"{label}.below", 0.3, 0.79, 49), n(4))]


def _controller_values(student, init, target, horizon, updates, positional: bool):
    ctl = student.new("AdaptiveKLController", init, target, horizon) if positional else \
        student.new("AdaptiveKLController", init_kl_coef=init, target=target, horizon=horizon)
    values = []
    for kl, n in updates:
        ctl.update(kl, n)
        values.append(snapshot(ctl.value))
    return values


def test_adaptive_kl_controller(student):
    """value ← value·(1 + clip(kl/target − 1, ±0.2)·n_steps/horizon) over five updates (TRL)."""
    settings = ((False, (draw_float("ex6.kl_ctl.init0", 0.05, 0.2, 15), draw_float("ex6.kl_ctl.target0", 3.0, 5.0, 20),
                         100 * draw_int("ex6.kl_ctl.horizon0", 5, 20))),
                (True, (draw_float("ex6.kl_ctl.init1", 0.02, 0.08, 6), draw_float("ex6.kl_ctl.target1", 5.0, 8.0, 30),
                        100 * draw_int("ex6.kl_ctl.horizon1", 3, 10))))
    for k, (positional, (init, target, horizon)) in enumerate(settings):
        updates = _updates(target, f"ex6.kl_ctl.updates{k}")
        got = _controller_values(student, init, target, horizon, updates, positional)
        want = torch.tensor(adaptive_kl_values(init, target, horizon, updates), dtype=torch.float64)
        candidates = adaptive_kl_candidates(init, target, horizon, updates)
        # Five products of factors near 1 in float64: 1e-12 relative is far above rounding.
        expect_numbers_close(got, want, rtol=1e-9, atol=1e-12, what="AdaptiveKLController.value after each update",
                             candidates=candidates)


def _value_stays_a_float(student) -> None:
    """update() with a 0-dim tensor KL ("float or 0-dim tensor") leaves ``value`` a Python float."""
    ctl = student.new("AdaptiveKLController", 0.05, 6.0, 10000)
    ctl.update(torch.tensor(6.0 * draw_float("ex6.kl_ctl.tensor_kl", 1.01, 1.19, 18), dtype=torch.float64), 64)
    value = ctl.value
    if not isinstance(value, float):
        raise Mismatch("wrong_type", f"value is a {type(value).__name__}", "AdaptiveKLController.value after "
                       "update(a 0-dim tensor KL, 64): keep it a Python float")


def test_adaptive_kl_defaults(student, reference):
    """AdaptiveKLController() starts at 0.05 with target 6.0 and horizon 10000; update() with a 0-dim tensor KL
    ("float or 0-dim tensor") leaves value a Python float."""
    ctl = student.new("AdaptiveKLController")
    start = snapshot(ctl.value)
    # kl ≥ 7.5 (drawn): e = clip(kl/6 − 1) = 0.2 -> value·(1 + 0.2·n/10000); kl and n drawn per grader version.
    kl, n = draw_float("ex6.kl_defaults.kl", 7.5, 18.0, 42), 10 * draw_int("ex6.kl_defaults.n", 5, 50)
    ctl.update(kl, n)
    ref = reference.AdaptiveKLController()
    want = torch.tensor([ref.value, ref.update(kl, n)], dtype=torch.float64)
    expect_numbers_close([start, ctl.value], want, rtol=1e-12, atol=1e-15,
                         what="AdaptiveKLController() defaults (the value at the start and after update())",
                         candidates=adaptive_kl_candidates(0.05, 6.0, 10000, [(kl, n)], start=True))
    _value_stays_a_float(student)


def test_kl_inputs_untouched(student, error_name):
    """per_token_kl and kl_shaped_rewards modify none of their inputs in place."""
    batch = Batch(2, 5, (5, 2), "float", "float64", draw_seed("ex6.inputs_untouched"))
    logp, ref_logp, mask = _kl_case(batch)
    expect_inputs_untouched(student, "per_token_kl", (logp, ref_logp, mask), {}, ("logp", "ref_logp"), error_name)
    expect_inputs_untouched(student, "kl_shaped_rewards", (_scores(batch), logp, ref_logp, mask),
                            {"placement": "last_token"}, ("scores", "logp", "ref_logp"), error_name)


def test_kl_reward_rejects_malformed_input(student, error_name):
    """(0.25 points, once the values are computed) The docstrings' ValueErrors: per_token_kl's shapes differ; kl_shaped_rewards with
    an unknown placement, scores not [batch] or token shapes that differ; a controller with target or
    horizon ≤ 0."""
    from grader.hidden.documented_errors import expect_value_errors

    x = -torch.rand(2, 3, dtype=torch.float64)
    mask = torch.ones(2, 3, dtype=torch.bool)
    scores = torch.randn(2, dtype=torch.float64)
    expect_value_errors({"ref_logp of another shape": lambda: student.per_token_kl(x, x[:, :2], mask)}, error_name,
                        "per_token_kl")
    expect_value_errors({"unknown placement": lambda: student.kl_shaped_rewards(scores, x, x, mask, 0.1, "middle"),
                         "scores of shape [B, 1]": lambda: student.kl_shaped_rewards(scores[:, None], x, x, mask),
                         "ref_logp of another shape": lambda: student.kl_shaped_rewards(scores, x, x[:, :2], mask)},
                        error_name, "kl_shaped_rewards")
    expect_value_errors({"target 0": lambda: student.new("AdaptiveKLController", 0.05, 0.0, 10000.0),
                         "horizon -1": lambda: student.new("AdaptiveKLController", 0.05, 6.0, -1.0)},
                        error_name, "AdaptiveKLController")
