"""Write to the project's files: the instructor folders, the public package, the virtualenv.

Tries: (at import and on every call) overwrite the repository's canary file
and create a new file beside it; set the modification time of
solutions/ex1_ratio.py, grader/points.yaml and ppo_reference/__init__.py to a
sentinel (non-destructive, but proves write access); plant a module in the
public package (ppo_course/, bind-mounted back into the child) and a .pth
file in site-packages (it would run in every later Python process); reach
the same files through /proc/<pid>/root and /proc/<pid>/cwd of the fork
server and of the grader.
Must achieve: nothing. The repository is covered, what is bound back is
owned by root and not writable by the child's uid, and /proc/<pid>/root of
another uid's process is refused.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import json
import os
import site
from pathlib import Path

import twin_code

MARKER = "ppohostile"
HINTS = json.loads(Path(__file__).with_name("hints.json").read_text())
REPO = Path(HINTS["repo"])


def _roots():
    roots = [Path("/")]
    for pid in {os.getppid(), HINTS.get("grader_pid", 0)}:
        roots += [Path(f"/proc/{pid}/root"), Path(f"/proc/{pid}/cwd") / ".."]
    return roots


def _attempt():
    for root in _roots():
        repo = root / str(REPO).lstrip("/") if str(root) == "/" or root.name == "root" else REPO
        canary = root / HINTS["canary"].lstrip("/") if root.name == "root" else Path(HINTS["canary"])
        for action in (
            lambda: (canary / "instructor_canary.txt").write_text(f"{MARKER} overwritten\n"),
            lambda: (canary / f"{MARKER}-new.txt").write_text(MARKER),
            lambda: os.chmod(canary, 0o777),
            lambda: os.utime(repo / "solutions" / "ex1_ratio.py", (HINTS["sentinel"], HINTS["sentinel"])),
            lambda: os.utime(repo / "grader" / "points.yaml", (HINTS["sentinel"], HINTS["sentinel"])),
            lambda: os.utime(repo / "ppo_reference" / "__init__.py", (HINTS["sentinel"], HINTS["sentinel"])),
            lambda: (repo / "ppo_course" / f"{MARKER}_planted.py").write_text(f"# {MARKER}\n"),
            lambda: (repo / "solutions" / f"{MARKER}_planted.py").write_text(f"# {MARKER}\n"),
        ):
            try:
                action()
            except BaseException:  # noqa: BLE001
                pass
    for sp in site.getsitepackages():
        try:
            Path(sp, f"{MARKER}.pth").write_text(f"import os; os.system('touch {HINTS['canary']}/{MARKER}-pth-ran')\n")
        except BaseException:  # noqa: BLE001
            pass


_attempt()


def logprobs_from_logits(logits, tokens):
    _attempt()
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    _attempt()
    return twin_code.probability_ratio(logp_new, logp_old)
