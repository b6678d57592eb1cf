"""The benchmark's view of a cohort: its students, subsets of it, and each one staged as a plain folder.

A cohort folder holds one sub-folder or ``.zip`` per student (the name is the
student id), as ``ppo-course grade-batch`` reads it. ``subset`` copies some
entries as they are (a zip stays a zip, so that ``grade-batch`` does its own
intake); ``stage`` gives the floor and the notebooks a plain folder of module
files (a zip extracted, its one top folder taken as the module root).
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path


def entries(cohort: Path) -> dict[str, Path]:
    """``{student id: its folder or .zip}`` in name order (hidden entries skipped)."""
    out = {}
    for p in sorted(Path(cohort).iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_dir():
            out[p.name] = p
        elif p.is_file() and p.suffix.lower() == ".zip":
            out[p.stem] = p
    return out


def subset(cohort: Path, students: list[str], dest: Path) -> Path:
    """A cohort folder `dest` holding copies of the named students' entries (zips stay zips).

    Raises:
        KeyError: a named student is not in the cohort.
    """
    all_entries = entries(cohort)
    missing = [s for s in students if s not in all_entries]
    if missing:
        raise KeyError(f"not in {cohort}: {', '.join(missing)} (it holds {', '.join(all_entries)})")
    dest.mkdir(parents=True, exist_ok=True)
    for sid in students:
        src = all_entries[sid]
        if src.is_dir():
            shutil.copytree(src, dest / src.name, symlinks=False)
        else:
            shutil.copy2(src, dest / src.name)
    return dest


def _extract(zip_path: Path, dest: Path) -> None:
    """Extract a zip, refusing names that would land outside `dest` and skipping links."""
    root = dest.resolve()
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            name = info.filename.replace("\\", "/")
            target = (root / name).resolve()
            if name.startswith("/") or (target != root and root not in target.parents):
                raise ValueError(f"{zip_path.name}: the entry {info.filename!r} points outside the archive")
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                continue
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)


def stage(entry: Path, dest: Path) -> Path:
    """The student's modules as a plain folder under `dest`; returns the module root (see ``floor.module_root``)."""
    from grading_bench.floor import module_root

    dest.mkdir(parents=True, exist_ok=True)
    if entry.is_dir():
        shutil.copytree(entry, dest, dirs_exist_ok=True, symlinks=False)
    else:
        _extract(entry, dest)
    return module_root(dest)


def module_sources(root: Path) -> dict[str, str]:
    """``{file name: text}`` of the ``.py`` files at a module root (text for a notebook cell: undecodable
    bytes replaced, NUL bytes dropped, as a notebook cannot hold them)."""
    return {p.name: p.read_bytes().decode("utf-8", "replace").replace("\x00", "")
            for p in sorted(root.glob("*.py"))}
