"""A diagnosis names a mistake only on evidence (grader/hidden/evidence.py).

Mistakes that coincide with a catalogued one on a small failing input without being it were named as that
catalogued mistake (mutant hunt, session 6): min for positive advantages and max for negative ones was
`ignores_hyperparameter` / `surrogate_not_clipped`; an entropy normalised over the time axis was
`value_clip_around_returns` / `wrong_clip_bounds` inside ppo_loss; a ppo_loss whose entropy bonus sees
detached logits was `entropy_from_sampled_token` (the same gradient, another value). A name now needs its
model to reproduce the student's output on the failing input AND on a second, rich probe (values), or the
student's value too (a name read from a gradient); otherwise the test says `wrong_value`.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

MIN_MAX_BY_SIGN = '''

def clipped_surrogate_loss(logp_new, logp_old, advantages, mask, clip_eps=0.2):
    if len({t.shape for t in (logp_new, logp_old, advantages, mask)}) != 1:
        raise ValueError("the four tensors must share one shape")
    adv = advantages.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    a, b = ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv
    obj = torch.where(adv >= 0, torch.min(a, b), torch.max(a, b))
    m = mask.bool()
    return -torch.where(m, obj, torch.zeros((), dtype=obj.dtype)).sum() / m.sum()
'''

ENTROPY_OVER_TIME = '''

def entropy_from_logits(logits, mask):
    if logits.dim() != 3 or mask.shape != logits.shape[:2]:
        raise ValueError("need logits [B, T, V] and mask [B, T]")
    logp = torch.log_softmax(logits, dim=1)
    return masked_mean(-(logp.exp() * logp).sum(dim=-1), mask)
'''

#: The names these mistakes got before, none of which is theirs.
WRONG_BEFORE = {"ignores_hyperparameter", "surrogate_not_clipped", "value_clip_around_returns", "wrong_clip_bounds",
                "entropy_from_sampled_token", "clipped_advantage", "per_row_sum"}


def test_lookalike_mistakes_are_not_named_as_catalogued_ones(tmp_path):
    from grader.grade import grade_submission

    for stem, extra in (("ex2_clipped_loss", MIN_MAX_BY_SIGN), ("ex3_full_loss", ENTROPY_OVER_TIME)):
        source = (REPO / "solutions" / f"{stem}.py").read_text(encoding="utf-8")
        (tmp_path / f"{stem}.py").write_text(source + extra, encoding="utf-8")
    result = grade_submission(tmp_path, exercises=["ex2_clipped_loss", "ex3_full_loss"], profile="fast")
    failed = [(t.exercise, t.test, t.diagnosis) for t in result.tests if t.kind == "hidden" and t.status == "failed"]
    assert {e for e, _, _ in failed} == {"ex2_clipped_loss", "ex3_full_loss"}, failed  # both lose points
    wrong = [f for f in failed if f[2] in WRONG_BEFORE]
    assert not wrong, f"named as a mistake they are not: {wrong}"
    # An unnamed mistake that computes keeps the gated points (points by behaviour, not by name); the
    # constants' tied gradient compares the loss's value first, so a value mistake fails it, not wrongly named.
    gated = {t.test: t for t in result.tests if t.test == "test_surrogate_inputs_untouched"}
    assert gated and all(t.score == t.max_score > 0 for t in gated.values()), {k: t.output for k, t in gated.items()}
    tied = [t for t in result.tests if t.test == "test_surrogate_no_gradient_into_constants"]
    assert all(t.status == "failed" and t.diagnosis not in WRONG_BEFORE for t in tied), tied
