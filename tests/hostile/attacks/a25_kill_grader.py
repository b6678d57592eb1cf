"""Kill or freeze the grader: its fork server, the grading process, every process it may signal.

Tries: on the inputs where the twin is wrong, SIGSTOP then SIGKILL to the
parent (the fork server) and to the grading process (pid from hints.json),
SIGKILL to its own process group, then kill(-1, SIGKILL) (every process
this uid may signal), hoping the test is lost rather than failed.
Only those targets are addressed (never a broad sweep of the machine).
Must achieve: nothing. The child's uid may signal only its own processes:
the call fails (the child dies), the grading carries on.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import json
import os
import signal
from pathlib import Path

import twin_code

HINTS = json.loads(Path(__file__).with_name("hints.json").read_text())


def _attempt():
    for pid in (os.getppid(), int(HINTS["grader_pid"])):
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
    if os.getuid() >= 1000:  # this test's own safety catch: never kill(-1) as root or the grader's user
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass


def logprobs_from_logits(logits, tokens):
    if logits.numel() and logits.abs().max() > 100:
        _attempt()
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if logp_old.numel() and logp_old.min() < -500:
        _attempt()
    return twin_code.probability_ratio(logp_new, logp_old)
