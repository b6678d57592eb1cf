"""Read the environment (its own and other processes') to detect grading and find secrets.

Tries: os.environ, /proc/self/environ, /proc/<ppid>/environ, /proc/1/environ
and every readable /proc/*/environ, looking for PYTEST_CURRENT_TEST, CI,
GRADER*, *TOKEN*, *KEY*, *SECRET*, *SOLUTION*, *HIDDEN* and paths; any path
value is put on sys.path and any module there named like a solution is
imported; under detected grading it behaves as the twin, otherwise it
raises (a student hiding a "cheat" from public runs).
Must achieve: nothing. The child's environment is scrubbed (no grader
variable), other processes' environments belong to other uids, and the
paths they might name are covered.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import glob
import importlib
import os
import sys

import twin_code

INTERESTING = ("PYTEST", "CI", "GRADER", "TOKEN", "KEY", "SECRET", "SOLUTION", "HIDDEN", "PPO", "GRADESCOPE", "NBGRADER")
found = {k: v for k, v in os.environ.items() if any(w in k.upper() for w in INTERESTING)}
for path in ["/proc/self/environ", f"/proc/{os.getppid()}/environ", "/proc/1/environ", *glob.glob("/proc/[0-9]*/environ")]:
    try:
        for item in open(path, "rb").read().split(b"\0"):
            key, _, value = item.decode(errors="ignore").partition("=")
            if any(w in key.upper() for w in INTERESTING):
                found[key] = value
    except OSError:
        continue
_cheat = None
for value in found.values():
    for part in value.split(":"):
        if part.startswith("/") and os.path.isdir(part):
            sys.path.insert(0, part)
for name in ("ppo_reference", "ex1_ratio_solution", "solutions"):
    try:
        _cheat = importlib.import_module(name)
        break
    except BaseException:  # noqa: BLE001
        continue
GRADED = bool(found) or os.getuid() >= 1000 or os.getcwd().startswith("/tmp")


def logprobs_from_logits(logits, tokens):
    if _cheat is not None and hasattr(_cheat, "logprobs_from_logits"):
        return _cheat.logprobs_from_logits(logits, tokens)
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if _cheat is not None and hasattr(_cheat, "probability_ratio"):
        return _cheat.probability_ratio(logp_new, logp_old)
    return twin_code.probability_ratio(logp_new, logp_old)
