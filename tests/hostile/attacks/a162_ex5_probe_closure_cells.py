"""Rewrite the closure cells of the grader's graph probe through ``gc`` (issue 31, class 1).

Tries: the probe of exercise 5's "stores detached copies" is made before the student's
import and keeps its primitives in its closure, but closure cells are writable and the
probe is reachable through ``gc``. At import this attack finds every function named
``probe`` from ``ppo_course/sandbox/harness.py`` and sets its ``requires_grad`` and
``grad_fn`` cells to readers that always say "no graph": the twin's buffer, which keeps
the graph, then looks detached. On main it scored 10 against the twin's 9.5.

Must achieve: nothing. The graph probe is feedback worth 0 (``grader/points.yaml``):
no point depends on a measurement made where student code runs.
"""

TARGET = "ex5_rollout_buffer"
TWIN = "ex5_stores_graph.py"

import gc
import types

import twin_code

RolloutBuffer = twin_code.RolloutBuffer

for _obj in gc.get_objects():
    if isinstance(_obj, types.FunctionType) and _obj.__code__.co_name == "probe" \
            and _obj.__code__.co_filename.endswith("harness.py") and _obj.__closure__:
        for _name, _cell in zip(_obj.__code__.co_freevars, _obj.__closure__):
            if _name == "requires_grad":
                _cell.cell_contents = lambda value: False
            elif _name == "grad_fn":
                _cell.cell_contents = lambda value: None
