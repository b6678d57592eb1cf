"""The contract's names are at the top level of ppo_reference, with the contract's signatures (CONTRACT.md)."""

import importlib
import inspect

import pytest

import ppo_reference as R

# name -> [(parameter, default or inspect._empty)], copied from CONTRACT.md's exercise table.
E = inspect.Parameter.empty
SIGNATURES = {
    "logprobs_from_logits": [("logits", E), ("tokens", E)],
    "probability_ratio": [("logp_new", E), ("logp_old", E)],
    "clipped_surrogate_loss": [("logp_new", E), ("logp_old", E), ("advantages", E), ("mask", E), ("clip_eps", 0.2)],
    "clipped_value_loss": [("values", E), ("old_values", E), ("returns", E), ("mask", E), ("clip_range_value", 0.2)],
    "entropy_from_logits": [("logits", E), ("mask", E)],
    "ppo_loss": [("logp_new", E), ("logp_old", E), ("advantages", E), ("values", E), ("old_values", E),
                 ("returns", E), ("logits", E), ("mask", E), ("clip_eps", 0.2), ("clip_range_value", 0.2),
                 ("vf_coef", 0.1), ("ent_coef", 0.01)],
    "compute_gae": [("rewards", E), ("values", E), ("mask", E), ("gamma", 1.0), ("lam", 0.95)],
    "whiten": [("x", E), ("mask", E), ("shift_mean", True)],
    "per_token_kl": [("logp", E), ("ref_logp", E), ("mask", E)],
    "kl_shaped_rewards": [("scores", E), ("logp", E), ("ref_logp", E), ("mask", E), ("kl_coef", 0.05),
                          ("placement", "per_token")],
    "AdaptiveKLController": [("init_kl_coef", 0.05), ("target", 6.0), ("horizon", 10000)],
    # ARCHITECTURE.md
    "masked_mean": [("x", E), ("mask", E), ("dim", None)],
    "masked_var": [("x", E), ("mask", E), ("unbiased", True)],
    "masked_whiten": [("x", E), ("mask", E), ("shift_mean", True)],
    "ppo_step": [("policy", E), ("ref_policy", E), ("optimizer", E), ("queries", E), ("reward_fn", E),
                 ("kl_ctl", E), ("config", E), ("generator", E)],
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_contract_signature(name):
    params = inspect.signature(getattr(R, name)).parameters
    assert [(p.name, p.default) for p in params.values()] == SIGNATURES[name]


def test_every_export_has_a_docstring():
    for name in R.__all__:
        assert (getattr(R, name).__doc__ or "").strip(), name
    assert set(SIGNATURES) | {"RolloutBuffer"} == set(R.__all__)


def test_ppo_step_is_the_function_even_after_its_submodule_was_imported():
    # The submodule shares the function's name; importing it must not shadow the export.
    importlib.import_module("ppo_reference.ppo_step")
    from ppo_reference import ppo_step

    assert inspect.isfunction(ppo_step) and R.ppo_step is ppo_step
