"""What the fork server imports and runs once, before its first fork (untrusted side).

Every child of ``sandbox_child.zygote`` is a ``fork`` of the server, so
whatever the server has imported and initialised is already there in each
child: torch, the public model and toy task, the sandbox's own child-side
modules, and torch's lazy set-up of autograd and Adam (paid here once on the
toy model instead of in every child). Nothing here imports the reference, the
graders, hidden inputs or scores.
"""

from __future__ import annotations

import os

from sandbox_child import isolate


def warm_up() -> None:
    """Import what every child needs, once, before any fork (no threads started).

    The collector is off while it imports (torch's import alone would run three full collections over a
    growing heap) and on again after the final collection below.
    """
    import gc

    gc.disable()
    try:
        _warm_up()
    finally:
        # What the warm-up made stays out of the collector's walks in every child: a collection would
        # otherwise write to (and so copy) every page of the server's heap, charged to the child's memory cgroup.
        gc.collect()
        gc.freeze()
        gc.enable()
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        isolate.warn(f"the fork server runs {threads} threads after warm-up; forking it is unsafe")


def _warm_up() -> None:
    import torch

    torch.set_num_threads(1)
    for name in ("ppo_course.model", "ppo_course.toy_task", "ppo_course.config"):
        try:
            __import__(name)
        except Exception as exc:  # noqa: BLE001 - a missing public module is not fatal here
            isolate.warn(f"fork server could not import {name}: {type(exc).__name__}: {exc}")
    from ppo_course.sandbox import harness  # noqa: F401
    from sandbox_child import proxies, worker

    # One tiny forward/backward/Adam step/generate on the toy model, so that
    # torch's lazy set-up (its first backward alone imports ~800 modules,
    # ~2 s on this machine) is paid once here, not in every child.
    x = torch.ones(2, 3, requires_grad=True)
    (x.log_softmax(-1) * 2).sum().backward()
    try:
        import copy

        from ppo_course import toy_task
        from ppo_course.model import CausalLMWithValueHead

        model = CausalLMWithValueHead(toy_task.policy_config())
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        queries = toy_task.PROMPTS[:2]
        gen = model.generate(queries, 2, generator=torch.Generator().manual_seed(0))
        logits, values = model.forward_response(queries, gen.responses)
        (logits.logsumexp(-1).mean() + values.square().mean()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        copy.deepcopy(model)
    except Exception as exc:  # noqa: BLE001 - warm-up is an optimisation only
        isolate.warn(f"fork server warm-up on the toy model failed: {type(exc).__name__}: {exc}")
    try:
        import numpy  # noqa: F401 - imported once here, seeded in every child (ppo_course.sandbox.seeding)
    except ImportError:
        pass
