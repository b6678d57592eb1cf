"""Start from this student's own staged copy, by its real path, and step sideways to the classmates'.

Tries: in a real ``grade-batch``, the child knows its own id (hints.json) and
so the path of its own staged copy, OUT_DIR/.batch/staging/<own id>; it
stats and lists that path, then ``<own id>/..`` and ``<own id>/../<classmate>``,
and keeps trying for a while (a classmate graded at the same time, --jobs 2, is
staged just before its dispatch). If any of them is visible, the module answers
with a numerically stable implementation, so that the leak shows as points
above the honest twin.
Must achieve: nothing. The child reads its own submission from a private copy
in its own /tmp; no path of the batch, its own staged copy's included, is in
its minimal root, and each staged copy is a 0700 folder (issue 22 item 2).
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import json
import os
import time
from pathlib import Path

import torch

import twin_code

HINTS = json.loads(Path(__file__).with_name("hints.json").read_text())
_seen = []


def _probe():
    if "staging_dir" not in HINTS:
        return False
    own = os.path.join(HINTS["staging_dir"], HINTS.get("own_id", "nobody"))
    paths = [own, os.path.join(own, ".."), os.path.join(own, "..", HINTS.get("classmate", "nobody"))]
    for _ in range(10):  # bounded: about 0.5 s
        for path in paths:
            try:
                os.stat(path)
                os.listdir(path)
                return True
            except OSError:
                pass
        time.sleep(0.05)
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
