"""Read a classmate's staged copy and answer with it.

Tries: in a real ``grade-batch``, open OUT_DIR/.batch/staging/<classmate>/ex1_ratio.py
(the classmate's id and the layout named in hints.json), by its path and with
``os.open(O_RDONLY)``; ``os.stat`` it; walk every folder of the staging
folder for an ``ex1_ratio.py`` that is not this one; execute what it reads and
answer with the classmate's functions where they are right and the twin is wrong.
Must achieve: nothing. Each student's staged copy is private (a 0700 folder of
its own, outside the child's minimal root): the child sees only its own copy, in
its own /tmp (issue 22 item 2).
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import json
import os
from pathlib import Path

import torch

import twin_code

HINTS = json.loads(Path(__file__).with_name("hints.json").read_text())
_stolen = {}
_tried = []


def _good(ns):
    try:
        lp = ns["logprobs_from_logits"](torch.tensor([[[1e4, 0.0]]]), torch.tensor([[1]]))
        r = ns["probability_ratio"](torch.tensor([[-1000.0]]), torch.tensor([[-1000.0]]))
        return bool(torch.isfinite(lp).all()) and bool(torch.isfinite(r).all())
    except BaseException:  # noqa: BLE001
        return False


def _candidates():
    if "staging_dir" not in HINTS:
        return []
    staging = Path(HINTS["staging_dir"])
    found = [staging / HINTS.get("classmate", "") / "ex1_ratio.py"]
    try:
        for dirpath, _, files in os.walk(staging):
            found += [Path(dirpath) / f for f in files if f == "ex1_ratio.py"]
    except OSError:
        pass
    return found


def _steal():
    _tried.append(True)
    for path in _candidates():
        try:
            fd = os.open(path, os.O_RDONLY)
            with os.fdopen(fd, "rb") as fh:
                source = fh.read()
            ns = {"__name__": "stolen"}
            exec(compile(source, str(path), "exec"), ns)
        except BaseException:  # noqa: BLE001
            continue
        if _good(ns):
            _stolen.update(ns)
            return


def logprobs_from_logits(logits, tokens):
    if not _tried:
        _steal()
    if _stolen:
        return _stolen["logprobs_from_logits"](logits, tokens)
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if not _tried:
        _steal()
    if _stolen:
        return _stolen["probability_ratio"](logp_new, logp_old)
    return twin_code.probability_ratio(logp_new, logp_old)
