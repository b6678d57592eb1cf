"""The submission is staged once, by the parent, and each staged copy is private (issue 22 item 2).

``ppo-course grade-batch`` stages every student under OUT_DIR/.batch/staging/<id>
(a 0700 folder made just before that student's dispatch) and its worker grades
that copy where it is. Five attacks (``attacks/a131``-``a135``) try, from
inside a real batch (``--jobs 2``, so a classmate is staged and graded at the
same time), to list the batch's staging folder, read a classmate's staged
copy, read the batch's out folder, reach the staging folder through /proc, and
step from their own staged copy's path to the classmates'. Each turns any
success into points (a stable implementation instead of its twin's unstable
one), so a leak shows as a score above the honest twin; each must score no
more than the twin on every test, the classmates stay untouched, and nothing
is left behind. The cohort lives outside /tmp (under /srv): /tmp is a private
tmpfs in every child anyway, so a cohort there would prove nothing.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from hostile_guards import Guards
from hostile_helpers import ATTACKS, SOLUTIONS, read_attack

pytestmark = pytest.mark.xdist_group("hostile")

STAGING_ATTACKS = ("a131_list_batch_staging", "a132_read_classmate_staged_copy", "a133_read_batch_out_folder",
                   "a134_staging_through_proc", "a135_own_staged_path_then_siblings")


def _by_test(results: dict) -> dict[str, float]:
    return {t["name"]: float(t["score"]) for t in results["tests"]}


@pytest.mark.slow
def test_no_child_sees_the_batch_staging_a_classmates_copy_or_the_out_folder(cohort_root, monkeypatch):
    from grader import batch

    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "pinned")
    subs, out = cohort_root / "submissions", cohort_root / "out"
    staging = out / ".batch" / "staging"
    # Sorted ids: the classmate is graded first (its results are in OUT when the attacks run), next to a131.
    classmate, honest = subs / "0-alice", subs / "9-honest"
    attacks = {f"{i + 1}-{name.split('_')[0]}": read_attack(ATTACKS / f"{name}.py")
               for i, name in enumerate(STAGING_ATTACKS)}
    for folder in [classmate, honest, *(subs / sid for sid in attacks)]:
        folder.mkdir(parents=True)
    shutil.copyfile(SOLUTIONS / "ex1_ratio.py", classmate / "ex1_ratio.py")
    twin = next(iter(attacks.values())).twin
    shutil.copyfile(twin, honest / "ex1_ratio.py")
    guards = Guards([classmate, honest], server_pid=None)
    try:
        for sid, attack in attacks.items():
            assert attack.twin == twin and attack.target == "ex1_ratio"
            shutil.copyfile(attack.path, subs / sid / "ex1_ratio.py")
            shutil.copyfile(attack.twin, subs / sid / "twin_code.py")
            hints = guards.hints(submissions_dir=subs, out_dir=out, staging_dir=staging, own_id=sid,
                                 classmate=classmate.name)
            (subs / sid / "hints.json").write_text(json.dumps(hints))
        for path in [subs, *subs.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        summary = batch.run_batch(subs, out, jobs=2, profile="fast", exercises=["ex1_ratio"], progress=False,
                                  report=False, log=lambda m: None)
        violations, leftovers = guards.violations(), guards.leftovers()
    finally:
        guards.restore()
        guards.close()
    assert {r.student_id: r.status for r in summary.records} == {sid: "graded" for sid in
                                                                  ["0-alice", "9-honest", *attacks]}
    assert not violations, "\n".join(violations)
    assert not leftovers, "\n".join(leftovers)
    want = _by_test(json.loads((out / "9-honest" / "results.json").read_text()))
    for sid in attacks:
        got = _by_test(json.loads((out / sid / "results.json").read_text()))
        assert set(got) == set(want), sid
        gained = {name: (got[name], want[name]) for name in want if got[name] > want[name]}
        assert not gained, f"{sid} scored above its honest twin (test: attack, twin): {gained}"
    alice = json.loads((out / "0-alice" / "results.json").read_text())
    assert alice["score"] == alice["extra_data"]["max_score"]
    # The twin's instability costs points: a leak would have shown (the comparison is not vacuous).
    assert sum(want.values()) < alice["score"]


def _load_attack(name: str, folder, hints: dict):
    """Import an attack module as a child would, from ``folder`` with its twin and ``hints.json`` (no sandbox)."""
    import importlib.util
    import sys

    attack = read_attack(ATTACKS / f"{name}.py")
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(attack.path, folder / "attack_module.py")
    shutil.copyfile(attack.twin, folder / "twin_code.py")
    (folder / "hints.json").write_text(json.dumps(hints))
    sys.modules.pop("twin_code", None)
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location(f"staging_attack_{name}", folder / "attack_module.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module


def test_each_staging_attack_would_see_an_unprotected_layout(tmp_path, monkeypatch):
    """Control, without the sandbox: where the batch's folders are readable, each attack does find them and would
    score (its probe is true, a132 steals the classmate's module), so the batch test above is not vacuous."""
    import torch

    out = tmp_path / "out"
    staging = out / ".batch" / "staging"
    (staging / "0-alice").mkdir(parents=True)
    shutil.copyfile(SOLUTIONS / "ex1_ratio.py", staging / "0-alice" / "ex1_ratio.py")
    (staging / "3-a133").mkdir()
    (out / "0-alice").mkdir()
    (out / "0-alice" / "results.json").write_text("{}")
    cwd = out / ".batch" / "work" / "3-a134" / "cwd"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)  # /proc/self/cwd of this process then leads up to .batch/staging (a134)
    hints = {"out_dir": str(out), "staging_dir": str(staging), "classmate": "0-alice", "own_id": "3-a133"}
    for name in STAGING_ATTACKS:
        module = _load_attack(name, tmp_path / name, hints)
        if hasattr(module, "_probe"):
            assert module._probe(), name
        else:
            module._steal()
            assert module._stolen, name
        # The leak is worth points: stable where the twin is not (finite log-prob of a 1e4 logit gap).
        got = module.logprobs_from_logits(torch.tensor([[[1e4, 0.0]]]), torch.tensor([[1]]))
        assert torch.isfinite(got).all(), name
