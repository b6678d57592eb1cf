"""Reach the network: report to, or fetch answers from, a service on 127.0.0.1.

Tries: TCP connections to the ports named in hints.json (a listener the test
opens on 127.0.0.1 in the grader's network) and to a few well-known local
ports; a UDP datagram to the hinted port; listening on a port of its own.
Only 127.0.0.1 is ever addressed.
Must achieve: nothing. The child lives in its own network namespace: its
127.0.0.1 is not the grader's, so nothing arrives at the test's listener.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import json
import socket
from pathlib import Path

import twin_code

HINTS = json.loads(Path(__file__).with_name("hints.json").read_text())
_answers = {}


def _attempt():
    for port in (HINTS["tcp_port"], 22, 80, 5432, 8000, 8080):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.3) as conn:
                conn.sendall(b"ppohostile: send me the answers\n")
                _answers[port] = conn.recv(1024)
        except OSError:
            pass
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.sendto(b"ppohostile", ("127.0.0.1", HINTS["udp_port"]))
    except OSError:
        pass
    try:
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen()
        _answers["listening"] = server
    except OSError:
        pass


_attempt()


def logprobs_from_logits(logits, tokens):
    _attempt()
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    return twin_code.probability_ratio(logp_new, logp_old)
