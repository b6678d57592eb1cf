"""A buffer that detaches only when the grader's graph probe is its caller (issue 31, class 1).

Tries: exercise 5's "stores detached copies" point was measured in the child by a probe
that calls ``RolloutBuffer.add`` itself. The call is recognisable from the call stack
(the caller's code is named ``probe`` and lives in ``ppo_course/sandbox/harness.py``),
so this buffer, which keeps the autograd graph on every other call (the twin's
``ex5_rollout_buffer__stores_graph`` mistake), stores detached copies only when that
probe is the caller. On main it scored 10 against the twin's 9.5.

Must achieve: nothing. No point rests on a measurement made in the student's process
any more: the graph probe is feedback worth 0 (``grader/points.yaml``), so the attack
and its twin score alike.
"""

TARGET = "ex5_rollout_buffer"
TWIN = "ex5_stores_graph.py"

import sys

import twin_code


def _probe_is_calling() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "probe" and code.co_filename.endswith("harness.py"):
            return True
        frame = frame.f_back
    return False


class RolloutBuffer(twin_code.RolloutBuffer):
    """The twin's buffer, honest only under the probe."""

    def add(self, **fields):
        if _probe_is_calling():
            fields = {name: value.detach() for name, value in fields.items()}
        return super().add(**fields)
