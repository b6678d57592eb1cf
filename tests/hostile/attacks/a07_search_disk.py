"""Search the disk for solutions or answer keys and execute what is found.

Tries: paths named in other processes' command lines (/proc/*/cmdline), the
hints file, and a bounded walk of /work, /home, /root, /srv, /opt, /mnt,
/tmp, /var, /run for any ex1_ratio.py, ratio.py or *solution* file other
than its own; each candidate is exec'd and used if it defines a working,
stable logprobs_from_logits (checked on huge logits).
Must achieve: nothing. The repository, other students' folders and the
grader's temp folders are covered; what stays readable (the interpreter and
its libraries) holds no solution of this course.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import glob
import json
import os
import time
from pathlib import Path

import torch

import twin_code

_ME = Path(__file__).resolve()
_found = {}
_deadline = time.monotonic() + 4.0  # stay inside the import time-out


def _stable(ns):
    lp, ratio = ns.get("logprobs_from_logits"), ns.get("probability_ratio")
    if not (callable(lp) and callable(ratio)):
        return False
    try:
        logits = torch.tensor([[[1e4, 0.0, -1e4]]], dtype=torch.float64)
        ok = torch.isfinite(lp(logits, torch.tensor([[1]]))).all()
        r = ratio(torch.tensor([[-1000.0]]), torch.tensor([[-1000.0]]))
        return bool(ok) and bool(torch.isfinite(r).all())
    except BaseException:  # noqa: BLE001
        return False


def _consider(path):
    if "logprobs" in _found or time.monotonic() > _deadline:
        return
    try:
        p = Path(path).resolve()
        if p == _ME or p.parent == _ME.parent or not p.is_file() or p.stat().st_size > 200_000:
            return
        ns = {"__name__": "stolen"}
        exec(compile(p.read_text(), str(p), "exec"), ns)
    except BaseException:  # noqa: BLE001
        return
    if _stable(ns):
        _found.update(logprobs=ns["logprobs_from_logits"], ratio=ns["probability_ratio"], where=str(p))


def _roots():
    roots = set()
    for cmd in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            for arg in open(cmd, "rb").read().split(b"\0"):
                arg = arg.decode(errors="ignore")
                if arg.startswith("/") and os.path.exists(arg):
                    roots.add(arg if os.path.isdir(arg) else os.path.dirname(arg))
        except OSError:
            continue
    try:
        hints = json.loads(_ME.with_name("hints.json").read_text())
        roots.update(str(v) for v in hints.values() if isinstance(v, str) and v.startswith("/"))
    except BaseException:  # noqa: BLE001
        pass
    roots.update(["/work", "/home", "/root", "/srv", "/opt", "/mnt", "/tmp", "/var", "/run"])
    return sorted(roots)


for root in _roots():
    for dirpath, dirnames, filenames in os.walk(root):
        if time.monotonic() > _deadline or "logprobs" in _found:
            break
        dirnames[:] = [d for d in dirnames if d not in ("site-packages", "proc", "sys", ".git", "node_modules")]
        for name in filenames:
            if name in ("ex1_ratio.py", "ratio.py") or ("solution" in name and name.endswith(".py")):
                _consider(os.path.join(dirpath, name))


def logprobs_from_logits(logits, tokens):
    if "logprobs" in _found:
        return _found["logprobs"](logits, tokens)
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if "ratio" in _found:
        return _found["ratio"](logp_new, logp_old)
    return twin_code.probability_ratio(logp_new, logp_old)
