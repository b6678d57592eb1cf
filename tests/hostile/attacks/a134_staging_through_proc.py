"""Reach the staging folder sideways, through /proc: other processes' working folders, roots and open files.

Tries: for every process visible in /proc (the worker that grades this student
runs in OUT_DIR/.batch/work/<id>/cwd, its fork server and the batch elsewhere),
follow ``/proc/<pid>/cwd``, ``/proc/<pid>/root`` and every ``/proc/<pid>/fd/*``
link, then go up to ``.batch/staging`` from there and list it; and read
``/proc/self/mountinfo`` for a mount whose source names ``.batch``. If any
step reaches the batch's folders, the module answers with a numerically stable
implementation, so that the leak shows as points above the honest twin.
Must achieve: nothing. The child has its own /proc (or none of the grader's
processes are its to follow) and a minimal root without the batch (issue 22 item 2).
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import json
import os
from pathlib import Path

import torch

import twin_code

HINTS = json.loads(Path(__file__).with_name("hints.json").read_text())
_seen = []


def _reaches_batch(base):
    for up in ("", "..", "../..", "../../..", "../../../.."):
        for rest in (".batch/staging", "staging", HINTS.get("staging_dir", "/nonexistent").lstrip("/")):
            try:
                os.listdir(os.path.join(base, up, rest))
                return True
            except OSError:
                pass
    return False


def _probe():
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()][:500]
    except OSError:
        pids = []
    for pid in pids:
        links = [f"/proc/{pid}/cwd", f"/proc/{pid}/root"]
        try:
            links += [f"/proc/{pid}/fd/{fd}" for fd in os.listdir(f"/proc/{pid}/fd")][:64]
        except OSError:
            pass
        for link in links:
            try:
                target = os.readlink(link)
            except OSError:
                continue
            if ".batch" in target or (os.path.isdir(link) and _reaches_batch(link)):
                return True
    try:
        return ".batch" in Path("/proc/self/mountinfo").read_text()
    except OSError:
        return False


def logprobs_from_logits(logits, tokens):
    if not _seen:
        _seen.append(_probe())
    if _seen[0]:
        return torch.log_softmax(logits, dim=-1).gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if not _seen:
        _seen.append(_probe())
    if _seen[0]:
        return torch.exp(logp_new - logp_old)
    return twin_code.probability_ratio(logp_new, logp_old)
