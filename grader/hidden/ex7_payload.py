"""Exercise 7's hidden payloads: the harness payload the student's step and the reference's step both get.

`make_payload` builds it (Book fig. 5.1's toy task, §5.5-§5.8's PPOConfig): the toy policy's initial
weights (seeded, cached per grader version), the prompts, the PPOConfig dict and the generator seed;
optionally a perturbed reference policy and the KL controller's starting value. Trusted side only.
"""

from __future__ import annotations

import warnings

import torch

from grader.hidden.cache import cached, digest


def _ppo_config(**overrides) -> dict:
    from ppo_course.config import PPOConfig

    base = dict(batch_size=16, mini_batch_size=4, gradient_accumulation_steps=2, ppo_epochs=2)
    with warnings.catch_warnings():  # the small test batch is outside the book's band on purpose
        warnings.simplefilter("ignore")
        return PPOConfig.toy(**{**base, **overrides}).model_dump()


#: Digests (`grader.hidden.cache.digest`) of the weights `initial_state` handed out in this process.
_DRAWN_STATES: set[bytes] = set()


def initial_state(seed: int) -> dict[str, torch.Tensor]:
    """A freshly initialised toy policy (seeded; no SFT needed to compare one step). Cached per grader version."""
    state = cached("ex7", ("initial_state", seed), lambda: _fresh_state(seed), persist=True)
    _DRAWN_STATES.add(digest("ex7_state", state))
    return state


def is_drawn_state(state: dict[str, torch.Tensor]) -> bool:
    """True when ``state`` holds the exact weights of an `initial_state` (drawn from the hidden seeds alone), so
    that a reference computation on it may be kept in the grader's store on disk; False for any other
    weights (a student's step's, which would fill the store one entry per student) or no version key."""
    try:
        return digest("ex7_state", state) in _DRAWN_STATES
    except TypeError:
        return False


def _fresh_state(seed: int) -> dict[str, torch.Tensor]:
    from ppo_course import toy_task
    from ppo_course.model import CausalLMWithValueHead

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return {k: v.clone() for k, v in CausalLMWithValueHead(toy_task.policy_config()).state_dict().items()}


def perturbed(state: dict[str, torch.Tensor], scale: float, seed: int) -> dict[str, torch.Tensor]:
    """`state` plus seeded N(0, scale²) noise on every float tensor (deterministic: its own generator)."""
    g = torch.Generator().manual_seed(seed)
    return {k: v + scale * torch.randn(v.shape, generator=g, dtype=v.dtype) if v.is_floating_point() else v.clone()
            for k, v in state.items()}


def make_payload(seed: int = 0, batch: int = 16, state: dict | None = None, config_seed: int | None = None,
                 ref_noise: float = 0.0, kl_coef: float | None = None, **config) -> dict:
    """The harness payload: model config, initial weights, prompts, PPOConfig dict and the generator seed
    (`seed`; `config_seed` sets PPOConfig.seed, which a correct step never uses for sampling or shuffling).
    `ref_noise` > 0 adds `ref_state_dict`: the reference policy is the initial weights plus seeded noise of
    that scale, so that the KL to it is not 0 on the graded step (without it, ref_policy = policy).
    `kl_coef`: the KL controller's value when the step starts (`harness.kl_controller_start`; default: the
    config's init_kl_coef), as after earlier steps of a run."""
    if config_seed is not None:
        config["seed"] = config_seed
    from ppo_course import toy_task

    payload = {"model_config": toy_task.policy_config().model_dump(),
               "state_dict": state if state is not None else initial_state(seed),
               "queries": toy_task.sample_queries(batch, torch.Generator().manual_seed(1000 + seed)),
               "ppo_config": _ppo_config(batch_size=batch, **config), "seed": seed}
    if ref_noise > 0:
        payload["ref_state_dict"] = perturbed(payload["state_dict"], ref_noise, 7000 + seed)
    if kl_coef is not None:
        payload["kl_coef"] = float(kl_coef)
    return payload
