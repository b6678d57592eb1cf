"""Shared set-up for the reference-library tests: one torch thread.

The hypothesis settings live in ``ref_inputs.REFERENCE_SETTINGS`` and are
applied per test, not loaded as the global profile, so that they cannot change
other folders' tests when the whole suite runs in one process.
"""

import torch

# The machine is shared; one thread keeps these small kernels fast and fair.
torch.set_num_threads(1)
