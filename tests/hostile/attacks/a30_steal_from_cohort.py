"""Copy a classmate's work during batch grading: their submission, or its staged copy beside ours.

Tries: in the layout of ``ppo-course grade-batch`` (one folder per student in
SUBMISSIONS_DIR; staged copies under OUT_DIR/.batch/staging/<student>; both
paths named in hints.json, as a student who knows the TA's set-up would
know them), walk the classmates' folders and staged copies, execute every
ex1_ratio.py found, and answer with the first one that is right where the
twin is wrong (stable on huge logits, finite at −1000).
Must achieve: nothing. Submissions and the batch's output are not the
child's to read: they must be covered like the instructor folders.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import json
from pathlib import Path

import torch

import twin_code

HINTS = json.loads(Path(__file__).with_name("hints.json").read_text())
_stolen = {}


def _good(ns):
    try:
        lp = ns["logprobs_from_logits"](torch.tensor([[[1e4, 0.0]]]), torch.tensor([[1]]))
        r = ns["probability_ratio"](torch.tensor([[-1000.0]]), torch.tensor([[-1000.0]]))
        return bool(torch.isfinite(lp).all()) and bool(torch.isfinite(r).all())
    except BaseException:  # noqa: BLE001
        return False


def _search():
    roots = [Path(HINTS[k]) for k in ("submissions_dir", "other_student") if k in HINTS]
    if "out_dir" in HINTS:
        roots.append(Path(HINTS["out_dir"]) / ".batch" / "staging")
    for root in roots:
        try:
            candidates = list(root.rglob("ex1_ratio.py")) + ([root / "ex1_ratio.py"] if root.is_dir() else [])
        except OSError:
            continue
        for path in candidates:
            if path.resolve() == Path(__file__).resolve() or _stolen:
                continue
            try:
                ns = {"__name__": "stolen"}
                exec(compile(path.read_text(), str(path), "exec"), ns)
            except BaseException:  # noqa: BLE001
                continue
            if _good(ns):
                _stolen.update(ns, where=str(path))


def logprobs_from_logits(logits, tokens):
    if not _stolen:
        _search()
    if _stolen:
        return _stolen["logprobs_from_logits"](logits, tokens)
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if not _stolen:
        _search()
    if _stolen:
        return _stolen["probability_ratio"](logp_new, logp_old)
    return twin_code.probability_ratio(logp_new, logp_old)
