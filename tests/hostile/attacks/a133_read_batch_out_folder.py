"""Read the batch's out folder: classmates' results, feedback and the batch's scratch.

Tries: in a real ``grade-batch``, list OUT_DIR (named in hints.json), read a
classmate graded earlier (OUT_DIR/<classmate>/results.json, feedback.md,
batch.json), list OUT_DIR/.batch and OUT_DIR/.batch/work (the workers' scratch),
and read OUT_DIR/gradebook.csv. If anything is readable, the module answers
with a numerically stable implementation, so that the leak shows as points
above the honest twin.
Must achieve: nothing. The out folder is the TA's: the child's minimal root
holds no path of it (issue 22 item 2).
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


def _probe():
    if "out_dir" not in HINTS:
        return False
    out = Path(HINTS["out_dir"])
    mate = out / HINTS.get("classmate", "nobody")
    for folder in (out, out / ".batch", out / ".batch" / "work", mate):
        try:
            os.listdir(folder)
            return True
        except OSError:
            pass
    for name in ("results.json", "feedback.md", "batch.json"):
        try:
            (mate / name).read_bytes()
            return True
        except OSError:
            pass
    try:
        (out / "gradebook.csv").read_bytes()
        return True
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
