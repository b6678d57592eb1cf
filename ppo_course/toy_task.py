"""The toy RLHF task: a tiny language, fixed prompts, a flawed reward model and an SFT start (Book §5.5, §5.9).

Everything of fig. 5.1 in miniature, small enough for a CPU minute:

* **Vocabulary** (``VOCAB``): PAD (id 0), EOS (id 1) and a few dozen words.
* **Prompts** (``PROMPTS``): 16 fixed 8-token questions about a topic,
  "what do you think of the plan ?" / "how did the plan go for you ?".
* **SFT policy** (``sft_policy``): a ``CausalLMWithValueHead`` trained for a
  few seconds on synthetic "reasonable" answers, "the plan is really good
  and nice EOS": the topic, then 1–6 descriptive words with no word
  repeated back to back, then EOS. It is the KL anchor (the reference policy)
  and the starting policy.
* **Reward model** (``score``): net sentiment, +0.1 for each positive word
  and −0.1 for each negative word among the real tokens. Its flaw, on
  purpose: it never penalises repetition or rambling, so "great great great
  ..." for all 16 tokens scores 1.6 while no SFT answer scores above 0.6.
  That is reward hacking waiting to happen (Book §5.9, "init_kl_coef too
  low: reward hacking").
* **Scale**: 0.1 per word puts the book's β = 0.05 near the balance point.
  Swapping a filler for a positive word gains 0.1 and costs about
  log(1/0.25) ≈ 1.4 nats of KL (0.07 at β = 0.05): it pays. Stuttering or
  running past where SFT text stops costs several nats per token (≥ 0.15):
  it does not, unless β is tiny. Measured (``ppo-course train --steps 100``,
  seed 0): β = 0.05 lifts the score from 0.08 to 0.37 (gold 0.04 to 0.22) at
  a KL of ~4 nats; β = 0.001 drives it to the 1.6 ceiling (gold to −0.24) at
  a KL of ~49 nats, with no response ending before the 16-token limit;
  β = 1 keeps it at the SFT level (0.06 to 0.04, KL 0.06 nats).
* **Gold score** (``gold_score``): what the reward model was meant to
  measure, used only for monitoring, on the same 0.1 scale: +0.1 per
  *distinct* positive word, −0.1 per negative word, −0.1 per token that
  repeats the one before it, −0.2 for a response cut off without EOS. While
  the policy improves honestly, both scores rise; when it hacks, ``score``
  keeps rising and ``gold_score`` falls (Gao et al. 2022's
  over-optimisation, in a dozen words).

Tensor conventions as the contract: responses [B, T] long, right-padded with
PAD after EOS; mask [B, T] bool/int/float prefix, 1 on real tokens (EOS is real).
"""

from __future__ import annotations

import copy
import functools

import torch

from ppo_course.model import CausalLMWithValueHead, PolicyConfig

PAD_TOKEN = "<pad>"
EOS_TOKEN = "<eos>"
TOPICS = ("plan", "idea", "code", "team", "day", "answer", "book", "talk")
POSITIVE_WORDS = ("good", "great", "nice", "fine", "helpful")
NEGATIVE_WORDS = ("bad", "wrong", "awful", "boring")
FILLER_WORDS = ("very", "quite", "really", "so", "and", "it", "was", "too", "all", "but")
_PROMPT_WORDS = ("what", "do", "you", "think", "of", "how", "did", "go", "for", "?")
VOCAB: tuple[str, ...] = (
    PAD_TOKEN, EOS_TOKEN, "the", "is", *TOPICS, *POSITIVE_WORDS, *NEGATIVE_WORDS, *FILLER_WORDS, *_PROMPT_WORDS
)
TOKEN_ID: dict[str, int] = {word: i for i, word in enumerate(VOCAB)}
PAD_ID, EOS_ID = TOKEN_ID[PAD_TOKEN], TOKEN_ID[EOS_TOKEN]
PROMPT_LEN = 8
MAX_NEW_TOKENS = 16  # PPOConfig.toy().max_new_tokens

_TEMPLATES = ("what do you think of the {} ?", "how did the {} go for you ?")
PROMPT_TEXTS: tuple[str, ...] = tuple(t.format(topic) for topic in TOPICS for t in _TEMPLATES)


def encode(text: str) -> list[int]:
    """Token ids of a space-separated string of vocabulary words.

    Raises:
        KeyError: for a word outside ``VOCAB`` (the message names it).
    """
    try:
        return [TOKEN_ID[w] for w in text.split()]
    except KeyError as exc:
        raise KeyError(f"toy_task.encode: {exc.args[0]!r} is not in the toy vocabulary") from None


def decode(ids: torch.Tensor | list[int], mask: torch.Tensor | None = None) -> str:
    """The words of one response [T] (real tokens only when ``mask`` [T] is given)."""
    ids = torch.as_tensor(ids).tolist()
    keep = [True] * len(ids) if mask is None else [bool(m) for m in torch.as_tensor(mask).tolist()]
    return " ".join(VOCAB[i] for i, k in zip(ids, keep) if k)


PROMPTS: torch.Tensor = torch.tensor([encode(t) for t in PROMPT_TEXTS], dtype=torch.long)  # (16, 8)

_POSITIVE_IDS = torch.tensor([TOKEN_ID[w] for w in POSITIVE_WORDS])
_NEGATIVE_IDS = torch.tensor([TOKEN_ID[w] for w in NEGATIVE_WORDS])


def policy_config(**overrides) -> PolicyConfig:
    """The toy policy's shape: the toy vocabulary, 2 layers, 4 heads, d_model 64, 32 positions (8 + 16 fit)."""
    fields = dict(vocab_size=len(VOCAB), n_layer=2, n_head=4, d_model=64, max_seq_len=32,
                  pad_token_id=PAD_ID, eos_token_id=EOS_ID)
    return PolicyConfig(**{**fields, **overrides})


def sample_queries(batch_size: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """A batch of prompts drawn uniformly with replacement from ``PROMPTS``.

    Returns:
        [batch_size, PROMPT_LEN] long on CPU. Consumes one ``torch.randint`` draw of ``generator``.
    """
    return PROMPTS[torch.randint(len(PROMPTS), (batch_size,), generator=generator)]


def _real_tokens(responses: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if responses.dim() != 2 or responses.shape != mask.shape:
        raise ValueError(f"toy_task: responses and mask must both be [B, T], got {tuple(responses.shape)} and {tuple(mask.shape)}")
    real = mask.bool()
    if not real[:, 0].all():
        raise ValueError("toy_task: every row of the mask needs at least one real token")
    return responses, real


def score(responses: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The toy reward model r_RM: 0.1 × ((# positive words) − (# negative words)) among the real tokens (Book §5.5 'score').

    Deterministic and deliberately flawed: repetition and rambling are not
    penalised, so repeating a positive word is over-rewarded (see the module
    doc and ``gold_score``).

    Args:
        responses: [B, T] long token ids (junk allowed at padding).
        mask:      [B, T] bool/int/float prefix mask, 1 on real tokens.

    Returns:
        [B] float32 scores on the device of ``responses``, in [−0.1·T, 0.1·T].

    Raises:
        ValueError: if the shapes differ or a row has no real token.
    """
    responses, real = _real_tokens(responses, mask)
    pos = torch.isin(responses, _POSITIVE_IDS.to(responses.device)) & real  # (B, T)
    neg = torch.isin(responses, _NEGATIVE_IDS.to(responses.device)) & real  # (B, T)
    return 0.1 * (pos.sum(1) - neg.sum(1)).float()  # (B,)


def gold_score(responses: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """What ``score`` was meant to measure (monitoring only, never a training signal).

    0.1 × (number of distinct positive words − negative words − real tokens
    equal to the real token before them − 2 if the response has no EOS, i.e.
    was cut off at the length limit).

    Args / Raises: as ``score``.

    Returns:
        [B] float32 on the device of ``responses``.
    """
    responses, real = _real_tokens(responses, mask)
    pos_ids = _POSITIVE_IDS.to(responses.device)
    distinct_pos = ((responses[:, :, None] == pos_ids) & real[:, :, None]).any(1).sum(1)  # (B,)
    neg = (torch.isin(responses, _NEGATIVE_IDS.to(responses.device)) & real).sum(1)  # (B,)
    repeats = ((responses[:, 1:] == responses[:, :-1]) & real[:, 1:]).sum(1)  # (B,)
    has_eos = ((responses == EOS_ID) & real).any(1)  # (B,)
    return 0.1 * (distinct_pos - neg - repeats - 2 * (~has_eos).long()).float()  # (B,)


def response_stats(responses: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """Monitoring numbers of a batch: mean length, EOS rate, repeat rate and gold score (floats).

    ``toy/repeat_frac`` is the fraction of real tokens (after the first) equal
    to their predecessor: ~0 for SFT text, near 1 for a hacked policy.
    """
    responses, real = _real_tokens(responses, mask)
    n_pairs = real[:, 1:].sum().clamp(min=1)
    return {
        "toy/response_len": real.sum(1).float().mean().item(),
        "toy/eos_frac": ((responses == EOS_ID) & real).any(1).float().mean().item(),
        "toy/repeat_frac": (((responses[:, 1:] == responses[:, :-1]) & real[:, 1:]).sum() / n_pairs).item(),
        "toy/gold_score": gold_score(responses, mask).mean().item(),
    }


def sample_sft_data(n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Synthetic 'reasonable' answers to the prompts: the SFT data set.

    Each answer is "the <topic> is", then 1–6 words (60% fillers, 25%
    positive, 15% negative, never the same word twice in a row), then EOS.

    Returns:
        (queries [n, PROMPT_LEN] long, responses [n, MAX_NEW_TOKENS] long PAD-padded,
        mask [n, MAX_NEW_TOKENS] bool), all drawn from ``generator``.
    """
    prompt_idx = torch.randint(len(PROMPTS), (n,), generator=generator)
    n_words = torch.randint(1, 7, (n,), generator=generator)
    kind = torch.rand(n, 6, generator=generator)
    pick = torch.randint(0, 10_000, (n, 6, 2), generator=generator)
    groups = [[TOKEN_ID[w] for w in g] for g in (FILLER_WORDS, POSITIVE_WORDS, NEGATIVE_WORDS)]
    responses = torch.full((n, MAX_NEW_TOKENS), PAD_ID, dtype=torch.long)
    for i in range(n):
        topic = TOPICS[prompt_idx[i].item() // len(_TEMPLATES)]
        ids = encode(f"the {topic} is")
        for j in range(n_words[i].item()):
            k = kind[i, j].item()
            group = groups[0] if k < 0.6 else groups[1] if k < 0.85 else groups[2]
            word = group[pick[i, j, 0].item() % len(group)]
            if word == ids[-1]:  # reasonable text does not stutter: take the next word of the group
                word = group[(pick[i, j, 0].item() + 1 + pick[i, j, 1].item() % (len(group) - 1)) % len(group)]
            ids.append(word)
        ids.append(EOS_ID)
        responses[i, : len(ids)] = torch.tensor(ids)
    mask = torch.arange(MAX_NEW_TOKENS) < (n_words + 4)[:, None]  # "the topic is" + words + EOS
    return PROMPTS[prompt_idx], responses, mask


@functools.lru_cache(maxsize=4)
def _sft_state(seed: int, steps: int) -> dict[str, torch.Tensor]:
    """Train the SFT policy once per (seed, steps) in this process; CPU, float32, deterministic."""
    generator = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):  # seed the initial weights without touching the caller's RNG
        torch.manual_seed(seed)
        model = CausalLMWithValueHead(policy_config())
    queries, responses, mask = sample_sft_data(2048, generator)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        idx = torch.randint(len(queries), (128,), generator=generator)
        logits, _ = model.forward_response(queries[idx], responses[idx])  # (b, T, V)
        loss = torch.nn.functional.cross_entropy(logits[mask[idx]], responses[idx][mask[idx]])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def sft_policy(seed: int = 0, steps: int = 120, device: str | torch.device = "cpu") -> CausalLMWithValueHead:
    """The starting ("SFT") policy and KL anchor of the toy task: a fresh copy each call.

    Trained on first use by supervised next-token cross-entropy on
    ``sample_sft_data`` (response tokens only; ~3 s on one CPU core), then
    cached in memory per (seed, steps), so every call with the same seed
    returns identical weights. The value head is left untrained, as TRL's is.

    Args:
        seed:   seeds the initial weights and the data.
        steps:  SFT optimizer steps (batch 128, Adam 3e-3).
        device: where the returned model lives.

    Returns:
        A ``CausalLMWithValueHead`` (``policy_config()``), float32, on ``device``.
    """
    state = _sft_state(seed, steps)
    with torch.random.fork_rng(devices=[]):  # the init is overwritten; keep the caller's RNG untouched
        model = CausalLMWithValueHead(policy_config())
    model.load_state_dict(copy.deepcopy(state))
    return model.to(device)
