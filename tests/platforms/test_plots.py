"""The four figures of `ppo_course.plots` / `ppo_course.lifecycle_plot` and `ppo-course plot`: they render, and they draw the right thing."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pydantic
import pytest

from conftest import REPO
from ppo_course import lifecycle_plot, plots
from ppo_course.cli import main as cli_main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_ok(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 20_000, f"{path} is not a real PNG ({len(data)} bytes)"


def _lifecycle(cycles: int = 2, epochs: int = 2, per_epoch: int = 3) -> dict:
    """Hand-made statistics: r = 1 exactly at the first mini-batch of a cycle, spreading with each update after."""
    rows = []
    for c in range(cycles):
        for e in range(epochs):
            for m in range(per_epoch):
                k = e * per_epoch + m  # updates since the rollout
                s = 0.04 * k
                rows.append(dict(cycle=c, epoch=e, minibatch=m, ratio_min=1 - 2 * s, ratio_p10=1 - s, ratio_median=1.0,
                                 ratio_p90=1 + s, ratio_max=1 + 2 * s, clipfrac=min(1.0, 0.05 * k)))
    return {"clip_eps": 0.2, "ppo_epochs": epochs, "minibatches": rows, "source": "hand-made"}


def _danger() -> dict:
    steps = lambda f: [{"step": float(i), "ppo/mean_scores": f(i), "toy/gold_score": 0.1, "objective/kl": 2.0 * i,  # noqa: E731
                        "toy/eos_frac": 1.0} for i in range(1, 11)]
    return {"parameter": "init_kl_coef", "runs": [
        {"label": "too low", "value": 0.001, "steps": steps(lambda i: 0.1 * i)},
        {"label": "typical", "value": 0.05, "steps": steps(lambda i: 0.05 * i)},
        {"label": "too high", "value": 1.0, "steps": steps(lambda i: 0.0)}]}


def _line(ax, label_start: str):
    return next(line for line in ax.lines if str(line.get_label()).startswith(label_start))


def test_clip_explorer_draws_eq_5_1_and_shades_eq_5_9(tmp_path: Path):
    """L^CLIP = min(r·Â, clip(r)·Â), hand-computed at a few ratios (ε = 0.2); ∇ = 0 bands where eq. 5.9 says."""
    fig = plots.clip_explorer(0.2)
    pos, neg = fig.axes[:2]
    # Â = +1: L(0.5) = 0.5, L(1.0) = 1.0, L(1.5) = min(1.5, 1.2) = 1.2.  Â = −1: L(0.5) = min(−0.5, −0.8) = −0.8, L(1.5) = −1.5.
    for ax, want in ((pos, {0.5: 0.5, 1.0: 1.0, 1.5: 1.2}), (neg, {0.5: -0.8, 1.0: -1.0, 1.5: -1.5})):
        x, y = _line(ax, "L^CLIP").get_data()
        for r, value in want.items():
            assert np.interp(r, x, y) == pytest.approx(value, abs=1e-9)
    spans = [(round(p.get_x(), 9), round(p.get_x() + p.get_width(), 9)) for ax in (pos, neg) for p in ax.patches]
    assert spans == [(1.2, 2.0), (0.0, 0.8)]  # Â>0: r ≥ 1+ε; Â<0: r ≤ 1−ε
    _png_ok(plots.save(fig, tmp_path / "clip.png"))


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1])
def test_clip_explorer_rejects_bad_eps(bad: float):
    with pytest.raises(ValueError, match="clip_eps"):
        plots.clip_explorer(bad)


def test_lifecycle_marks_each_purge_and_renders(tmp_path: Path):
    """One red purge line between consecutive cycles, at the first mini-batch of the new cycle (x − 0.5)."""
    fig = lifecycle_plot.buffer_lifecycle(_lifecycle(cycles=3, epochs=2, per_epoch=3))
    ax = fig.axes[0]
    purges = sorted(line.get_xdata()[0] for line in ax.lines if line.get_color() == plots.RED)
    assert purges == [5.5, 11.5]  # 6 mini-batches per cycle
    _png_ok(plots.save(fig, tmp_path / "lifecycle.png"))


def test_lifecycle_rejects_unordered_quantiles():
    data = _lifecycle()
    data["minibatches"][3]["ratio_p10"] = 5.0
    with pytest.raises(pydantic.ValidationError, match="ordered"):
        lifecycle_plot.buffer_lifecycle(data)


def test_walkthrough_has_the_six_steps_and_the_books_numbers(tmp_path: Path):
    fig = plots.ppo_step_walkthrough()
    text = "\n".join(t.get_text() for t in fig.axes[0].texts)
    for head in ("Generate", "Score", "KL", "Final reward", "GAE", "Clipped update"):
        assert head in text
    for number in ("128", "512", "R = r_RM − 0.05 × mean_KL", "λ = 0.95", "4 epochs", "ε = 0.2", "0.005", "10K"):
        assert number in text, number
    assert "R = 2 − 0.05 × 4 = 1.8" in text  # the worked example, by hand: 2 − 0.2 = 1.8
    _png_ok(plots.save(fig, tmp_path / "walkthrough.png"))


def test_danger_board_quotes_the_stop_8_table_and_renders(tmp_path: Path):
    fig = plots.danger_board(_danger())
    assert "Too low: reward hacking. Too high: stuck at SFT." in fig._suptitle.get_text()  # Book §5.9, verbatim
    assert len(fig.axes[0].lines) == 3
    _png_ok(plots.save(fig, tmp_path / "danger.png"))


def test_danger_board_rejects_a_parameter_outside_the_table():
    data = _danger()
    data["parameter"] = "vf_coef"
    with pytest.raises(pydantic.ValidationError, match="stop-8 table"):
        plots.danger_board(data)


def test_plot_command_writes_each_kind(tmp_path: Path):
    """`ppo-course plot KIND --out FILE.png` for all four kinds (run data from JSON for the two runs)."""
    (tmp_path / "life.json").write_text(json.dumps(_lifecycle()), encoding="utf-8")
    (tmp_path / "danger.json").write_text(json.dumps(_danger()), encoding="utf-8")
    for kind, extra in (("clip", []), ("walkthrough", []), ("lifecycle", ["--data", str(tmp_path / "life.json")]),
                        ("danger", ["--data", str(tmp_path / "danger.json")])):
        assert cli_main(["plot", kind, "--out", str(tmp_path / f"{kind}.png"), *extra]) == 0
        _png_ok(tmp_path / f"{kind}.png")


def test_plot_command_reports_bad_data(tmp_path: Path, capsys):
    (tmp_path / "bad.json").write_text('{"parameter": "init_kl_coef", "runs": []}', encoding="utf-8")
    assert cli_main(["plot", "danger", "--data", str(tmp_path / "bad.json"), "--out", str(tmp_path / "x.png")]) == 2
    assert "bad.json" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_student_side_modules_import_no_instructor_code():
    """plots.py, lifecycle_plot.py and the plot command import neither ppo_reference nor grader (computing run data is grader.commands.plot's)."""
    for rel in ("ppo_course/plots.py", "ppo_course/lifecycle_plot.py", "ppo_course/commands/plot.py"):
        tree = ast.parse((REPO / rel).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if n.split(".")[0] in ("ppo_reference", "grader", "solutions")], rel


@pytest.mark.slow
def test_reference_lifecycle_starts_at_one_and_drifts():
    """A real 2-cycle toy run: r is exactly 1 before the first update of each cycle (θ = θ_old, table 5.1),
    and the spread grows over the epochs; the data validate and render."""
    from grader.figure_runs import lifecycle_data

    data = lifecycle_data(2)
    lifecycle_plot.LifecycleData.model_validate(data)
    rows = data["minibatches"]
    for cycle in (0, 1):
        mine = [r for r in rows if r["cycle"] == cycle]
        assert mine[0]["ratio_min"] == pytest.approx(1.0, abs=1e-6) and mine[0]["ratio_max"] == pytest.approx(1.0, abs=1e-6)
        last = mine[-1]
        assert last["ratio_p90"] - last["ratio_p10"] > 0.01
    lifecycle_plot.buffer_lifecycle(data)
