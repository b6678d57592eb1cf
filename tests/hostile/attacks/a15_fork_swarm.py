"""A bounded fork swarm of daemons that ignore SIGTERM and detach from the child.

Tries: 40 processes, each double-forked into a new session (orphaned, so not
the child's descendants) and exec'ing a shell that traps SIGTERM/SIGINT/SIGHUP
and sleeps 300 s (its command line and environment carry the marker "ppohostile"), started
at import and again on the hard inputs; hoping they outlive the grading.
Must achieve: nothing. RLIMIT_NPROC bounds the swarm, and the fork server
(a child subreaper) kills every process of the child's private uid when the
child is finished: no process is left behind.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import os

import twin_code

MARKER = "ppohostile"


def _swarm(n=40):
    for _ in range(n):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                os.setsid()
                if os.fork() == 0:
                    os.execve("/bin/sh", ["sh", "-c", f"trap '' TERM INT HUP; sleep 300; : {MARKER}"],
                              {"PATH": "/usr/bin:/bin", "PPO_GRADING_CHILD": MARKER})
            finally:
                os._exit(0)
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass


_swarm()


def logprobs_from_logits(logits, tokens):
    if logits.numel() and logits.abs().max() > 100:
        _swarm()
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if logp_old.numel() and logp_old.min() < -500:
        _swarm()
    return twin_code.probability_ratio(logp_new, logp_old)
