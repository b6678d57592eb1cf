"""Public tests, exercise 2 (stop 2): the clipped surrogate loss (Book eqs. 5.1, 5.9)."""

from __future__ import annotations

import torch
from hypothesis import given

from ppo_course.grading_kit.compare import close, close_scalar
from ppo_course.grading_kit.feedback import Mismatch, expect_close
from ppo_course.grading_kit.inputs import batches, grading_settings, show
from ppo_course.grading_kit.known_mistakes import known_mistakes
from ppo_course.grading_kit.public_probe import Probe

EXERCISE = "ex2_clipped_loss"
KIND = "public"

# The hand case: two rows, ratios r and advantages A chosen away from the kinks (r ≠ 1 ± ε).
#   row 0 (4 real tokens + 1 padding): r = (1.5, 0.5, 0.5, 1.1), A = (+1, -1, +1, +2)
#   row 1 (2 real tokens + 3 padding): r = (1.0, 2.0),           A = (+3, -0.5)
# With ε = 0.2, min(r·A, clip(r, 0.8, 1.2)·A) per token:
#   row 0: min(1.5, 1.2) = 1.2 | min(-0.5, -0.8) = -0.8 | min(0.5, 0.8) = 0.5 | min(2.2, 2.2) = 2.2
#   row 1: min(3, 3) = 3       | min(-1.0, -0.6) = -1.0
# token-level mean over the 6 real tokens: (1.2 - 0.8 + 0.5 + 2.2 + 3 - 1) / 6 = 5.1 / 6 = 0.85,
# so the loss is -0.85.
RATIOS = [[1.5, 0.5, 0.5, 1.1, 1.0], [1.0, 2.0, 1.0, 1.0, 1.0]]
ADVANTAGES = [[1.0, -1.0, 1.0, 2.0, 7.0], [3.0, -0.5, -9.0, 4.0, 11.0]]  # padding holds junk
LENGTHS = [4, 2]


def _hand_inputs(mask_kind: str = "bool"):
    logp_old = torch.tensor([[-1.0, -2.0, -0.5, -3.0, -4.0], [-0.7, -1.3, -2.2, -0.1, -5.0]], dtype=torch.float64)
    log_r = torch.tensor(RATIOS, dtype=torch.float64).log()
    log_r[0, 4], log_r[1, 2:] = 3.0, torch.tensor([-4.0, 5.0, 2.5], dtype=torch.float64)  # junk ratios at padding
    logp_new = logp_old + log_r
    advantages = torch.tensor(ADVANTAGES, dtype=torch.float64)
    mask = torch.arange(5)[None, :] < torch.tensor(LENGTHS)[:, None]
    mask = {"bool": mask, "int": mask.long(), "float": mask.double()}[mask_kind]
    return logp_new, logp_old, advantages, mask


# What known mistakes give on the hand case (same arithmetic, see the comment above):
#   max instead of min: (1.5 - 0.5 + 0.8 + 2.2 + 3 - 0.6) / 6 = 6.4/6  -> -1.0667
#   sign flipped: +0.85;  no clip at all (-mean(r·A)): 5.7/6 -> -0.95
#   mean of per-row means: -(3.1/4 + 2.0/2)/2 = -0.8875;  padding in the mean: -5.1/10 = -0.51
#   clip(r·A) instead of clip(r)·A: (1.2 - 0.5 + 0.5 + 1.2 + 1.2 - 1.0)/6 = 2.6/6 -> -0.4333
#   ratio inverted (exp(old - new)): -0.71414
HAND_MISTAKES = [
    ("max_instead_of_min", -6.4 / 6),
    ("loss_sign_flipped", 0.85),
    ("surrogate_not_clipped", -0.95),
    ("per_row_mean", -0.8875),
    ("padding_in_mean", -0.51),
    ("clipped_advantage", -2.6 / 6),
    ("ratio_inverted", -0.7141414141414142),
]


# The catalogued mistakes on these fixed inputs (ppo_course/grading_kit/known_mistakes.py): the same
# variants the hidden tests try, so that a mistake gets one name everywhere.
MISTAKE_CASES = {
    **{f"ex2.hand.{kind}": ("clipped_surrogate_loss", lambda kind=kind: (_hand_inputs(kind), {}), "output")
       for kind in ("bool", "int", "float")},
    "ex2.clip_eps_0.3": ("clipped_surrogate_loss", lambda: (_hand_inputs(), {"clip_eps": 0.3}), "output"),
    "ex2.grad.logp_new": ("clipped_surrogate_loss", lambda: (_hand_inputs(), {}), "grad:logp_new"),
}


def _scalar(x: float) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float64)


def test_surrogate_hand_case(student):
    """-masked_mean(min(r·A, clip(r, 1-ε, 1+ε)·A)) on the hand case: -0.85 (Book eq. 5.1)."""
    for mask_kind in ("bool", "int", "float"):
        args = _hand_inputs(mask_kind)
        got = student.clipped_surrogate_loss(*args)
        # float64 sums of 6 terms: 1e-10 is far above rounding and far below any mistake.
        try:
            expect_close(got, _scalar(-0.85), rtol=1e-10, atol=1e-10,
                         what=f"clipped_surrogate_loss(hand case, {mask_kind} mask)",
                         probe=Probe(student, f"ex2.hand.{mask_kind}", MISTAKE_CASES),
                         candidates=[(d, _scalar(v)) for d, v in HAND_MISTAKES] + known_mistakes(f"ex2.hand.{mask_kind}"),
                         inputs=f"r={RATIOS}, A={ADVANTAGES}, lengths={LENGTHS}, clip_eps=0.2")
        except Mismatch as exc:
            # Right with the bool mask (checked first), wrong with the same mask as int or float: the mask's dtype.
            if mask_kind != "bool" and exc.diagnosis == "wrong_value":
                raise Mismatch("mask_dtype_unsupported", exc.detail, exc.what) from None
            raise


def test_surrogate_uses_clip_eps(student):
    """clip_eps=0.3 (keyword) changes the clip: -5.3/6 on the hand case."""
    # ε = 0.3: row 0 -> min(1.5, 1.3) = 1.3 | min(-0.5, -0.7) = -0.7 | 0.5 | 2.2; row 1 -> 3 | -1.0
    # (1.3 - 0.7 + 0.5 + 2.2 + 3 - 1) / 6 = 5.3 / 6.  Ignoring clip_eps gives the ε = 0.2 answer, -0.85;
    # the max instead of the min gives (1.5 - 0.5 + 0.7 + 2.2 + 3 - 0.65) / 6 = 6.25 / 6.
    got = student.clipped_surrogate_loss(*_hand_inputs(), clip_eps=0.3)
    expect_close(got, _scalar(-5.3 / 6), rtol=1e-10, atol=1e-10, what="clipped_surrogate_loss(..., clip_eps=0.3)",
                 probe=Probe(student, "ex2.clip_eps_0.3", MISTAKE_CASES),
                 candidates=[("ignores_hyperparameter", _scalar(-0.85)), ("max_instead_of_min", _scalar(-6.25 / 6)),
                             ("loss_sign_flipped", _scalar(5.3 / 6)), *known_mistakes("ex2.clip_eps_0.3")],
                 inputs="the hand case with clip_eps=0.3")


def test_surrogate_gradient_cases(student):
    """The four gradient cases of Book eq. 5.9; no gradient into the advantages or logp_old."""
    logp_new, logp_old, advantages, mask = _hand_inputs()
    out, grads = student.call_with_grad("clipped_surrogate_loss", (logp_new, logp_old, advantages, mask), {},
                                        wrt=("logp_new", "logp_old", "advantages"))
    g = grads["logp_new"]
    if g is None:
        raise Mismatch("ratio_detached", "no gradient reached logp_new", "d loss / d logp_new")
    # d(-r·A/N)/d logp_new = -A·r/N where the gradient flows, 0 where the clip binds (N = 6):
    #   row 0: A>0, r=1.5 ≥ 1.2 -> 0 | A<0, r=0.5 ≤ 0.8 -> 0 | A>0, r=0.5 < 1.2 -> -0.5/6
    #          | A>0, r=1.1 < 1.2 -> -2.2/6 | padding -> 0
    #   row 1: A>0, r=1 < 1.2 -> -3/6 | A<0, r=2 > 0.8 -> +1/6 | padding -> 0
    want = torch.tensor([[0.0, 0.0, -0.5 / 6, -2.2 / 6, 0.0], [-3.0 / 6, 1.0 / 6, 0.0, 0.0, 0.0]], dtype=torch.float64)
    # The objective instead of the loss (sign flipped) gives -want.
    expect_close(g, want, rtol=1e-10, atol=1e-10, what="d loss / d logp_new (Book eq. 5.9)",
                 candidates=[("ratio_detached", torch.zeros(2, 5, dtype=torch.float64)), ("loss_sign_flipped", -want),
                             *known_mistakes("ex2.grad.logp_new")],
                 inputs="the hand case; padding must get gradient 0 too")
    # The constants, by value: logp_new, logp_old and the advantages all move with one scalar θ (+θ, +2θ, +3θ);
    # with the constants detached, dL/dθ = Σ d loss / d logp_new = (−0.5 − 2.2 − 3 + 1)/6 = −4.7/6 (the sum of
    # `want`), and a gradient into logp_old or the advantages adds a term of its own.
    args = (logp_new, logp_old, advantages, mask)
    if not close_scalar(_tied_grad(student, args, ("logp_new", "logp_old", "advantages")), -4.7 / 6, 1e-10, 1e-10):
        for name in ("advantages", "logp_old"):
            if not close_scalar(_tied_grad(student, args, ("logp_new", name)), -4.7 / 6, 1e-10, 1e-10):
                raise Mismatch("gradient_into_constants", f"gradient reached `{name}`", f"d loss / d {name}")
        raise Mismatch("wrong_value", "with logp_new, logp_old and the advantages moved together",
                       "d loss / d θ (logp_new + θ, logp_old + 2θ, advantages + 3θ)")


def _tied_grad(student, args: tuple, names: tuple[str, ...]) -> float:
    """d loss / d θ with the named inputs moved by θ times 1 (logp_new), 2 (logp_old), 3 (advantages)."""
    step = {"logp_new": 1.0, "logp_old": 2.0, "advantages": 3.0}
    tie = {"theta": torch.zeros(1, dtype=torch.float64),
           "maps": {n: torch.full((args[0].numel(), 1), step[n], dtype=torch.float64) for n in names},
           "heads": [[None, torch.zeros(1, 1, dtype=torch.float64), torch.ones(1, dtype=torch.float64)]]}
    _, grads = student.call_with_grad("clipped_surrogate_loss", args, {}, tie=tie)
    g = grads.get("theta")
    return 0.0 if g is None else float(g.reshape(-1)[0])  # None: no gradient reached θ


def _at_ratio_one(advantages: torch.Tensor, m: torch.Tensor, dtype: torch.dtype) -> list:
    """What the catalogued mistakes give at r = 1 (ε = 0.2), by hand: min(A, clip(1)·A) = A for the right loss.

    A flipped sign: +masked_mean(A); padding in the mean: Σ_real A / (B·T), Σ_all A / n_real (junk in the
    numerator) or a plain mean over all B·T entries, junk and all; per-row means or sums averaged over rows; clamp(r, 1.2, 0.8) (bounds swapped) = 0.8, so
    min(A, 0.8·A); the advantage clipped instead of r: min(A, clip(A, 0.8, 1.2)) or clip(A, 0.8, 1.2).
    """
    real = torch.where(m, advantages, 0)
    n = m.sum()

    def mm(x):
        return -(torch.where(m, x, 0).sum() / n).to(dtype)

    return [("loss_sign_flipped", -mm(advantages)),
            ("padding_in_mean", -(real.sum() / m.numel()).to(dtype)),
            ("padding_in_mean", -(advantages.sum() / n).to(dtype)),
            ("padding_in_mean", -advantages.mean().to(dtype)),
            ("per_row_mean", -(real.sum(1) / m.sum(1)).mean().to(dtype)),
            ("per_row_sum", -real.sum(1).mean().to(dtype)),
            ("wrong_clip_bounds", mm(torch.minimum(advantages, 0.8 * advantages))),
            ("clipped_advantage", mm(torch.minimum(advantages, advantages.clamp(0.8, 1.2)))),
            ("clipped_advantage", mm(advantages.clamp(0.8, 1.2)))]


@grading_settings(max_examples=25, shrink=True)
@given(batch=batches())
def test_surrogate_properties(student, batch):
    """At r = 1 the loss is -masked_mean(A); padding junk never changes the loss."""
    advantages = batch.data(1, 2.0)
    logp = batch.data(2, 1.0) - 2.0
    mask = batch.mask()
    m = mask.bool()
    # r = 1 everywhere: min(A, clip(1)·A) = A, so the loss is minus the token-level mean of A.
    want = -(torch.where(m, advantages, 0).sum() / m.sum()).to(batch.dtype)
    # float32 sums of ≤ 28 terms of size ≤ 8: 1e-5 covers rounding.
    tol = 1e-5 if batch.dtype == torch.float32 else 1e-10
    got = student.clipped_surrogate_loss(logp, logp, advantages, mask)
    expect_close(got, want, rtol=tol, atol=tol, what="clipped_surrogate_loss(logp, logp, A, mask)",
                 candidates=_at_ratio_one(advantages, m, batch.dtype),
                 inputs=show(logp=logp, advantages=advantages, mask=mask))
    # Changing only the padding must not change the loss (the student's own two answers agree).
    shifted = torch.where(m, advantages, advantages + 13.0)
    logp_other = torch.where(m, logp, logp - 3.0)
    got2 = student.clipped_surrogate_loss(logp_other, logp, shifted, mask)
    if isinstance(got2, torch.Tensor) and isinstance(got, torch.Tensor) and not close(got2, got, rtol=tol, atol=tol):
        raise Mismatch("padding_in_mean", f"  loss {got.item():.6g} became {got2.item():.6g} when only padding changed\n"
                       f"  input: {show(advantages=advantages, mask=mask)}", "clipped_surrogate_loss with other junk at padding")
