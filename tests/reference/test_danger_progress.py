"""`ppo-course plot danger` computes three reference runs: it says which one starts (the board took minutes in
silence), and a library call stays quiet."""

from __future__ import annotations

from grader import figure_runs


def test_danger_data_says_each_run_only_when_asked(capsys):
    data = figure_runs.danger_data("init_kl_coef", steps=1, progress=True)
    err = capsys.readouterr().err
    assert [line.split(",")[0] for line in err.splitlines() if line.startswith("danger board:")] == \
        ["danger board: run 1/3", "danger board: run 2/3", "danger board: run 3/3"]
    assert "init_kl_coef = 0.001 (too low)" in err and "--save-data FILE" in err
    assert [r["label"] for r in data["runs"]] == ["too low", "typical", "too high"]
    figure_runs.danger_data("init_kl_coef", steps=1)
    assert "danger board" not in capsys.readouterr().err
