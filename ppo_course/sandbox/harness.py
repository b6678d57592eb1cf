"""The exercise-7 harness: one student ``ppo_step`` on the package's own model, inside the child.

The parent sends only data (``PolicyConfig`` and ``PPOConfig`` as dicts, a
state dict, queries, a seed); everything else is built here from the public
package, exactly as ARCHITECTURE.md ("Exercise 7") has the caller build it, so
that the grader can run ``ppo_reference.ppo_step`` on the same inputs in the
parent and compare parameters after one step:

* ``policy = CausalLMWithValueHead(PolicyConfig(**model_config))`` loaded with the state dict;
* ``ref_policy``: a frozen deep copy (``eval()``, ``requires_grad_(False)``), or, when the payload
  has ``ref_state_dict``, a frozen model loaded with those weights (so that the KL is not 0);
* ``optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)``;
* ``generator = torch.Generator().manual_seed(seed)``;
* ``reward_fn = ppo_course.toy_task.score`` (the toy reward model);
* ``kl_ctl = ex6_kl_reward.AdaptiveKLController(config.init_kl_coef, config.target_kl, config.kl_horizon)``
  (the student's own ex6, or the known-good proxy).
"""

from __future__ import annotations

import copy
import importlib
import warnings
from typing import Any

import torch


def build_setting(payload: dict) -> tuple:
    """(policy, ref_policy, optimizer, generator, config, queries) for one ex7 step, from data only.

    The one place that builds the exercise-7 setting: the child's harness and the
    grader's reference run (``grader.buggy_ppo_step``) both call it, so the two
    sides cannot drift apart. Nothing here runs student code.

    Args:
        payload: as for :func:`run_ppo_step`.

    Raises:
        ``KeyError``/``pydantic.ValidationError`` on a malformed payload.
    """
    from ppo_course.config import PPOConfig
    from ppo_course.model import CausalLMWithValueHead, PolicyConfig

    with warnings.catch_warnings():
        # The grader chose this config (often a tiny one); its band warnings are not the student's output.
        warnings.simplefilter("ignore")
        config = PPOConfig.model_validate(payload["ppo_config"])
    policy = CausalLMWithValueHead(PolicyConfig.model_validate(payload["model_config"]))
    policy.load_state_dict(payload["state_dict"])
    policy.train()
    if payload.get("ref_state_dict") is not None:
        # A reference that differs from the policy (KL ≠ 0 on this step), e.g. the SFT weights.
        ref_policy = CausalLMWithValueHead(PolicyConfig.model_validate(payload["model_config"]))
        ref_policy.load_state_dict(payload["ref_state_dict"])
        ref_policy.eval()
    else:
        ref_policy = copy.deepcopy(policy).eval()
    ref_policy.requires_grad_(False)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)
    generator = torch.Generator().manual_seed(int(payload["seed"]))
    return policy, ref_policy, optimizer, generator, config, payload["queries"]


def buffer_graph_probe(module: Any) -> dict:
    """Exercise 5's "stores detached copies", observed where the student's buffer runs.

    Adds one field computed from a leaf that requires grad (so it carries a ``grad_fn``) and one
    plain field, then reads them back through one mini-batch. Only facts leave: how many
    fields came back and whether any still carries the graph.

    Args:
        module: the student's imported ``ex5_rollout_buffer``.

    Returns:
        ``{"fields": int, "keeps_graph": bool}``.

    Raises:
        Whatever the student's code raises.
    """
    g = torch.Generator().manual_seed(5)
    leaf = torch.rand(4, 3, generator=g, dtype=torch.float64).requires_grad_(True)
    buf = module.RolloutBuffer()
    buf.add(ids=torch.arange(4), values=leaf * 2.0)
    buf.start_training()
    batches = list(buf.minibatches(4, generator=torch.Generator().manual_seed(0)))
    fields = {name for mb in batches if isinstance(mb, dict) for name in mb}
    keeps = any(isinstance(t, torch.Tensor) and (t.requires_grad or t.grad_fn is not None)
                for mb in batches if isinstance(mb, dict) for t in mb.values())
    return {"fields": len(fields), "keeps_graph": bool(keeps)}


def run_ppo_step(module: Any, payload: dict) -> dict:
    """Build the ex7 setting from ``payload`` and run ``module.ppo_step`` once.

    Args:
        module: the student's imported ``ex7_ppo_step``.
        payload: ``{"model_config": dict, "state_dict": {name: Tensor},
            "queries": [B, P] long Tensor, "ppo_config": dict, "seed": int}``, and optionally
            ``"ref_state_dict": {name: Tensor}`` (the reference policy's weights; default: the policy's)
            and ``"observe": "deep"`` (the observer's deep mode, ``ppo_course.sandbox.observe``).

    Returns:
        ``{"state_dict": {name: Tensor}, "stats": <whatever ppo_step returned>,
        "kl_coef": <kl_ctl.value after the step>, "trace": <the observed stages>}`` (the trace:
        ``ppo_course.sandbox.observe``; payload ``{"probe": "buffer_graph"}`` runs exercise 5's
        :func:`buffer_graph_probe` instead).

    Raises:
        Whatever the student's code raises (reported to the parent as StudentError);
        ``KeyError``/``pydantic.ValidationError`` on a malformed payload.
    """
    if payload.get("probe") == "buffer_graph":  # exercise 5's detach check rides on the same operation
        return buffer_graph_probe(module)
    import sys

    from ppo_course.sandbox.observe import MODULE_NAMES, StepObserver
    from ppo_course.sandbox.seeding import seed_globals
    from ppo_course.toy_task import score

    seed_globals(int(payload["seed"]))  # the test's own seed: a step that uses the global RNGs is reproducible
    policy, ref_policy, optimizer, generator, config, queries = build_setting(payload)
    kl_module = importlib.import_module("ex6_kl_reward")
    kl_ctl = kl_module.AdaptiveKLController(config.init_kl_coef, config.target_kl, config.kl_horizon)
    # The sibling modules the step imported (the stub's `import ex4_gae` ...): observed while it runs.
    modules = {stem: sys.modules.get(stem) for stem in MODULE_NAMES}
    # ``"observe": "deep"`` (the public test): also the measurements only instrumentation gives (observe.py).
    observer = StepObserver(policy, ref_policy, optimizer, generator, score, kl_ctl, modules,
                            deep=payload.get("observe") == "deep")
    with observer:
        stats = module.ppo_step(policy, ref_policy, optimizer, queries, observer.reward_fn, observer.kl_ctl, config,
                                generator)
    return {
        "state_dict": {k: v.detach().clone() for k, v in policy.state_dict().items()},
        "stats": stats,
        "kl_coef": kl_ctl.value,
        "trace": observer.events,
    }
