"""sys.exit(0) at import, hoping a clean exit status reads as "all tests passed".

Tries: SystemExit(0) while the module is imported.
Must achieve: nothing. The import fails, so the exercise scores 0 (at most
the twin's score), and the other exercise, in its own child, is unaffected.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import sys

from twin_code import logprobs_from_logits, probability_ratio  # noqa: F401

sys.exit(0)
