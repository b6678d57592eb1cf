"""Forge the grader's protocol: write replies of its own onto the channel (fd 3).

Tries: find the worker's Channel among the child's objects (gc) and replace
its send_value so that every reply claims success with the twin's value
twice; write a forged "ok" frame with an arbitrary id, a "stop" frame and a
"ready" frame straight onto fd 3 before answering; on the hard inputs send
garbage bytes (a bad magic, a huge announced length).
Must achieve: nothing. Replies are matched to requests by id and decoded as
data only: an out-of-turn or malformed frame is a crash of this call, and a
forged value is no better than the twin's own.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import gc
import json
import os
import struct

import twin_code


def _frame(header):
    body = json.dumps(header).encode()
    return b"PPOS" + struct.pack("<II", len(body), 0) + body


def _forge():
    for obj in gc.get_objects():
        if type(obj).__name__ == "Channel" and hasattr(obj, "send_value"):
            original = obj.send_value

            def twice(header, key, value, original=original):
                original(dict(header), key, value)
                original(dict(header), key, value)

            obj.send_value = twice
    for header in ({"m": "ok", "id": 10**6, "value": 1.0}, {"m": "stop", "id": 2}, {"m": "ready", "info": {"uid": 0}}):
        try:
            os.write(3, _frame(header))
        except OSError:
            pass


def logprobs_from_logits(logits, tokens):
    if logits.numel() and logits.abs().max() > 100:
        os.write(3, b"JUNK" + struct.pack("<II", 2**31, 2**31))
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if logp_old.numel() and logp_old.min() < -500:
        _forge()
    return twin_code.probability_ratio(logp_new, logp_old)
