"""The fork server's fixed paths (red team a109): which host folders map where, and the paths a spawn sends."""

from __future__ import annotations

import sys

from sandbox_child import fixed_root


def test_translate_rewrites_only_paths_under_a_mapped_folder(tmp_path):
    venv, pkg = tmp_path / "co" / ".venv", tmp_path / "co" / "ppo_course"
    (venv / "lib").mkdir(parents=True)
    pkg.mkdir()
    mapping = {str(venv.resolve()): "/opt/ppo/venv", str(pkg.resolve()): "/opt/ppo/src/ppo_course"}
    got = fixed_root.translate([str(venv), str(venv / "lib" / "x.py"), str(pkg / "model.py"),
                                str(tmp_path / "co" / "grader"), str(tmp_path / "co" / ".venv2")], mapping)
    # by hand: the first three move under /opt/ppo, a sibling folder and a name sharing a prefix do not
    assert got == ["/opt/ppo/venv", "/opt/ppo/venv/lib/x.py", "/opt/ppo/src/ppo_course/model.py",
                   str(tmp_path / "co" / "grader"), str(tmp_path / "co" / ".venv2")]


def test_layout_maps_the_packages_and_the_venv(tmp_path):
    (tmp_path / "ppo_course").mkdir()
    (tmp_path / "venv").mkdir()
    assert fixed_root.layout(str(tmp_path), str(tmp_path / "venv")) == {}  # the child's package missing
    (tmp_path / "sandbox_child").mkdir()
    assert fixed_root.layout(str(tmp_path), str(tmp_path / "venv")) == {
        str((tmp_path / "ppo_course").resolve()): "/opt/ppo/src/ppo_course",
        str((tmp_path / "sandbox_child").resolve()): "/opt/ppo/src/sandbox_child",
        str((tmp_path / "venv").resolve()): "/opt/ppo/venv"}
    assert fixed_root.layout(str(tmp_path / "nowhere"), "") == {}  # no package folder: no fixed paths


def test_layout_refuses_folders_the_opt_tmpfs_would_hide(tmp_path, monkeypatch):
    (tmp_path / "ppo_course").mkdir()
    (tmp_path / "sandbox_child").mkdir()
    assert fixed_root.layout(str(tmp_path), "/opt/some/venv") == {}
    monkeypatch.setattr(sys, "base_prefix", "/opt/python3.11")
    assert fixed_root.layout(str(tmp_path), "") == {}
