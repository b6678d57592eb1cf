"""Bad inputs are refused with errors that say what was wrong and where."""

import pytest
import torch

import ppo_reference as R

GOOD = torch.tensor([[1, 1, 0], [1, 0, 0]])


def x(*shape):
    return torch.zeros(*shape) if shape else torch.zeros(2, 3)


def token_calls(mask):
    """One call per token-level function, all with ``mask``."""
    return {
        "clipped_surrogate_loss": lambda: R.clipped_surrogate_loss(x(), x(), x(), mask),
        "clipped_value_loss": lambda: R.clipped_value_loss(x(), x(), x(), mask),
        "entropy_from_logits": lambda: R.entropy_from_logits(x(2, 3, 4), mask),
        "ppo_loss": lambda: R.ppo_loss(x(), x(), x(), x(), x(), x(), x(2, 3, 4), mask),
        "compute_gae": lambda: R.compute_gae(x(), x(), mask),
        "whiten": lambda: R.whiten(x(), mask),
        "per_token_kl": lambda: R.per_token_kl(x(), x(), mask),
        "kl_shaped_rewards": lambda: R.kl_shaped_rewards(torch.zeros(2), x(), x(), mask),
    }


@pytest.mark.parametrize("name", list(token_calls(GOOD)))
@pytest.mark.parametrize(
    "mask, message",
    [
        (torch.tensor([[1, 0, 1], [1, 0, 0]]), "row 0 is not a prefix"),
        (torch.tensor([[1, 1, 0], [0, 0, 0]]), "row 1 has no real token"),
        (torch.tensor([[1, 2, 0], [1, 0, 0]]), "only 0 and 1"),
        (torch.tensor([[1.0, 0.5, 0.0], [1.0, 0.0, 0.0]]), "only 0 and 1"),
        (torch.tensor([[1.0, float("nan"), 0.0], [1.0, 0.0, 0.0]]), "only 0 and 1"),
        (torch.tensor([[1, -1, 0], [1, 0, 0]]), "only 0 and 1"),
        (torch.ones(2, 4), "shape"),
        (torch.ones(6), "2-D"),
    ],
)
def test_bad_masks_are_refused_by_every_token_function(name, mask, message):
    with pytest.raises(ValueError, match=message) as info:
        token_calls(mask)[name]()
    assert name in str(info.value)  # the message says where


@pytest.mark.parametrize("name", list(token_calls(GOOD)))
@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.int64, torch.float32, torch.float64])
def test_good_masks_of_every_dtype_are_accepted(name, dtype):
    token_calls(GOOD.to(dtype))[name]()


def test_empty_batch_is_refused():
    with pytest.raises(ValueError, match="batch is empty"):
        R.compute_gae(torch.zeros(0, 3), torch.zeros(0, 3), torch.zeros(0, 3))
    with pytest.raises(ValueError, match="batch is empty"):
        R.whiten(torch.zeros(2, 0), torch.zeros(2, 0))


def test_shape_mismatch_names_both_tensors():
    with pytest.raises(ValueError, match=r"`logp_old` has shape \(2, 4\).*`logp_new` has shape \(2, 3\)"):
        R.clipped_surrogate_loss(x(), x(2, 4), x(), GOOD)
    with pytest.raises(ValueError, match="values"):
        R.compute_gae(x(), x(3, 3), GOOD)
    with pytest.raises(ValueError, match="logits"):
        R.ppo_loss(x(), x(), x(), x(), x(), x(), x(2, 4, 5), GOOD)
    with pytest.raises(ValueError, match="scores"):
        R.kl_shaped_rewards(torch.zeros(3), x(), x(), GOOD)


def test_whiten_and_masked_var_need_two_elements():
    one = torch.tensor([[1, 0, 0], [0, 0, 0]])
    with pytest.raises(ValueError, match="1 element"):
        R.masked_var(x(), one)
    with pytest.raises(ValueError, match="1 element"):
        R.masked_whiten(x(), one)
    with pytest.raises(ValueError, match="whiten.*1 element"):
        R.whiten(torch.zeros(1, 3), torch.tensor([[1, 0, 0]]))
    assert R.masked_var(torch.ones(2, 3), one, unbiased=False).item() == 0.0


def test_masked_mean_refuses_an_empty_selection():
    with pytest.raises(ValueError, match="selects no element"):
        R.masked_mean(x(), torch.zeros(2, 3))
    with pytest.raises(ValueError, match="dim=1"):
        R.masked_mean(x(), torch.tensor([[1, 0, 0], [0, 0, 0]]), dim=1)


def test_logprobs_refuses_bad_tokens_and_shapes():
    with pytest.raises(ValueError, match="token id 4 is outside"):
        R.logprobs_from_logits(x(2, 3, 4), torch.tensor([[0, 1, 4], [0, 0, 0]]))
    with pytest.raises(ValueError, match="token id -1"):
        R.logprobs_from_logits(x(2, 3, 4), torch.tensor([[0, 1, -1], [0, 0, 0]]))
    with pytest.raises(TypeError, match="integer ids"):
        R.logprobs_from_logits(x(2, 3, 4), x())
    with pytest.raises(ValueError, match=r"\[batch, resp_len, vocab\]"):
        R.logprobs_from_logits(x(), torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="tokens"):
        R.logprobs_from_logits(x(2, 3, 4), torch.zeros(2, 2, dtype=torch.long))


def test_bad_hyper_parameters():
    with pytest.raises(ValueError, match="gamma"):
        R.compute_gae(x(), x(), GOOD, gamma=1.5)
    with pytest.raises(ValueError, match="lam"):
        R.compute_gae(x(), x(), GOOD, lam=-0.1)
    with pytest.raises(ValueError, match="placement"):
        R.kl_shaped_rewards(torch.zeros(2), x(), x(), GOOD, placement="everywhere")
    with pytest.raises(ValueError, match="kl_coef"):
        R.kl_shaped_rewards(torch.zeros(2), x(), x(), GOOD, kl_coef=-1.0)
    with pytest.raises(ValueError, match="clip_eps"):
        R.clipped_surrogate_loss(x(), x(), x(), GOOD, clip_eps=-0.2)
    with pytest.raises(ValueError, match="target"):
        R.AdaptiveKLController(target=0.0)
    with pytest.raises(ValueError, match="current_kl"):
        R.AdaptiveKLController().update(float("nan"), 8)


def test_integer_data_is_refused():
    with pytest.raises(TypeError, match="floating"):
        R.compute_gae(torch.zeros(2, 3, dtype=torch.long), x(), GOOD)
