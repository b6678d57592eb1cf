"""``ppo-course train --mine``: the worked solutions, stubs, catalogued mistakes and the command, in a fast profile.

Expected values come from the reference implementation (``ppo_reference``, independent of ``solutions/``) run
from the same seed, and from the mistake catalogue's own ``DIAGNOSIS`` of each entry (tests/catalogue/buggy).
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
from pathlib import Path

import pytest
import torch
from rich.console import Console

from grader.mistakes.train_reference import ReferenceTrainSide
from ppo_course.commands import train as train_command
from ppo_course.config import PPOConfig
from ppo_course.training.alarms import WATCHED
from ppo_course.training.mine import train_mine

pytestmark = pytest.mark.slow
torch.set_num_threads(1)

REPO = Path(__file__).resolve().parents[2]
#: Exercise 7's parity tolerance on a step's stats (grader/hidden/test_ex7_ppo_step.py, STAT_RTOL).
STAT_RTOL = 1e-4


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One reference-run cache for the module: the reference runs once per config."""
    return tmp_path_factory.mktemp("reference-cache")


def _folder(tmp_path: Path, replace: dict[str, str] | None = None) -> Path:
    folder = tmp_path / "exercises"
    folder.mkdir(parents=True)
    for path in (REPO / "solutions").glob("ex*.py"):
        shutil.copy(path, folder)
    for stem, text in (replace or {}).items():
        (folder / f"{stem}.py").write_text(text, encoding="utf-8")
    return folder


def _run(folder: Path, cache: Path, steps: int, **config) -> object:
    return train_mine(folder, PPOConfig.toy(**config), steps, reference=ReferenceTrainSide(),
                      console=Console(width=200, quiet=True), show_progress=False, log_every=0,
                      cache=cache)


def test_the_worked_solutions_run_matches_the_reference_within_exercise_7s_tolerance(tmp_path, cache):
    run = _run(_folder(tmp_path), cache, 3)
    assert run.alarms == [] and run.notes == [] and run.stopped is None
    # ex3's ppo_loss computes its own policy term and ratio (its stub says so): ex2 and the ratio never run.
    assert run.never_ran == ["ex1_ratio.probability_ratio", "ex2_clipped_loss.clipped_surrogate_loss"]
    assert len(run.history) == len(run.reference) == 3
    for mine, ref in zip(run.history, run.reference):
        for key in [k for k, _ in WATCHED] + ["objective/kl_coef", "ppo/loss/total"]:
            assert abs(mine[key] - ref[key]) <= STAT_RTOL * (abs(ref[key]) + 1e-8), (mine["step"], key, mine[key], ref[key])
    # The reference came from the cache the second time (same config and seed).
    assert _run(_folder(tmp_path / "again"), cache, 3).reference_cached


def test_stubs_fall_back_to_the_reference_with_a_note(tmp_path, cache):
    # The solutions with exercise 4 as its stub (generated from the solution, as a student gets it).
    stub = (REPO / "exercises" / "ex4_gae.py").read_text(encoding="utf-8")
    run = _run(_folder(tmp_path, {"ex4_gae": stub}), cache, 2)
    assert sorted(n.split(" ")[0] for n in run.notes) == ["ex4_gae.compute_gae", "ex4_gae.whiten"]
    assert all("is still a stub: the reference's" in n for n in run.notes)
    assert run.alarms == [] and len(run.history) == 2


def test_stubs_are_not_said_never_called_and_the_command_says_what_never_ran(tmp_path, cache):
    """Exercise 3 a stub: its functions fell back (the notes say so), so only the student's implemented
    functions the run never reached are listed."""
    stub = (REPO / "exercises" / "ex3_full_loss.py").read_text(encoding="utf-8")
    run = _run(_folder(tmp_path, {"ex3_full_loss": stub}), cache, 1)
    assert "ex2_clipped_loss.clipped_surrogate_loss" in run.never_ran
    assert not any(name.startswith("ex3_full_loss.") for name in run.never_ran)
    assert "ex4_gae.compute_gae" not in run.never_ran  # the step calls it itself


def test_a_folder_of_stubs_runs_the_reference_everywhere(tmp_path, cache):
    folder = tmp_path / "stubs"
    shutil.copytree(REPO / "exercises", folder)
    run = _run(folder, cache, 2)
    fallen = {n.split(" ")[0] for n in run.notes}
    assert {"ex7_ppo_step.ppo_step", "ex5_rollout_buffer.RolloutBuffer", "ex6_kl_reward.AdaptiveKLController",
            "ex3_full_loss.ppo_loss", "ex4_gae.compute_gae", "ex1_ratio.logprobs_from_logits"} <= fallen
    assert [r["ppo/mean_scores"] for r in run.history] == [r["ppo/mean_scores"] for r in run.reference]


def _entry(name: str) -> tuple[str, str, str]:
    """(exercise, catalogued diagnosis, the solution with the entry appended: tests/catalogue/README.md)."""
    path = REPO / "tests" / "catalogue" / "buggy" / f"{name}.py"
    text = path.read_text(encoding="utf-8")
    meta = {t.id: n.value.value for n in ast.parse(text).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
    base = (REPO / "solutions" / f"{meta['EXERCISE']}.py").read_text(encoding="utf-8")
    return meta["EXERCISE"], meta["DIAGNOSIS"], base.rstrip("\n") + "\n\n\n" + text


#: Catalogued mistakes that change training -> the piece that must be named.
MISTAKES = {
    "ex6_kl_reward__kl_penalty_added": "kl_shaped_rewards",   # the KL penalty with the wrong sign
    "ex7_ppo_step__no_advantage_whitening": "ppo_step",        # advantages not whitened
    "ex3_full_loss__entropy_sign": "ppo_loss",                 # the entropy bonus's sign flipped
    "ex4_gae__returns_are_rewards_to_go": "compute_gae",
    "ex1_ratio__logits_shifted_again": "logprobs_from_logits",
    "ex3_full_loss__value_min_instead_of_max": "clipped_value_loss",
    "ex7_ppo_step__kl_direction_swapped": "ppo_step",
}


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_a_catalogued_mistake_is_flagged_with_the_piece_named(name, tmp_path, cache):
    exercise, diagnosis, module = _entry(name)
    run = _run(_folder(tmp_path, {exercise: module}), cache, 3)
    assert run.alarms, "the run shows nothing"
    finding = run.findings[0]
    assert (finding.exercise, finding.piece, finding.diagnosis) == (exercise, MISTAKES[name], diagnosis)
    assert finding.words().count(f"{exercise}.{MISTAKES[name]}") == 1 and f"[{diagnosis}]" in finding.words()


def test_a_run_that_goes_nan_stops_there_with_the_piece_named(tmp_path, cache):
    broken = (REPO / "solutions" / "ex3_full_loss.py").read_text(encoding="utf-8") + (
        "\n\ndef entropy_from_logits(logits, mask):\n    return torch.tensor(float('nan'), dtype=logits.dtype)\n")
    run = _run(_folder(tmp_path, {"ex3_full_loss": broken}), cache, 3)
    assert run.stopped is not None and (run.stopped.step, run.stopped.kind) == (1, "nan")
    assert len(run.history) == 1
    assert (run.findings[0].exercise, run.findings[0].piece) == ("ex3_full_loss", "entropy_from_logits")


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ppo-course train")
    train_command.add_arguments(parser)
    return parser.parse_args(argv)


def test_the_command_writes_the_log_and_the_figure_and_takes_the_flags(tmp_path, cache, monkeypatch, capsys):
    monkeypatch.setenv("PPO_COURSE_CACHE", str(cache))
    out = tmp_path / "out"
    args = _args(["--mine", str(_folder(tmp_path)), "--steps", "2", "--cliprange", "0.1", "--ppo-epochs", "2",
                  "--out", str(out), "--no-progress", "--log-every", "0"])
    assert train_command.run(args, reference=ReferenceTrainSide()) == 0
    log = json.loads((out / "train_log.json").read_text())
    assert log["config"]["cliprange"] == 0.1 and log["config"]["ppo_epochs"] == 2
    assert [r["step"] for r in log["steps"]] == [1.0, 2.0] and len(log["reference_steps"]) == 2
    assert log["summary"]["stopped"] is None and log["alarms"] == []
    assert (out / "train.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "your run" in printed and "reference" in printed and "clip fraction" in printed


def test_without_a_reference_a_stub_is_an_error_that_says_so(tmp_path, capsys):
    folder = tmp_path / "stubs"
    shutil.copytree(REPO / "exercises", folder)
    args = _args(["--mine", str(folder), "--steps", "1", "--out", str(tmp_path / "o"), "--no-progress"])
    assert train_command.run(args, reference=None) == 1
    assert "no reference implementation" in capsys.readouterr().err
    assert train_command.run(_args(["--steps", "1"]), reference=None) == 2  # the bundle has no reference run


def test_the_replay_of_a_correct_step_names_no_piece(tmp_path):
    # The worked solutions from the SFT policy, with a KL coefficient that has moved: every piece agrees.
    from ppo_course import toy_task
    from ppo_course.training.loop import StepInputs
    from ppo_course.training.pieces import student_pieces

    with pytest.warns(Warning):  # a batch of 16, outside the book's band on purpose (fast)
        config = PPOConfig.toy(batch_size=16, mini_batch_size=4, gradient_accumulation_steps=2)
    state = {k: v.clone() for k, v in toy_task.sft_policy(seed=0).state_dict().items()}
    moved = {k: v + 0.01 * torch.randn(v.shape, generator=torch.Generator().manual_seed(5)) if v.is_floating_point()
             else v for k, v in state.items()}
    inputs = StepInputs(4, moved, state, toy_task.sample_queries(16, torch.Generator().manual_seed(3)), 0.07)
    side = ReferenceTrainSide()
    with student_pieces(_folder(tmp_path), side, say=lambda note: None) as mine:
        finding = side.diagnose(inputs, config, mine)
    assert (finding.exercise, finding.piece, finding.diagnosis) == (None, None, None), finding.words()
    assert finding.words().startswith("on step 4's batch every one of your pieces agrees")


def test_the_replay_with_exercise_7_a_stub_says_the_reference_step_ran(tmp_path):
    # Exercise 7 still the stub: the run's first step fell back to the reference's step (as its first call does);
    # the replay must not say "your step agrees" of a step the student did not write.
    from ppo_course import toy_task
    from ppo_course.training.loop import StepInputs
    from ppo_course.training.pieces import student_pieces

    with pytest.warns(Warning):
        config = PPOConfig.toy(batch_size=16, mini_batch_size=4, gradient_accumulation_steps=2)
    state = {k: v.clone() for k, v in toy_task.sft_policy(seed=0).state_dict().items()}
    inputs = StepInputs(2, state, state, toy_task.sample_queries(16, torch.Generator().manual_seed(3)), 0.05)
    stub = (REPO / "exercises" / "ex7_ppo_step.py").read_text(encoding="utf-8")
    side = ReferenceTrainSide()
    with student_pieces(_folder(tmp_path, {"ex7_ppo_step": stub}), side, say=lambda note: None) as mine:
        mine.fall_back("ex7_ppo_step", "ppo_step", "is still a stub")
        finding = side.diagnose(inputs, config, mine)
    assert finding.exercise is None and "ppo_step is still a stub" in finding.words(), finding.words()
    assert "your step agrees" not in finding.words()


def test_mine_without_a_folder_takes_checks_default(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exercises").mkdir()
    args = _args(["--mine", "--steps", "1", "--no-progress", "--out", str(tmp_path / "o")])
    assert train_command.run(args, reference=None) == 1  # the empty folder: its modules are missing
    assert args.mine == tmp_path / "exercises"
    assert "ex1_ratio.logprobs_from_logits is missing (ex1_ratio.py is not in the folder)" in capsys.readouterr().err
