"""ppo_course.toy_task: vocabulary, prompts, the (flawed) reward model, the gold score and the SFT policy."""

from __future__ import annotations

import pytest
import torch

from ppo_course import toy_task
from ppo_course.toy_task import EOS_ID, PAD_ID, decode, encode


def _batch(*texts: str, length: int = 16, junk: str = "great"):
    """Responses right-padded with `junk` (a positive word: padding must never count) and their masks."""
    responses = torch.full((len(texts), length), toy_task.TOKEN_ID[junk])
    mask = torch.zeros(len(texts), length, dtype=torch.bool)
    for i, text in enumerate(texts):
        ids = encode(text)
        responses[i, : len(ids)] = torch.tensor(ids)
        mask[i, : len(ids)] = True
    return responses, mask


def test_vocabulary_has_distinct_pad_and_eos_and_round_trips():
    assert PAD_ID != EOS_ID and len(set(toy_task.VOCAB)) == len(toy_task.VOCAB)
    text = "the plan is good and nice <eos>"
    assert decode(encode(text)) == text
    with pytest.raises(KeyError, match="'banana' is not in the toy vocabulary"):
        encode("the banana is good")


def test_prompts_are_fixed_unpadded_and_of_one_length():
    assert toy_task.PROMPTS.shape == (16, toy_task.PROMPT_LEN) and toy_task.PROMPTS.dtype == torch.long
    assert not (toy_task.PROMPTS == PAD_ID).any()
    assert decode(toy_task.PROMPTS[0]) == "what do you think of the plan ?"


def test_sample_queries_is_seeded():
    a = toy_task.sample_queries(32, torch.Generator().manual_seed(4))
    b = toy_task.sample_queries(32, torch.Generator().manual_seed(4))
    assert a.shape == (32, 8) and torch.equal(a, b)


@pytest.mark.parametrize("mask_dtype", [torch.bool, torch.long, torch.float32])
def test_score_counts_sentiment_on_real_tokens_only(mask_dtype):
    responses, mask = _batch(
        "the plan is good great bad <eos>",   # by hand: 0.1 × (2 − 1) = 0.1
        "the day is awful <eos>",             # 0.1 × (0 − 1) = −0.1
        "great great great great",            # 0.1 × 4 (repetition is not penalised: the flaw)
        "the code is <eos>",                  # 0
    )
    got = toy_task.score(responses, mask.to(mask_dtype))
    torch.testing.assert_close(got, torch.tensor([0.1, -0.1, 0.4, 0.0]))
    assert got.dtype == torch.float32


def test_gold_score_penalises_what_the_reward_model_misses():
    responses, mask = _batch(
        "the plan is good great bad <eos>",   # by hand: 0.1 × (2 distinct − 1 negative) = 0.1
        "great great great great",            # 0.1 × (1 distinct − 3 repeats − 2 no EOS) = −0.4
        "the idea is good and good <eos>",    # 0.1 × (1 distinct) = 0.1 (not back to back: no repeat)
    )
    torch.testing.assert_close(toy_task.gold_score(responses, mask), torch.tensor([0.1, -0.4, 0.1]))


def test_response_stats_by_hand():
    responses, mask = _batch("the plan is good <eos>", "nice nice nice nice")
    stats = toy_task.response_stats(responses, mask)
    assert stats["toy/response_len"] == pytest.approx(4.5)    # (5 + 4) / 2
    assert stats["toy/eos_frac"] == pytest.approx(0.5)
    assert stats["toy/repeat_frac"] == pytest.approx(3 / 7)   # 3 repeats among 4 + 3 token pairs


def test_score_rejects_an_empty_row():
    responses, mask = _batch("the plan is <eos>")
    with pytest.raises(ValueError, match="at least one real token"):
        toy_task.score(responses, torch.zeros_like(mask))


def test_sft_data_is_reasonable_text():
    queries, responses, mask = toy_task.sample_sft_data(300, torch.Generator().manual_seed(0))
    for q, r, m in zip(queries, responses, mask):
        words = decode(r, m).split()
        topic = decode(q).split()[-2] if decode(q).startswith("what") else decode(q).split()[3]
        assert words[:3] == ["the", topic, "is"] and words[-1] == "<eos>" and 5 <= len(words) <= 10
        assert all(a != b for a, b in zip(words, words[1:])), "SFT text never stutters"
        assert (r[~m] == PAD_ID).all()


def test_sft_policy_is_deterministic_fresh_and_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    a, b = toy_task.sft_policy(seed=0), toy_task.sft_policy(seed=0)
    assert torch.equal(torch.get_rng_state(), state)
    for (name, pa), pb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(pa, pb), name
    with torch.no_grad():
        next(a.parameters()).add_(1.0)  # a caller training its copy must not touch the cache
    assert torch.equal(next(toy_task.sft_policy(seed=0).parameters()), next(b.parameters()))


def test_sft_policy_writes_like_its_data():
    """The KL anchor means something: the SFT policy answers "the <topic> is ... <eos>" and rarely stutters."""
    policy = toy_task.sft_policy(seed=0)
    queries = toy_task.PROMPTS.repeat(8, 1)
    gen = policy.generate(queries, toy_task.MAX_NEW_TOKENS, generator=torch.Generator().manual_seed(0))
    stats = toy_task.response_stats(gen.responses, gen.mask)
    assert stats["toy/eos_frac"] > 0.95 and stats["toy/repeat_frac"] < 0.1
    starts_right = [decode(r[:3]) == f"the {decode(q).split()[6 if decode(q).startswith('what') else 3]} is"
                    for q, r in zip(queries, gen.responses)]
    assert sum(starts_right) / len(starts_right) > 0.9
    # Baseline score of SFT text: 0.1 × E[#pos − #neg] = 0.1 × 3.5 × (0.25 − 0.15) = 0.035 in expectation.
    assert abs(toy_task.score(gen.responses, gen.mask).mean().item() - 0.035) < 0.05
