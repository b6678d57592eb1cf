"""Helpers shared by the sandbox tests (importable by name: tests/ has no packages)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from grader.sandbox import Limits

#: Tight limits so that failure tests stay fast.
FAST = Limits(call_timeout_s=5.0, import_timeout_s=5.0)


def write_submission(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: source}`` (dedented) under ``root``; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, source in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return root


def sandbox_processes() -> list[tuple[int, int, str]]:
    """(pid, uid, state) of every process running under a sandbox uid (61000-61999)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{entry}").st_uid
            with open(f"/proc/{entry}/stat", "rb") as fh:
                data = fh.read()
            state = data[data.rindex(b")") + 2 :].split()[0].decode()
        except (OSError, ValueError):
            continue
        if 61000 <= uid < 62000:
            out.append((int(entry), uid, state))
    return out


def in_child(server, path) -> str:
    """Where the child sees the host path ``path``: under /opt/ppo when the fork server runs there (a109)."""
    from ppo_course.sandbox import fixed_root

    return fixed_root.translate([str(path)], server.fixed_layout)[0]
