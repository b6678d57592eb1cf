"""Which paths the child's mount namespace covers, and what it binds back (a pure function)."""

from __future__ import annotations

import os
from pathlib import Path

from sandbox_child.covers import plan_covers


def tree(root: Path, *dirs: str) -> None:
    for d in dirs:
        (root / d).mkdir(parents=True, exist_ok=True)


def test_repository_is_covered_and_the_venv_and_package_bound_back(tmp_path):
    tree(tmp_path, "repo/.venv/lib/site-packages/torch", "repo/ppo_course", "repo/ppo_reference", "repo/solutions")
    repo = tmp_path / "repo"
    needed = [str(repo / ".venv"), str(repo / ".venv/lib/site-packages"), str(repo / ".venv/lib/site-packages/torch"),
              str(repo / "ppo_course")]
    covers, notes = plan_covers(needed, [str(repo), str(repo / "ppo_reference")], unprivileged=False)
    # ppo_reference is inside the covered repository and not bound back: one cover is enough.
    assert covers == [(str(repo), [str(repo / ".venv"), str(repo / "ppo_course")])]
    assert notes == []


def test_a_needed_path_is_never_covered(tmp_path):
    tree(tmp_path, "venv/site-packages/torch", "venv/site-packages/grader")
    sp = tmp_path / "venv/site-packages"
    covers, notes = plan_covers([str(tmp_path / "venv"), str(sp), str(sp / "torch")], [str(sp), str(sp / "grader")],
                                unprivileged=False)
    assert covers == [(str(sp / "grader"), [])]  # the instructor package inside site-packages only
    assert notes == [f"cannot hide {sp}: the interpreter needs it"]


def test_root_is_never_covered(tmp_path):
    covers, notes = plan_covers([str(tmp_path)], ["/"], unprivileged=False)
    assert covers == [] and notes == ["cannot hide /: the interpreter needs it"]


def test_untraversable_ancestor_is_covered_for_an_unprivileged_child(folder_outside_tmp):
    # (pytest's tmp_path sits under a mode-700 folder itself, which would be the cover.)
    tree(folder_outside_tmp, "home/.pyenv/versions/3.11/lib", "home/secrets")
    home = folder_outside_tmp / "home"
    os.chmod(home, 0o700)
    try:
        py = str(home / ".pyenv/versions/3.11")
        covers, _ = plan_covers([py, py + "/lib"], [], unprivileged=True)
        assert covers == [(str(home), [py])]
        assert plan_covers([py], [], unprivileged=False)[0] == []  # root reads it anyway
    finally:
        os.chmod(home, 0o755)


def test_files_are_covered_without_binds(tmp_path):
    (tmp_path / "answers.json").write_text("{}")
    covers, _ = plan_covers([], [str(tmp_path / "answers.json")], unprivileged=False)
    assert covers == [(str(tmp_path / "answers.json"), [])]
