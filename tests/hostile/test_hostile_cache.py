"""Hostile students against the per-version caches of a warm grader (`grader.hidden.cache`).

A warm worker computes the reference's answers on the hidden inputs once and
hands out copies to every later student. ``a85``: a student whose ex1/ex2
functions compute the right answer, then scribble over every tensor they were
given (in place, through the shared-memory argument channel), keep references to
them, and return an alias of an input (``logp_new`` itself, a view of
``logits``), so that anything the grader later reads back through those objects
(or caches keyed on them) would be wrong. The classmate graded next in the same
worker (the honest solutions) must get byte-for-byte the results it gets alone
in a fresh batch (timings aside).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hostile_helpers import SOLUTIONS, stable_results
from hostile_guards import guarded_batch

pytestmark = pytest.mark.xdist_group("hostile")

EXERCISES = ["ex1_ratio", "ex2_clipped_loss"]

A85_TAIL = '''

_KEPT = []


def _scribble(*values):
    for v in values:
        if isinstance(v, torch.Tensor):
            _KEPT.append(v)
            try:
                with torch.no_grad():
                    v.view(-1)[:1].fill_(float("nan")) if v.is_floating_point() else v.view(-1)[:1].fill_(0)
            except Exception:
                pass


_honest_logprobs, _honest_ratio = logprobs_from_logits, probability_ratio


def logprobs_from_logits(logits, tokens):
    out = _honest_logprobs(logits, tokens)
    _scribble(logits, tokens, *_KEPT)
    return out


def probability_ratio(logp_new, logp_old):
    out = _honest_ratio(logp_new, logp_old)
    _scribble(logp_old, *_KEPT)
    with torch.no_grad():
        logp_new.copy_(out)  # the answer written into the input, and returned as that same tensor
    return logp_new
'''

A85_EX2_TAIL = '''

_honest_loss = clipped_surrogate_loss


def clipped_surrogate_loss(*args, **kwargs):
    out = _honest_loss(*args, **kwargs)
    with torch.no_grad():
        for v in list(args) + list(kwargs.values()):
            if isinstance(v, torch.Tensor) and v.is_floating_point():
                v.mul_(-3.0)
    return out
'''






def _batch(root: Path, students: dict[str, dict[str, str]]) -> dict[str, str]:
    subs, out = root / "submissions", root / "out"
    for sid, mods in students.items():
        (subs / sid).mkdir(parents=True)
        for name, text in mods.items():
            (subs / sid / name).write_text(text, encoding="utf-8")
    guarded_batch(subs, out, [subs / sid for sid in students if sid.endswith("victim")], EXERCISES)
    return {sid: stable_results(json.loads((out / sid / "results.json").read_text())) + (out / sid / "feedback.md").read_text()
            for sid in students}


@pytest.mark.slow
def test_a85_a_scribbling_classmate_changes_no_cached_answer(cohort_root):
    honest = {f"{s}.py": (SOLUTIONS / f"{s}.py").read_text(encoding="utf-8") for s in EXERCISES}
    attacker = {"ex1_ratio.py": honest["ex1_ratio.py"] + A85_TAIL,
                "ex2_clipped_loss.py": honest["ex2_clipped_loss.py"] + A85_EX2_TAIL}
    alone = _batch(cohort_root / "alone", {"2-victim": honest})
    after = _batch(cohort_root / "after", {"1-attacker": attacker, "2-victim": honest})
    assert after["2-victim"] == alone["2-victim"]
    victim = json.loads(alone["2-victim"].split("\n}", 1)[0] + "\n}")
    assert victim["score"] == victim["extra_data"]["max_score"], "the honest solutions score full marks"
    attacked = json.loads(after["1-attacker"].split("\n}", 1)[0] + "\n}")
    assert attacked["score"] < victim["score"], "the scribbling is caught (in-place changes of inputs)"
