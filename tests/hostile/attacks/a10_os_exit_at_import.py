"""os._exit(0) at import: the process vanishes with status 0 before any test runs.

Tries: a clean exit code with no exception to report, flushing a fake
"10 passed" line first.
Must achieve: nothing (an import that ends the process is a broken module).
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import os

from twin_code import logprobs_from_logits, probability_ratio  # noqa: F401

os.write(1, b"========== 10 passed in 0.01s ==========\n")
os._exit(0)
