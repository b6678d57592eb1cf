"""Hostile students against the warm graders: one trusted worker grades student after student.

``grade-batch`` keeps one long-lived worker per job slot (``grader/runners/warm.py``) and
forks every child from one fork server per batch. What a worker keeps from one
student to the next must not change the next student's grade or feedback, and
must carry nothing from one student to the next. Each test grades a real batch
(``grader.batch.run_batch``, ``jobs=1``: every student through the same warm
worker) with a victim whose results are compared, byte for byte (timings aside),
across batches whose earlier students differ, and with a batch of fresh workers:

* ``a82``: the victim's answers hinge on every example it is shown; hypothesis
  mined constants from the modules the worker had imported, so an earlier
  classmate with an exercise-7 module changed the victim's examples and score;
* ``a83``: the victim's malformed-input answer hinges on the values of
  ``torch.randn(2, 3)`` drawn without a generator in the worker, i.e. on the
  worker's global generator as the previous grading left it.

Both also ride along with their honest twins (no test above the twin) and the
guards of the suite (nothing changed outside the sandbox, no process left).
The cohort lives under /srv (the usual 755 folders), as in ``test_hostile_batch``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from grader.runners.warm import WARM_ENV
from hostile_helpers import ATTACKS, SOLUTIONS, TWINS, read_attack, stable_results
from hostile_guards import guarded_batch

pytestmark = pytest.mark.xdist_group("hostile")

EXERCISES = ["ex1_ratio", "ex2_clipped_loss", "ex7_ppo_step"]






def _victim(folder: Path) -> Path:
    """a82 as ex1 and a83 as ex2, over one twin_code holding both twins."""
    a82, a83 = read_attack(ATTACKS / "a82_ex1_warm_constants_lottery.py"), read_attack(
        ATTACKS / "a83_ex2_warm_global_rng_relay.py")
    folder.mkdir(parents=True)
    shutil.copyfile(a82.path, folder / "ex1_ratio.py")
    shutil.copyfile(a83.path, folder / "ex2_clipped_loss.py")
    (folder / "twin_code.py").write_text(a82.twin.read_text() + "\n\n" + a83.twin.read_text())
    return folder


def _twin(folder: Path) -> Path:
    folder.mkdir(parents=True)
    shutil.copyfile(TWINS / "ex1_unstable.py", folder / "ex1_ratio.py")
    shutil.copyfile(TWINS / "ex2_unmasked.py", folder / "ex2_clipped_loss.py")
    return folder


def _batch(root: Path, name: str, before: dict[str, list[Path]], warm: bool = True) -> tuple[dict, dict, dict]:
    """Grade ``before`` (id -> files) then the victim ("5-victim") and its twin ("6-twin") in one warm worker.

    Returns:
        (victim's results.json, twin's results.json, {id: status}).
    """
    from grader.runners.warm import warm_workers_enabled

    assert warm_workers_enabled() == warm, "warm graders on (or off, for the fresh-worker comparison)"
    subs, out = root / name / "submissions", root / name / "out"
    for sid, files in before.items():
        (subs / sid).mkdir(parents=True)
        for f in files:
            shutil.copyfile(f, subs / sid / f.name)
    _victim(subs / "5-victim")
    _twin(subs / "6-twin")
    summary = guarded_batch(subs, out, [subs / "6-twin"], EXERCISES)
    statuses = {r.student_id: r.status for r in summary.records}
    read = lambda sid: json.loads((out / sid / "results.json").read_text())  # noqa: E731
    victim = read("5-victim")
    victim["feedback.md"] = (out / "5-victim" / "feedback.md").read_text()  # compared too
    return victim, read("6-twin"), statuses


@pytest.mark.slow
def test_warm_a_classmate_graded_before_changes_nothing(cohort_root, monkeypatch):
    """a82 + a83: the victim's results.json is the same alone, after an exercise-7 stub, after correct
    modules, and in fresh workers (``PPO_COURSE_WARM_WORKERS=0``); never above its twin; every student graded."""
    from grader import batch

    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "pinned")
    ex7_stub = cohort_root / "ex7_stub" / "ex7_ppo_step.py"
    ex7_stub.parent.mkdir()
    shutil.copyfile(TWINS / "ex7_stub.py", ex7_stub)
    runs = {
        "alone": {},
        "after an exercise-7 stub": {"1-stub": [ex7_stub]},
        "after correct modules": {"1-good": [SOLUTIONS / "ex1_ratio.py", SOLUTIONS / "ex2_clipped_loss.py"]},
        "fresh workers, after an exercise-7 stub": {"1-stub": [ex7_stub]},
    }
    seen = {}
    for i, (label, before) in enumerate(runs.items()):
        fresh = label.startswith("fresh")
        if fresh:
            monkeypatch.setenv(WARM_ENV, "0")  # the old way: one fresh worker per student
        victim, twin, statuses = _batch(cohort_root, f"b{i}", before, warm=not fresh)
        assert set(statuses.values()) == {"graded"}, statuses
        got = {t["name"]: float(t["score"]) for t in victim["tests"]}
        want = {t["name"]: float(t["score"]) for t in twin["tests"]}
        gained = {n: (got[n], want[n]) for n in want if got[n] > want[n]}
        assert not gained, f"{label}: the victim scored above its twin (victim, twin): {gained}"
        seen[label] = stable_results(victim)
    first = seen["alone"]
    differ = [label for label, text in seen.items() if text != first]
    assert not differ, f"the same submission got another results.json {differ} than graded alone"


def test_hypothesis_mines_no_constants_while_grading():
    """The grading examples' hook is in place: hypothesis's pool of local constants is empty even with the
    grader's own modules (full of constants) imported."""
    import grader.mistakes.buggy_variants  # noqa: F401 - a local module with many constants
    import grader.hidden.support  # noqa: F401
    from hypothesis.internal.conjecture import providers

    from ppo_course.grading_kit.inputs import no_local_constants

    no_local_constants()
    pool = providers._get_local_constants()
    assert len(pool) == 0, f"hypothesis would mix {len(pool)} constants from local modules into the examples"


def test_every_test_starts_from_the_same_global_random_state(tmp_path):
    """The collector seeds torch's, numpy's and ``random``'s global generators before each test: what the
    process drew before (another student's grading) does not reach a test's unseeded draws (a83's root)."""
    import random

    import torch

    from ppo_course.grading_kit.collect import OutcomeCollector

    (tmp_path / "test_draws.py").write_text(
        "import random, torch\n"
        "def test_draw(record):\n"
        "    record.append((torch.randn(3).tolist(), random.random()))\n"
        "def test_draw_again(record):\n"
        "    record.append((torch.randn(3).tolist(), random.random()))\n")
    (tmp_path / "conftest.py").write_text(
        "import pytest\nRECORD = []\n@pytest.fixture\ndef record():\n    return RECORD\n")

    def run() -> list:
        import sys

        sys.modules.pop("conftest", None)
        sys.modules.pop("test_draws", None)
        pytest.main([str(tmp_path), "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:xdist",
                     "--rootdir", str(tmp_path)], plugins=[OutcomeCollector(lambda exc: None)])
        return list(sys.modules["conftest"].RECORD)

    first = run()
    torch.manual_seed(12345)  # what an earlier grading could leave
    torch.randn(100)
    random.seed(999)
    second = run()
    assert len(first) == 2 and first == second
    assert first[0] != first[1], "two tests draw from their own seeds, not one shared stream"
