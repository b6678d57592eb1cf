"""Print and write a fake results file (Gradescope's results.json, a pytest summary).

Tries: print a perfect results.json and "N passed" lines on stdout and
stderr; write results.json / feedback.md / gradebook.csv into the working
directory, HOME, /tmp, /autograder/results (Gradescope's place), the
folder the hints name as the grader's output, and every --out folder seen in
other processes' command lines.
Must achieve: nothing. Printed text is captured and never parsed; the
writable places are the child's private tmpfs; the grader's folders are
owned by another uid (and hidden).
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import glob
import json
import os
import sys
from pathlib import Path

import twin_code

MARKER = "ppohostile"
FAKE = {"score": 100.0, "tests": [{"name": "all", "score": 100.0, "max_score": 100.0, "status": "passed", "output": MARKER}],
        "extra_data": {"max_score": 100.0, "exercises": {"ex1_ratio": {"score": 10.0, "max_score": 10.0}}}}


def _targets():
    places = {os.getcwd(), os.path.expanduser("~"), "/tmp", "/autograder/results", "/autograder"}
    try:
        places.add(json.loads(Path(__file__).with_name("hints.json").read_text())["results_dir"])
    except BaseException:  # noqa: BLE001
        pass
    for cmd in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            args = open(cmd, "rb").read().decode(errors="ignore").split("\0")
        except OSError:
            continue
        for flag, value in zip(args, args[1:]):
            if flag in ("--out", "--results") and value.startswith("/"):
                places.add(value)
    return places


def _spray():
    text = json.dumps(FAKE)
    print(text)
    print("============================== 14 passed in 0.10s ==============================")
    print(text, file=sys.stderr)
    for place in _targets():
        for name in ("results.json", "feedback.md", "gradebook.csv", f"{MARKER}-results.json"):
            try:
                os.makedirs(place, exist_ok=True)
                with open(os.path.join(place, name), "w") as fh:
                    fh.write(text)
            except OSError:
                pass


_spray()


def logprobs_from_logits(logits, tokens):
    _spray()
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    _spray()
    return twin_code.probability_ratio(logp_new, logp_old)
