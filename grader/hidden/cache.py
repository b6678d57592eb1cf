"""Per-version caches of the hidden graders: what is the same for every student is computed once per worker.

A warm trusted worker (`grader.runners.warm`) grades many students in one process; the
reference's outputs on the hidden inputs, exercise 7's reference steps and its
"before" score, and hypothesis' example lists are the same for all of them.
They are kept here, in this (trusted) process's memory, and, for the entries
whose key holds no student's value (``persist=True``), in the grader's store on
disk (`grader.hidden.disk_cache`, where a grader process has switched it on), so
that a fresh process reads them instead of computing them. Nothing reaches a
sandboxed child, and the requests a child sees are the same whether an entry
was cached or not (a cached value is only ever used in place of a trusted
computation on the same inputs).

Keys: the grader's version key (`version_key`: the fingerprint of the grader,
reference and student runtime as imported, and the hidden draws' key, i.e.
the course's secret and `grader_version`), a kind, and a SHA-256 of the inputs' exact
contents (`digest`: dtype, shape and bytes of every tensor). A grader change
is a new process with a new fingerprint, so nothing is reused across versions.
Values are returned as copies (tensors cloned), so a caller cannot change an
entry. Each kind is a bounded LRU (entries keyed by a student's own values,
e.g. exercise 7's later training steps, must not grow without end).
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections import OrderedDict
from functools import lru_cache
from typing import Any, Callable

import torch

from grader.hidden import disk_cache

#: Entries kept per kind (LRU). Hidden inputs are a few hundred per kind; exercise 7's entries are
#: ~0.5 MB each (a 107k-parameter state dict).
MAX_ENTRIES = {"ex7": 96}
DEFAULT_MAX_ENTRIES = 4096

_STORE: dict[str, "OrderedDict[bytes, Any]"] = {}
_STATS = {"hits": 0, "misses": 0, "disk_hits": 0}


def enabled() -> bool:
    """False when ``PPO_COURSE_NO_GRADER_CACHE`` is set (to measure or to rule the caches out)."""
    return not os.environ.get("PPO_COURSE_NO_GRADER_CACHE")


@lru_cache(maxsize=1)
def version_key() -> bytes | None:
    """SHA-256 of the grader's fingerprint (`grader.fingerprint`) and the hidden draws' key (`grader.hidden.draws`).

    Computed once per process: the code a process runs is the code it imported, so a grader change
    is a new process and a new key. Never None with a usable secret (a test may stand in None: nothing
    is cached then, and everything is computed as without a cache).

    Raises:
        grader.course_secret.GraderSecretError: no usable course secret (a grader fault: nothing may be
            graded, so nothing is computed as if there were one).
    """
    from grader.fingerprint import grader_fingerprint
    from grader.hidden.draws import draws_key

    return hashlib.sha256(grader_fingerprint().encode("ascii") + b"\0" + draws_key()).digest()


def _feed(h: "hashlib._Hash", x: Any) -> None:
    """Feed an unambiguous encoding of `x` (tensors by dtype, shape and bytes) to the hash `h`.

    Raises:
        TypeError: for a value without an exact encoding (never cached then: the caller computes).
    """
    if isinstance(x, torch.Tensor):
        t = x.detach()
        if t.device.type != "cpu" or t.layout != torch.strided or type(t) is not torch.Tensor:
            raise TypeError("only plain CPU dense tensors are hashed")
        h.update(b"T" + str(t.dtype).encode() + repr(tuple(t.shape)).encode() + b"|")
        if t.numel():
            h.update(t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
        return
    if x is None or isinstance(x, bool):
        h.update(b"N" if x is None else (b"b1" if x else b"b0"))
    elif isinstance(x, int):
        h.update(b"i" + str(x).encode() + b"|")
    elif isinstance(x, float):
        h.update(b"f" + struct.pack("<d", x))
    elif isinstance(x, str):
        data = x.encode("utf-8", "surrogatepass")
        h.update(b"s" + str(len(data)).encode() + b":" + data)
    elif isinstance(x, (list, tuple)):
        h.update((b"l" if isinstance(x, list) else b"t") + str(len(x)).encode() + b"[")
        for v in x:
            _feed(h, v)
        h.update(b"]")
    elif isinstance(x, dict):
        h.update(b"d" + str(len(x)).encode() + b"{")
        for k, v in x.items():  # insertion order counts (the callers build their dicts the same way)
            _feed(h, k)
            _feed(h, v)
        h.update(b"}")
    elif isinstance(x, torch.dtype):
        h.update(b"D" + str(x).encode() + b"|")
    else:
        raise TypeError(f"no exact cache key for a {type(x).__name__}")


def digest(*parts: Any) -> bytes:
    """SHA-256 of the version key and `parts` (see `_feed`).

    Raises:
        TypeError: a part without an exact encoding, or no version key (`version_key` is None).
    """
    version = version_key()
    if version is None:
        raise TypeError("no grader version key: nothing is cached")
    h = hashlib.sha256(version)
    for p in parts:
        _feed(h, p)
    return h.digest()


def copy_value(x: Any) -> Any:
    """A deep copy of a cached value's containers with every tensor cloned (detached)."""
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    if isinstance(x, list):
        return [copy_value(v) for v in x]
    if isinstance(x, tuple):
        return tuple(copy_value(v) for v in x)
    if isinstance(x, dict):
        return {k: copy_value(v) for k, v in x.items()}
    return x


def cached(kind: str, key: tuple, compute: Callable[[], Any], *, copy: Callable[[Any], Any] = copy_value,
           persist: bool = False) -> Any:
    """`compute()`, or a copy of its value from an earlier call with the same `kind` and `key`.

    The computation runs under a forked global RNG (`_isolated`), hit or miss alike.
    With ``persist``, a value not in memory is first looked up in the store on disk
    (`grader.hidden.disk_cache`, where this process switched it on) and a computed one is written
    there: for keys drawn from the hidden inputs alone, never from a student's values (those would
    fill the store, one entry per student).
    Only values are cached: an exception from `compute` propagates and nothing is stored (the next
    call computes again). A key without an exact encoding (TypeError from `digest`) is not cached.

    Args:
        kind: the cache's name (its own LRU bound, `MAX_ENTRIES`).
        key: the inputs that decide the value (tensors compared by their bytes).
        compute: the trusted computation; must be a function of `key` alone.
        copy: how a stored value is handed out (default: tensors cloned).
    """
    if not enabled() or version_key() is None:
        return _isolated(compute)
    try:
        k = digest(kind, key)
    except TypeError:
        return _isolated(compute)
    store = _STORE.setdefault(kind, OrderedDict())
    if k in store:
        store.move_to_end(k)
        _STATS["hits"] += 1
        return copy(store[k])
    value = disk_cache.load(version_key(), k) if persist else disk_cache.MISSING
    if value is disk_cache.MISSING:
        _STATS["misses"] += 1
        value = _isolated(compute)
        if persist:
            disk_cache.save(version_key(), k, value)
    else:
        _STATS["disk_hits"] += 1
    store[k] = copy(value)
    if len(store) > MAX_ENTRIES.get(kind, DEFAULT_MAX_ENTRIES):
        store.popitem(last=False)
    return value


def _isolated(compute: Callable[[], Any]) -> Any:
    """`compute()` under a forked torch global RNG: a cached computation leaves the process's global random
    state as it found it, so that what runs next is the same whether the entry was cached or not."""
    with torch.random.fork_rng(devices=[]):
        return compute()


def clear() -> None:
    """Forget every entry (tests)."""
    _STORE.clear()
    _STATS.update(hits=0, misses=0, disk_hits=0)


def stats() -> dict[str, int]:
    """{"hits": n, "misses": n, "disk_hits": n, "entries": n} since the last `clear` (a disk hit is read from
    `grader.hidden.disk_cache`, a miss computed)."""
    return {**_STATS, "entries": sum(len(s) for s in _STORE.values())}
