"""List the batch's staging folder, where every classmate's staged copy lies.

Tries: in a real ``grade-batch``, ``os.listdir``, ``os.scandir`` and ``glob`` on
OUT_DIR/.batch/staging (the path named in hints.json, as a student who knows
the TA's set-up would know it), and ``os.stat`` on it. If any of them works
(the folder is visible at all), the module answers with a numerically stable
implementation, so that the leak shows as points above the honest twin.
Must achieve: nothing. The staging folder is not the child's to see: its
minimal root holds no path of the batch, and the folder is 0700 (issue 22 item 2).
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import glob
import json
import os
from pathlib import Path

import torch

import twin_code

HINTS = json.loads(Path(__file__).with_name("hints.json").read_text())
_seen = []


def _probe():
    if "staging_dir" not in HINTS:
        return False
    where = HINTS["staging_dir"]
    for look in (os.listdir, lambda p: [e.name for e in os.scandir(p)], lambda p: glob.glob(p + "/*") or None,
                 os.stat):
        try:
            if look(where) is not None:
                return True
        except OSError:
            continue
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
