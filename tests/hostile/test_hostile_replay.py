"""Hostile students against hypothesis replay (`grader.hidden.hypothesis_replay`).

The hidden ``@given`` tests run on examples recorded once per grader version and
replayed; a submission must get the same results as under hypothesis itself.
``a87``: ex1's ``probability_ratio`` answers wrongly the first time it sees some
inputs and rightly on their re-run (hypothesis' "final" run: a flaky failure); ex2's
loss is wrong on the examples whose first tensor hashes to 0 mod 5 (a failure
first met deep in the sequence). Graded with replay and with
``PPO_COURSE_NO_HYPOTHESIS_REPLAY`` (hypothesis runs every test): the same
results.json, timings aside. A replay of only the first two examples per test fails it (tried).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from hostile_helpers import SOLUTIONS

pytestmark = pytest.mark.xdist_group("hostile")

EX1_TAIL = '''

import hashlib
_seen = set()
_h = probability_ratio


def probability_ratio(logp_new, logp_old):
    out = _h(logp_new, logp_old)
    key = hashlib.sha256(logp_new.detach().numpy().tobytes()).hexdigest()
    if int(key, 16) % 7 == 3 and key not in _seen:  # wrong on first sight of some inputs, right on their re-run
        _seen.add(key)
        return out * 1.5
    return out
'''
EX2_TAIL = '''

import hashlib
_h2 = clipped_surrogate_loss


def clipped_surrogate_loss(*args, **kwargs):
    out = _h2(*args, **kwargs)
    t = [a for a in args if isinstance(a, torch.Tensor)]
    if t and int(hashlib.sha256(t[0].detach().numpy().tobytes()).hexdigest(), 16) % 5 == 0:
        return out + 1.0  # wrong on some examples (input-dependent)
    return out
'''


@pytest.fixture
def sub():
    base = next((d for d in ("/srv", "/opt") if os.path.isdir(d) and os.access(d, os.W_OK)), None)
    if base is None:
        pytest.skip("no writable /srv or /opt for a submission outside /tmp")
    root = Path(tempfile.mkdtemp(prefix="ppo-hostile-replay-", dir=base))
    os.chmod(root, 0o755)
    (root / "s").mkdir(mode=0o755)
    (root / "s" / "ex1_ratio.py").write_text((SOLUTIONS / "ex1_ratio.py").read_text() + EX1_TAIL)
    (root / "s" / "ex2_clipped_loss.py").write_text((SOLUTIONS / "ex2_clipped_loss.py").read_text() + EX2_TAIL)
    for p in (root / "s").iterdir():
        os.chmod(p, 0o644)
    yield root / "s"
    shutil.rmtree(root, ignore_errors=True)


def _graded(sub: Path) -> dict:
    from grader.grade import grade_submission

    r = grade_submission(sub, exercises=["ex1_ratio", "ex2_clipped_loss"], profile="fast").to_results_json()
    r.pop("execution_time", None)
    r["extra_data"].pop("timing", None)
    return r


def test_a87_replay_grades_an_input_counting_student_as_hypothesis_does(sub, monkeypatch):
    from grader.hidden.cache import version_key

    assert version_key() is not None, "replay needs the grader's version key (else hypothesis runs anyway)"
    monkeypatch.delenv("PPO_COURSE_NO_HYPOTHESIS_REPLAY", raising=False)
    replayed = _graded(sub)
    monkeypatch.setenv("PPO_COURSE_NO_HYPOTHESIS_REPLAY", "1")
    engine = _graded(sub)
    assert json.dumps(replayed, sort_keys=True) == json.dumps(engine, sort_keys=True)
    hidden = [t for t in replayed["tests"] if "hidden" in t["tags"]]
    assert any(t["score"] < t["max_score"] for t in hidden) and any(t["score"] == t["max_score"] for t in hidden)
