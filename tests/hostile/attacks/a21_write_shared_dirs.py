"""Leave files in the machine's world-writable folders (a channel to later gradings or other students).

Tries: create marker files in /tmp, /var/tmp, /dev/shm, /run/lock,
/var/lock and /dev/mqueue; read back any that an earlier child (this
student's, or another one's) left there, as a covert channel that survives
the child.
Must achieve: nothing. Every world-writable folder the child can see must be
a private tmpfs that vanishes with it: nothing appears in the real folders.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import os

import twin_code

MARKER = "ppohostile"
PLACES = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue", "/run/user", "/var/crash")
_seen_before = []


def _attempt():
    for place in PLACES:
        try:
            _seen_before.extend(n for n in os.listdir(place) if MARKER in n)
        except OSError:
            pass
        try:
            with open(os.path.join(place, f"{MARKER}-{os.getpid()}"), "w") as fh:
                fh.write("a note for the next grading\n")
        except OSError:
            pass


_attempt()


def logprobs_from_logits(logits, tokens):
    _attempt()
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    _attempt()
    return twin_code.probability_ratio(logp_new, logp_old)
