"""Trusted reference implementation of the PPO chapter (Book ch. 5). Instructor side only.

Every function and class of the public contract is importable from here
(``from ppo_reference import compute_gae``), with the contract's signatures,
plus the masked helpers they stand on. The modules follow the chapter's stops:
``masked`` (helpers), ``ratio`` (stop 6), ``losses`` (stops 2–3), ``gae`` and
``kl`` (stop 5), ``buffer`` (stop 4), ``ppo_step`` (fig. 5.1).

``ppo_step`` is imported eagerly, last: the submodule ``ppo_reference.ppo_step``
has the same name as the function, and the import system sets the package's
attribute to the *submodule* the first time it is imported. Importing it
here, then binding the name to the function, makes ``from ppo_reference
import ppo_step`` the function whatever imports what first (a lazy PEP 562
``__getattr__`` returned the module once another file had imported the
submodule). It costs ~0.25 s of imports (ppo_course's model and config).
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

# Last, after every module it imports from this package (see the docstring).
from ppo_reference.ppo_step import ppo_step  # noqa: E402  (the function, not the submodule)
