"""The one atomic writer (ppo_course/atomic_files.py): whole files or none, the same permissions everywhere."""

from __future__ import annotations

import os
import stat

import pytest

from ppo_course.atomic_files import atomic_path, atomic_write_text


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_text_is_written_whole_with_the_umask_mode(tmp_path):
    old = os.umask(0o022)
    try:
        target = atomic_write_text(tmp_path / "sub" / "results.json", "{}\n")
    finally:
        os.umask(old)
    assert target.read_bytes() == b"{}\n"
    assert _mode(target) == 0o644  # 0o666 & ~0o022, by hand; tempfile alone would give 0o600
    assert [p.name for p in target.parent.iterdir()] == ["results.json"]  # no temporary left


def test_an_explicit_mode_and_the_replaced_files_mode_are_kept(tmp_path):
    keys = atomic_write_text(tmp_path / "keys.json", "secret", mode=0o600)
    assert _mode(keys) == 0o600
    atomic_write_text(keys, "rotated")  # a rewrite keeps the file's own mode
    assert keys.read_text() == "rotated" and _mode(keys) == 0o600


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "gradebook.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed mid-write")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["gradebook.csv"]
