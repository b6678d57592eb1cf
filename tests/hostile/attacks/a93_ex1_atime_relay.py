"""Exercise 1: a relay through file metadata that outlives the child (issue 19, class 1).

Tries: stores bits in the access times of the interpreter's own files (reading
a file on a ``relatime`` mount sets its atime when it was older than the
mtime or a day old; ``stat`` reads it back), and in ``flock`` state on them
(``/proc/locks``, seen by every process on the machine). The first grading
"writes" a pattern by reading the files whose bit is 1 and sets its times
with ``os.utime``; a later grading that reads the pattern back would switch
to answers relayed from an earlier run (here: the twin's answers made finite,
a few more points).
Must achieve: nothing. The child sees a minimal root of read-only, noatime
binds (``sandbox_child/rootfs.py``): no read changes an atime, utime
fails, locks die with the child, so every grading sees the same metadata and
three gradings give the same grade.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import fcntl
import os

import torch

import twin_code

MARKER = "ppohostile"
PATTERN = (1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1)
_held = []


def _carriers():
    folder = os.path.dirname(torch.__file__)
    own = os.path.join(folder, "_ppo_relay_carriers")  # files no other process reads (the test makes them)
    if os.path.isdir(own):
        return [os.path.join(own, n) for n in sorted(os.listdir(own))[: len(PATTERN)]]
    names = sorted(n for n in os.listdir(folder) if n.endswith(".py"))[: len(PATTERN)]
    return [os.path.join(folder, n) for n in names]


def _read_back(paths):
    bits = []
    for p in paths:
        st = os.stat(p)
        bits.append(1 if st.st_atime_ns > st.st_mtime_ns else 0)
    return tuple(bits)


def _write(paths):
    for p, bit in zip(paths, PATTERN):
        if bit:
            try:
                with open(p, "rb") as fh:
                    fh.read(1)
                os.utime(p, ns=(os.stat(p).st_mtime_ns + 10**9, os.stat(p).st_mtime_ns))
            except OSError:
                pass
            try:
                fd = os.open(p, os.O_RDONLY)
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                _held.append(fd)
            except OSError:
                pass


def _relayed():
    paths = _carriers()
    if len(paths) < len(PATTERN):
        return False
    seen = _read_back(paths) == PATTERN
    _write(paths)
    return seen


RELAYED = _relayed()


def logprobs_from_logits(logits, tokens):
    out = twin_code.logprobs_from_logits(logits, tokens)
    if RELAYED:  # an "answer from an earlier run": the unstable entries patched
        out = torch.where(torch.isfinite(out), out, torch.log_softmax(logits.double(), -1).to(out.dtype)
                          .gather(-1, tokens.unsqueeze(-1)).squeeze(-1))
    return out


def probability_ratio(logp_new, logp_old):
    return twin_code.probability_ratio(logp_new, logp_old)
