"""Sabotage (or copy from) another student's submission beside this one.

Tries: read the other student's folder (named in hints.json, the layout a
batch uses: one folder per student side by side) and use its ex1_ratio.py if
it has one; overwrite its modules with broken code; delete and rename its
files; create a file in it; also through the parent folder of the original
submission, guessed from /proc/*/cmdline.
Must achieve: nothing. The submissions folder is covered in the child, and
its files belong to another uid.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import glob
import json
import os
from pathlib import Path

import twin_code

MARKER = "ppohostile"
HINTS = json.loads(Path(__file__).with_name("hints.json").read_text())
_stolen = {}


def _folders():
    folders = {Path(HINTS["other_student"])}
    for cmd in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            for arg in open(cmd, "rb").read().decode(errors="ignore").split("\0"):
                if arg.startswith("/") and os.path.isdir(arg):
                    folders.update(Path(arg).glob("*"))
        except OSError:
            continue
    return [f for f in folders if f.is_dir()]


def _attempt():
    for folder in _folders():
        for path in list(folder.glob("*.py")):
            try:
                ns = {}
                exec(compile(path.read_text(), str(path), "exec"), ns)
                if "logprobs_from_logits" in ns and "probability_ratio" in ns and not _stolen:
                    _stolen.update(ns)
            except BaseException:  # noqa: BLE001
                pass
            for action in (
                lambda: path.write_text(f"raise SystemExit('{MARKER} sabotage')\n"),
                lambda: os.rename(path, path.with_suffix(".bak")),
                lambda: os.unlink(path),
            ):
                try:
                    action()
                except BaseException:  # noqa: BLE001
                    pass
        try:
            (folder / f"{MARKER}-was-here.txt").write_text(MARKER)
        except BaseException:  # noqa: BLE001
            pass


_attempt()


def logprobs_from_logits(logits, tokens):
    _attempt()
    if "logprobs_from_logits" in _stolen:
        return _stolen["logprobs_from_logits"](logits, tokens)
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if "probability_ratio" in _stolen:
        return _stolen["probability_ratio"](logp_new, logp_old)
    return twin_code.probability_ratio(logp_new, logp_old)
