"""What a child can learn about its place in the grading (red-team attacks a108, a109).

a108, the order of grading: each child joins a memory cgroup named
``.../ppo-sandbox-<pid>/c<n>``, where ``n`` counts the children the grader made
before it. On main, ``/proc/self/cgroup`` showed that path, so a module could
answer well only when graded first (alone) and badly in a batch, or the other
way round: a grade that depends on the order it is graded in. Now the child
makes a cgroup namespace after joining (``isolate.confine``): the file reads
``/`` for every child. (The process id still moves with the order: the
machine's one pid namespace, see docs/threat_model.md.)

a109, the checkout's folder: the fork server's command line (``sys.argv``,
``/proc/self/cmdline``), ``sys.path`` and every imported module's ``__file__``
named the folder the grader is checked out in, so a module could score
differently in ``/work/main`` and in a TA's checkout. Now the fork server is
exec'd in a private mount namespace with the venv at ``/opt/ppo/venv`` and the
package at ``/opt/ppo/src/ppo_course`` (``sandbox_child.fixed_root``), and
every child sees only those. (Where the machine refuses the mount namespace the
checkout stays visible; ``/proc/self/mountinfo`` names each bind's source: see
docs/threat_model.md.)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("hostile")]

REPO = Path(__file__).resolve().parents[2]

PROBE = '''
import os, sys
def facts():
    def read(path):
        try:
            with open(path, "rb") as fh:
                return fh.read().decode("utf-8", "replace")
        except OSError as exc:
            return type(exc).__name__
    import torch, ppo_course
    return {"cgroup": read("/proc/self/cgroup"), "cmdline": read("/proc/self/cmdline"), "argv": repr(sys.argv),
            "mountinfo": read("/proc/self/mountinfo"), "exe": sys.executable,
            "path": repr(sys.path), "files": repr([torch.__file__, ppo_course.__file__])}
'''


def _facts(tmp_path, n: int) -> list[dict]:
    from grader.sandbox.sandbox import Sandbox

    folder = tmp_path / "probe"
    folder.mkdir(exist_ok=True)
    (folder / "ppohostile_probe.py").write_text(PROBE)
    for path in [folder, *folder.iterdir()]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    out = []
    with Sandbox(folder) as sb:
        for _ in range(n):
            out.append(sb.load("ppohostile_probe").facts())
    return out


def test_a108_the_child_cannot_read_its_place_in_the_grading_order(tmp_path):
    first, second, third = _facts(tmp_path, 3)
    assert first["cgroup"] == second["cgroup"] == third["cgroup"]
    assert not re.search(r"ppo-sandbox|/c\d+\b", first["cgroup"]), first["cgroup"]


def test_a109_the_child_cannot_read_the_checkouts_folder(tmp_path):
    (facts,) = _facts(tmp_path, 1)
    leaks = {k: v[:200] for k, v in facts.items() if str(REPO) in v and k != "mountinfo"}
    assert not leaks, f"the child sees the checkout's folder {REPO} in: {sorted(leaks)}"
    assert "/opt/ppo/src/ppo_course/__init__.py" in facts["files"], facts["files"]


@pytest.mark.xfail(strict=True, reason="a109, the rest: /proc/self/mountinfo names the source folder (within its file "
                                        "system) of the fork server's /opt/ppo binds, i.e. the checkout's venv and package")
def test_a109_the_child_cannot_read_the_checkouts_folder_in_mountinfo(tmp_path):
    (facts,) = _facts(tmp_path, 1)
    assert str(REPO) not in facts["mountinfo"]
