"""Covers: instructor paths hidden inside the child's private mount namespace (``isolate.confine`` step 4).

``plan_covers`` decides which paths get an empty tmpfs (a folder) or ``/dev/null`` (a file) and which
needed paths are bound back inside each; ``apply_covers`` mounts them. The plan is pure (tested on
its own in ``tests/sandbox/test_plan_covers.py``); the mounts need a private mount namespace.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sandbox_child.linux import MS_BIND, MS_NODEV, MS_NOSUID, MS_REC, mount


def _traversable_by_others(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_IXOTH) and bool(mode & stat.S_IROTH)


def is_within(path: str, root: str) -> bool:
    """Whether absolute ``path`` is ``root`` or lies below it (by path text: neither is resolved)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _outermost(paths: list[str]) -> list[str]:
    """The paths not inside another path of the list (sorted)."""
    out: list[str] = []
    for p in sorted(set(paths)):
        if not any(is_within(p, q) for q in out):
            out.append(p)
    return out


def plan_covers(needed: list[str], hide: list[str], unprivileged: bool) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """Which paths to cover (tmpfs for a folder, /dev/null for a file), and what to bind back into each.

    Args:
        needed: paths the child must still read (interpreter, stdlib,
            site-packages, the public package).
        hide: paths the child must not read (instructor folders, the
            repository root, other submissions, results).
        unprivileged: True when the child will run as a uid that only has
            "other" permissions; then the first ancestor of a needed path
            that "other" cannot traverse (e.g. /root, mode 700) is covered
            too and the needed path bound back, so that it stays readable.

    Returns:
        (covers, notes): covers as ``[(path, [needed paths to bind back inside it]), ...]``,
        shallowest first; notes name hide paths left visible because the
        interpreter needs exactly them (or they are ``/``).
    """
    needed = sorted({os.path.realpath(p) for p in needed if os.path.exists(p)})
    targets: set[str] = set()
    notes: list[str] = []
    for h in hide:
        if not os.path.lexists(h):
            continue
        h = os.path.realpath(h)
        if h == "/" or h in needed:
            notes.append(f"cannot hide {h}: the interpreter needs it")
            continue
        targets.add(h)
    if unprivileged:
        for n in needed:
            parts = Path(n).parts
            for i in range(2, len(parts) + 1):
                anc = str(Path(*parts[:i]))
                if not _traversable_by_others(anc):
                    if anc != n:
                        targets.add(anc)
                    break
    covers: list[tuple[str, list[str]]] = []
    for t in sorted(targets, key=lambda p: (p.count("/"), p)):
        # Already out of sight: inside an earlier cover and not inside what it binds back.
        if any(is_within(t, c) and not any(is_within(t, r) for r in rex) for c, rex in covers):
            continue
        rexpose = _outermost([n for n in needed if is_within(n, t) and n != t]) if os.path.isdir(t) else []
        covers.append((t, rexpose))
    return covers, notes


def apply_covers(covers: list[tuple[str, list[str]]]) -> None:
    """Mount the planned covers (must already be in a private mount namespace)."""
    fds: dict[str, int] = {}
    is_dir: dict[str, bool] = {}
    for _, rexpose in covers:
        for r in rexpose:
            if r not in fds:
                # A needed path may be a file (a one-file module such as typing_extensions.py).
                is_dir[r] = os.path.isdir(r)
                fds[r] = os.open(r, os.O_PATH | os.O_CLOEXEC | (os.O_DIRECTORY if is_dir[r] else 0))
    try:
        for target, rexpose in covers:
            if os.path.isdir(target):
                mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")
                for r in rexpose:
                    if is_dir[r]:
                        os.makedirs(r, mode=0o755, exist_ok=True)
                    else:
                        os.makedirs(os.path.dirname(r), mode=0o755, exist_ok=True)
                        if not os.path.exists(r):
                            os.close(os.open(r, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))  # the bind's mount point
                    mount(f"/proc/self/fd/{fds[r]}", r, None, MS_BIND | MS_REC, None)
            else:
                mount("/dev/null", target, None, MS_BIND, None)
    finally:
        for fd in fds.values():
            os.close(fd)
