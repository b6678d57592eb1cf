"""Loop forever, ignoring SIGTERM/SIGINT/SIGHUP and swallowing every exception.

Tries: on the inputs where the twin is wrong, never return (hoping the test
is abandoned without a failure, or that the grader gives up on the whole
submission). Bounded at 120 s so that nothing runs forever even if the
sandbox were broken.
Must achieve: nothing. The call times out, the child is SIGKILLed (which
cannot be ignored) and the test fails; the other exercise is unaffected.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import signal
import time

import twin_code


def _spin():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM, signal.SIGUSR1):
        signal.signal(sig, signal.SIG_IGN)
    stop = time.monotonic() + 120
    while time.monotonic() < stop:
        try:
            sum(range(10000))
        except BaseException:  # noqa: BLE001 - swallow even KeyboardInterrupt/SystemExit
            pass


def logprobs_from_logits(logits, tokens):
    if logits.numel() and logits.abs().max() > 100:
        _spin()
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if logp_old.numel() and logp_old.min() < -500:
        _spin()
    return twin_code.probability_ratio(logp_new, logp_old)
