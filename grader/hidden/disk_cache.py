"""The hidden graders' per-version values on the grader's disk, so that a fresh grader process does not recompute them.

`grader.hidden.cache` keeps, in one trusted process's memory, what is the same for every
student: the reference's answers on the hidden inputs, exercise 7's reference runs on its
drawn settings, hypothesis' example lists. A fresh process (one ``ppo-course grade``, each
worker of a batch) would compute them all again: about 2 CPU-seconds before its first
student. This store keeps them between processes, on the grader's machine only:

- **where**: ``$PPO_COURSE_GRADER_CACHE_DIR``, else ``$XDG_CACHE_HOME/ppo-course/grader-cache``,
  else ``~/.cache/ppo-course/grader-cache``; one folder per grader version, named by a keyed
  digest of the version key (`grader.hidden.cache.version_key`: the grader's fingerprint and the
  draws' key, which holds the course's secret), mode 0700, files 0600. A folder this user does not
  own, or that others may read or write, is never used (nothing is read or written; a warning says why).
- **what**: one file per entry, named by the entry's digest: a magic, an HMAC-SHA256 tag, then
  the value pickled. The tag's key is derived from the version key, and it covers the entry's
  name and its bytes, so a file not written by a grader holding this course's secret and
  grader version, a damaged one, or one moved to another entry's name, is ignored (never
  unpickled) and the value is computed as without a store.
- **when**: only in a process that called `switch_on` (the grader's entry points: ``grade``, a
  batch's workers, a cluster worker). Library use (a test calling the grader in-process, perhaps with a
  patched reference) neither reads nor writes it. ``PPO_COURSE_NO_GRADER_CACHE`` turns every cache off.
- **bounds**: at most `MAX_BYTES` per version folder (writes stop there); on first use, version
  folders beyond the `KEEP_VERSIONS` most recently used are removed (only folders this store made: a
  private folder with a version folder's name holding only entry files; nothing else under the root).
- **runtime**: the folder name and the tags are keyed by the version key bound to `runtime_identity`
  (the interpreter, torch, numpy and hypothesis versions, torch's CPU kernels), so that values computed
  under another runtime are never read.

A value read here is the bytes a computation gave on the same inputs under the same grader
version and secret, so a grade never depends on whether it was read or computed
(``tests/grading/test_disk_cache.py``). Writes are atomic (temporary file, then ``os.replace``)
and not fsynced: a file cut short by a crash fails its tag and is recomputed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import pickle
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

#: Environment variable naming the store's root folder.
CACHE_DIR_ENV = "PPO_COURSE_GRADER_CACHE_DIR"
#: Bytes written per version folder at most (exercise 7's entries are ~0.5 MB each).
MAX_BYTES = 256 * 2**20
#: Version folders kept under the root (the most recently used ones).
KEEP_VERSIONS = 4
MAGIC = b"ppo-course grader cache 1\n"
_TAG_BYTES = 32
#: Names of what this store makes under its root: version folders, entries, unfinished writes.
_VERSION_NAME = re.compile(r"[0-9a-f]{32}")
_ENTRY_NAME = re.compile(r"[0-9a-f]{64}")
_TMP_NAME = re.compile(r"\.entry\.[A-Za-z0-9_]+\.tmp")

#: What `load` returns for an entry it does not have.
MISSING = object()

_STATE: dict[str, Any] = {"on": False, "folders": {}, "written": {}, "warned": False}


def switch_on() -> None:
    """Let this process read and write the store (the grader's entry points call it, before any grading)."""
    _STATE["on"] = True


def switch_off() -> None:
    """Stop reading and writing the store in this process (tests)."""
    _STATE["on"] = False
    _STATE["folders"].clear()
    _STATE["written"].clear()


def is_on() -> bool:
    """True in a process that called `switch_on` (and not `switch_off` since)."""
    return bool(_STATE["on"])


def root() -> Path:
    """The store's root folder (absolute): ``$PPO_COURSE_GRADER_CACHE_DIR``, else the user's cache folder."""
    named = os.environ.get(CACHE_DIR_ENV)
    if named:
        return Path(named).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "ppo-course", "grader-cache").resolve()


def worker_env() -> dict[str, str]:
    """``{CACHE_DIR_ENV: absolute root}`` for a grading worker this process starts (never a sandboxed child)."""
    return {CACHE_DIR_ENV: str(root())}


def _warn(why: str) -> None:
    if not _STATE["warned"]:
        _STATE["warned"] = True
        print(f"warning: the grader's cache on disk is not used: {why}", file=sys.stderr)


def _private(folder: Path) -> bool:
    """True when ``folder`` is a real folder of this user that no one else may read or write."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    import stat

    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def _folder(version: bytes) -> Path | None:
    """This version's folder (made 0700 if absent), or None when it may not be used."""
    folders = _STATE["folders"]
    if version in folders:
        return folders[version]
    name = hmac.new(version, b"folder", hashlib.sha256).hexdigest()[:32]
    base = root()
    folder: Path | None = base / name
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
        if not (_private(base) and _private(folder)):
            _warn(f"{base} or its version folder is not a private folder of this user (mode 0700)")
            folder = None
        else:
            os.utime(folder)
            _prune(base, keep=folder)
            _STATE["written"][version] = sum(e.stat().st_size for e in os.scandir(folder) if e.is_file())
    except OSError as exc:
        _warn(f"{base}: {exc}")
        folder = None
    folders[version] = folder
    return folder


def _is_version_folder(entry: os.DirEntry) -> bool:
    """True for a folder this store made: a private folder named like `_folder`'s names (32 hex digits) holding
    only files named like its entries (64 hex digits, or an unfinished ``.entry.*.tmp``). Anything else under the
    root (a folder of the TA's own, where ``$PPO_COURSE_GRADER_CACHE_DIR`` names a shared folder) is never removed."""
    if not _VERSION_NAME.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
        return False
    if not _private(Path(entry.path)):
        return False
    with os.scandir(entry.path) as inside:
        return all(f.is_file(follow_symlinks=False) and (_ENTRY_NAME.fullmatch(f.name) or _TMP_NAME.fullmatch(f.name))
                   for f in inside)


def _prune(base: Path, keep: Path) -> None:
    """Remove this store's version folders under ``base`` beyond the `KEEP_VERSIONS` most recently used (never
    ``keep``, never a folder `_is_version_folder` does not recognise)."""
    try:
        others = [e for e in os.scandir(base) if e.path != str(keep) and _is_version_folder(e)]
        others.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime, reverse=True)
    except OSError:
        return
    for entry in others[KEEP_VERSIONS - 1:]:
        shutil.rmtree(entry.path, ignore_errors=True)


@functools.lru_cache(maxsize=1)
def runtime_identity() -> bytes:
    """What, besides the grader's version key, decides the bytes a value is computed to: the interpreter, the
    machine's architecture and torch's CPU kernels (``torch.backends.cpu.get_cpu_capability``), and the versions of
    torch, numpy and hypothesis (the reference's numerics, hypothesis' example lists). None of them is in the
    grader's fingerprint, which hashes sources only; folded into every folder name and tag, so that an upgrade,
    or a store shared by machines of another kind, computes its values again instead of reading another's."""
    import platform

    import hypothesis
    import numpy
    import torch

    parts = [sys.version, sys.implementation.cache_tag or "", platform.machine(), torch.__version__,
             torch.backends.cpu.get_cpu_capability(), numpy.__version__, hypothesis.__version__]
    return "\0".join(str(p) for p in parts).encode("utf-8", "backslashreplace")


def _store_key(version: bytes) -> bytes:
    """The key of this store's folder and tags: the grader's version key bound to `runtime_identity`."""
    return hmac.new(version, b"runtime\0" + runtime_identity(), hashlib.sha256).digest()


def _tag(version: bytes, key: bytes, data: bytes) -> bytes:
    mac_key = hmac.new(version, b"entry tag", hashlib.sha256).digest()
    return hmac.new(mac_key, key + b"\0" + data, hashlib.sha256).digest()


def load(version: bytes | None, key: bytes) -> Any:
    """The value stored under ``key`` (a `grader.hidden.cache.digest`) for ``version``, or `MISSING`.

    `MISSING` when the store is off, the folder may not be used, there is no such file, or its tag
    does not match (the file is then never unpickled).
    """
    if not _STATE["on"] or version is None:
        return MISSING
    version = _store_key(version)
    folder = _folder(version)
    if folder is None:
        return MISSING
    try:
        with open(folder / key.hex(), "rb") as fh:
            raw = fh.read()
    except OSError:
        return MISSING
    head = len(MAGIC) + _TAG_BYTES
    if len(raw) < head or not raw.startswith(MAGIC):
        return MISSING
    tag, data = raw[len(MAGIC):head], raw[head:]
    if not hmac.compare_digest(tag, _tag(version, key, data)):
        return MISSING
    try:
        return pickle.loads(data)
    except Exception:  # noqa: BLE001 - an entry that cannot be read back is computed again
        return MISSING


def save(version: bytes | None, key: bytes, value: Any) -> None:
    """Store ``value`` under ``key`` for ``version`` (atomically; nothing when off, full or not picklable).

    Never raises: a value that cannot be stored is computed again by the next process.
    """
    if not _STATE["on"] or version is None:
        return
    version = _store_key(version)
    folder = _folder(version)
    if folder is None:
        return
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - not picklable: not stored
        return
    if _STATE["written"].get(version, 0) + len(data) > MAX_BYTES:
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=".entry.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(MAGIC + _tag(version, key, data) + data)
            os.replace(tmp, folder / key.hex())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        return
    _STATE["written"][version] = _STATE["written"].get(version, 0) + len(data)
