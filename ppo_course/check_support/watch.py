"""``ppo-course check --watch``: re-run an exercise's public tests each time it (or a helper it imports) is saved.

The process stays warm: torch, pytest, hypothesis and the grading kit are imported once
(``launch.warm_up``), and every run is a fork of it (``launch.spawn_forked``), so the student's modules
are imported afresh each time and a re-run costs the tests, not the imports (where ``fork`` is
missing, each run is a fresh interpreter, as a plain ``check``).

Changes are found by polling the ``.py`` files' modification times and sizes every
``POLL_SECONDS``: an exercises folder holds a dozen files, so a poll is a dozen ``stat`` calls, it
works the same on every OS, editor and network drive, and the student bundle needs no extra
dependency (``watchfiles`` would add a compiled wheel for no gain at this size). A change is acted on
once the files stop changing for one poll (editors save in several writes).

Which exercises re-run: those whose module, or a local file it imports (``check_support.imports``),
changed. Goal: re-run the changed exercise's public tests on save in a warm process and answer in
under 1 s after the first run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ppo_course.check_support.imports import import_closure
from ppo_course.submission_rules import _JUNK_NAMES, is_tool_folder

#: Seconds between two looks at the files.
POLL_SECONDS = 0.1

Snapshot = dict[Path, tuple[int, int]]


def snapshot(folder: Path) -> Snapshot:
    """{relative path: (mtime_ns, size)} of the ``.py`` files under ``folder`` (not in hidden, junk or tool
    folders, e.g. ``.venv``)."""
    found: Snapshot = {}
    for path in folder.rglob("*.py"):
        rel = path.relative_to(folder)
        if any(p.startswith(".") or p in _JUNK_NAMES or is_tool_folder(p) for p in rel.parts[:-1]):
            continue
        try:
            st = path.stat()
        except OSError:  # removed meanwhile
            continue
        found[rel] = (st.st_mtime_ns, st.st_size)
    return found


def changed(before: Snapshot, after: Snapshot) -> set[Path]:
    """The files added, removed or modified between two snapshots."""
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def affected(folder: Path, stems: list[str], files: set[Path]) -> list[str]:
    """The exercises of ``stems`` whose module or one of the local files it imports is among ``files``."""
    out = []
    for stem in stems:
        module = Path(f"{stem}.py")
        reached = set(import_closure(folder, [module]).files) | {module}
        if reached & files:
            out.append(stem)
    return out


def wait_for_change(folder: Path, before: Snapshot, stems: list[str],
                    sleep: Callable[[float], None] = time.sleep) -> tuple[Snapshot, list[str], set[Path]]:
    """Block until a saved file affects one of ``stems``; (the new snapshot, those exercises, the files)."""
    while True:
        sleep(POLL_SECONDS)
        now = snapshot(folder)
        if now == before:
            continue
        while True:  # settle: editors save in several writes
            sleep(POLL_SECONDS)
            later = snapshot(folder)
            if later == now:
                break
            now = later
        files = changed(before, now)
        before = now
        todo = affected(folder, stems, files)
        if todo:
            return now, todo, files


def watch(folder: Path, stems: list[str], check: Callable[[list[str], bool], int], max_runs: int | None = None,
          say: Callable[[str], None] | None = None) -> int:
    """Check ``stems`` now, then after every change that affects some of them, until Ctrl-C or ``max_runs`` runs.

    Args:
        folder: the exercises folder.
        stems: the exercises watched (``check -e``), every exercise by default.
        check: runs and prints one check of the given stems (``forked``: in a fork of this warm process);
            returns its exit status.
        max_runs: stop after this many runs (None: until Ctrl-C).
        say: where the watch's own lines go (default: stdout, flushed).

    Returns:
        The last run's exit status (0 all passed, 1 otherwise).
    """
    from ppo_course.check_support.launch import can_fork, warm_up

    say = say or (lambda line: print(line, flush=True))
    forked = can_fork()
    started = time.perf_counter()
    if forked:
        warm_up()
    before = snapshot(folder)
    code = check(stems, forked)
    say(f"checked in {time.perf_counter() - started:.1f} s")
    runs = 1
    try:
        while max_runs is None or runs < max_runs:
            say(f"watching {folder} for saved changes (Ctrl-C stops) ...")
            before, todo, files = wait_for_change(folder, before, stems)
            say(f"changed: {', '.join(sorted(p.as_posix() for p in files))}; checking {', '.join(todo)}")
            started = time.perf_counter()
            code = check(todo, forked)
            say(f"checked in {time.perf_counter() - started:.1f} s")
            runs += 1
    except KeyboardInterrupt:
        say("stopped watching")
    return code
