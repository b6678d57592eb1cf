"""Exercise 1: memory the per-process limits do not count (issue 19, class 2).

Tries: on its first call, forks 6 processes that each fill 512 MiB (every
page written), fills 8 memfds of 16 MiB and the private /tmp and /dev/shm,
so that the child holds ~3.3 GiB while RLIMIT_AS (per process, 2 GiB) lets
each piece through; then answers with the twin's code, as if nothing happened.
In a ``--jobs 2`` batch the kernel's OOM killer would otherwise pick a
classmate's child or the grader.
Must achieve: nothing. The child's memory cgroup holds all its processes,
memfds and tmpfs pages to one budget (``Limits.memory_mb``); the OOM kills the
whole child, reported as out of memory for this student only, the classmate
graded beside it is unharmed, and three gradings give the same grade.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import mmap
import os
import time

import twin_code

MARKER = "ppohostile"
PROCESSES = 6
EACH = 512 * 2**20
_kept = []


def _swarm():
    r, w = os.pipe()
    pids = []
    for _ in range(PROCESSES):
        pid = os.fork()
        if pid == 0:
            try:
                hog = mmap.mmap(-1, EACH)
                for offset in range(0, EACH, mmap.PAGESIZE):  # one byte a page: every page resident
                    hog[offset] = 1
                os.write(w, b"x")
                time.sleep(20 + len(hog) % 2)
            finally:
                os._exit(0)
        pids.append(pid)
    for i in range(8):  # memory-backed files count against no process's RLIMIT_AS
        try:
            fd = os.memfd_create(f"{MARKER}-{i}")
            for _ in range(16):
                os.write(fd, b"\x02" * 2**20)
            _kept.append(fd)
        except OSError:
            break
    for path, size in (("/dev/shm/" + MARKER, 2**20), ("/tmp/" + MARKER, 60 * 2**20)):
        try:
            with open(path, "wb") as fh:
                for _ in range(size // 2**20):
                    fh.write(b"\x03" * 2**20)
        except OSError:
            pass
    got = 0
    while got < PROCESSES:  # no deadline of its own: what happens may not depend on the machine's load
        got += len(os.read(r, 64))
    for pid in pids:  # nothing stopped it: tidy up and carry on
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except OSError:
            pass


def logprobs_from_logits(logits, tokens):
    _swarm()
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    return twin_code.probability_ratio(logp_new, logp_old)
