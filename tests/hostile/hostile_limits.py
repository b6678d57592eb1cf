"""The hostile suite's sandbox limits (a module of its own: ``conftest`` is a name every test folder uses,
so ``from conftest import ...`` depends on which folder's conftest pytest loaded last)."""

from __future__ import annotations

from grader.hidden.provider import EX1_6_LIMITS
from grader.sandbox import Limits

#: The suite's limits: production's (grader.hidden.provider.EX1_6_LIMITS: CPU-time limits, two
#: respawns) with 6 CPU s instead of 20 and a 20 s wall-clock backstop instead of 60, so that the
#: loops and hogs cost seconds, not minutes (the path is tested, not its length). 6 CPU s leave
#: 3x room for a correct module (< 2 CPU s for all its tests) on a loaded machine.
SUITE_LIMITS = Limits(**{**EX1_6_LIMITS, "cpu_time_s": 6, "call_timeout_s": 20.0})
