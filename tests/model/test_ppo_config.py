"""ppo_course.config.PPOConfig: the book's defaults, validation, and the danger-table warnings (Book §5.8, §5.9)."""

from __future__ import annotations

import warnings

import pydantic
import pytest

from ppo_course.config import HyperparameterWarning, PPOConfig

# Book §5.8 (stop 7), the PPOConfig listing, values verbatim; temperature 0.7 and top-p 0.9
# from the generate call beside it; ent_coef c₂ = 0.01 from eq. 5.2 (stop 3); 512 max tokens (§5.5).
BOOK_LISTING = dict(
    learning_rate=1.5e-6, batch_size=128, mini_batch_size=16, ppo_epochs=4, gamma=1.0, lam=0.95,
    cliprange=0.2, cliprange_value=0.2, vf_coef=0.1, init_kl_coef=0.05, target_kl=6.0,
    whiten_rewards=True, gradient_accumulation_steps=4, max_grad_norm=1.0,
)
BOOK_TEXT = dict(temperature=0.7, top_p=0.9, ent_coef=0.01, max_new_tokens=512)


@pytest.fixture
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_defaults_are_the_books_listing(no_warnings):
    config = PPOConfig()
    for name, value in {**BOOK_LISTING, **BOOK_TEXT}.items():
        assert getattr(config, name) == value, name
    assert (config.kl_placement, config.kl_horizon, config.seed) == ("per_token", 10000, 0)


def test_every_field_documents_itself():
    for name, field in PPOConfig.model_fields.items():
        assert field.description and len(field.description) > 20, f"{name} has no one-line doc"
    # The two places where the book and TRL 0.11 disagree are named.
    assert "TRL calls it `target`" in PPOConfig.model_fields["target_kl"].description
    assert "mean" in PPOConfig.model_fields["whiten_rewards"].description


def test_one_optimizer_step_covers_mini_batch_times_accumulation():
    assert PPOConfig().optimizer_batch_size == 16 * 4


@pytest.mark.parametrize("bad, match", [
    (dict(batch_size=100), "divisible by mini_batch_size × gradient_accumulation_steps = 16 × 4 = 64"),
    (dict(batch_size=64, mini_batch_size=16, gradient_accumulation_steps=3), "divisible"),
    (dict(top_p=0.0), "top_p"),
    (dict(top_p=1.5), "top_p"),
    (dict(kl_placement="middle"), "kl_placement"),
    (dict(learning_rate=-1e-6), "learning_rate"),
    (dict(cliprange=0.0), "cliprange"),
    (dict(temperature=0.0), "temperature"),
    (dict(mini_batch_size=0), "mini_batch_size"),
    (dict(target_kl=-6.0), "target_kl"),
    (dict(lam=1.5), "lam"),
    (dict(clip_range=0.2), "clip_range"),  # a typo is an error, not a silently ignored field
])
def test_invalid_values_are_rejected_with_the_field_named(bad, match):
    with pytest.raises(pydantic.ValidationError, match=match):
        PPOConfig(**bad)


@pytest.mark.parametrize("field, value", [
    ("cliprange", 0.1), ("cliprange", 0.4),
    ("init_kl_coef", 0.001), ("init_kl_coef", 0.5),
    ("target_kl", 2.0), ("target_kl", 12.0),
    ("ppo_epochs", 1), ("ppo_epochs", 10),
    ("learning_rate", 1e-5), ("learning_rate", 5e-7),
    ("batch_size", 512),
    ("temperature", 0.3), ("temperature", 1.3),
])
def test_values_outside_the_typical_band_warn_and_do_not_raise(field, value):
    with pytest.warns(HyperparameterWarning, match=rf"PPOConfig\.{field}=.*Book §5\.9") as record:
        config = PPOConfig(**{field: value})
    assert getattr(config, field) == value
    assert len(record) == 1, [str(w.message) for w in record]


@pytest.mark.parametrize("field, value", [
    ("init_kl_coef", 0.01), ("init_kl_coef", 0.1), ("target_kl", 4.0), ("target_kl", 8.0),
    ("learning_rate", 1e-6), ("learning_rate", 5e-6), ("batch_size", 64), ("batch_size", 256),
    ("temperature", 0.7), ("temperature", 1.0),
])
def test_band_edges_are_typical(no_warnings, field, value):
    PPOConfig(**{field: value})


def test_toy_preset_is_silent_and_valid(no_warnings):
    config = PPOConfig.toy()
    assert config.learning_rate > 5e-6  # far outside the book's band, on purpose
    assert config.batch_size < PPOConfig().batch_size
    assert config.batch_size % config.optimizer_batch_size == 0
    assert (config.cliprange, config.init_kl_coef, config.ppo_epochs) == (0.2, 0.05, 4)
    assert config.max_new_tokens == 16


def test_toy_preset_override_that_leaves_the_band_warns():
    with pytest.warns(HyperparameterWarning, match="init_kl_coef"):
        config = PPOConfig.toy(init_kl_coef=0.001)
    assert config.init_kl_coef == 0.001 and config.learning_rate == PPOConfig.toy().learning_rate


def test_toy_preset_validates_overrides():
    with pytest.raises(pydantic.ValidationError, match="divisible"):
        PPOConfig.toy(batch_size=40)
