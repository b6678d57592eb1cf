"""Trusted reference implementation of the PPO chapter (Book ch. 5). Instructor side only.

Every function and class of the public contract is importable from here
(``from ppo_reference import compute_gae``), with the contract's signatures,
plus the masked helpers they stand on. The modules follow the chapter's stops:
``masked`` (helpers), ``ratio`` (stop 6), ``losses`` (stops 2–3), ``gae`` and
``kl`` (stop 5), ``buffer`` (stop 4), ``ppo_step`` (fig. 5.1).

``ppo_step`` is imported lazily (PEP 562): it pulls in the model and config
of ``ppo_course``, which the graders of exercises 1–6 do not need.
"""

from ppo_reference.buffer import RolloutBuffer
from ppo_reference.gae import compute_gae, whiten
from ppo_reference.kl import AdaptiveKLController, kl_shaped_rewards, per_token_kl
from ppo_reference.losses import clipped_surrogate_loss, clipped_value_loss, entropy_from_logits, ppo_loss
from ppo_reference.masked import masked_mean, masked_var, masked_whiten
from ppo_reference.ratio import logprobs_from_logits, probability_ratio

__all__ = [
    "logprobs_from_logits",
    "probability_ratio",
    "clipped_surrogate_loss",
    "clipped_value_loss",
    "entropy_from_logits",
    "ppo_loss",
    "compute_gae",
    "whiten",
    "per_token_kl",
    "kl_shaped_rewards",
    "AdaptiveKLController",
    "RolloutBuffer",
    "masked_mean",
    "masked_var",
    "masked_whiten",
    "ppo_step",
]


def __getattr__(name: str):
    if name == "ppo_step":
        from ppo_reference.ppo_step import ppo_step

        return ppo_step
    raise AttributeError(f"module 'ppo_reference' has no attribute {name!r}")
