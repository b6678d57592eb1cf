"""A small causal language model with a value head: the policy and critic of PPO (Book §5.5, §5.7, §5.8).

nanoGPT-like and deliberately tiny (a few layers, d_model 64, learned positions)
so that the whole PPO loop of fig. 5.1 runs in seconds on a CPU. It plays the
part of TRL's ``AutoModelForCausalLMWithValueHead`` (Book §5.8): one transformer
trunk, a language-model head (the actor, π_θ) and a scalar value head (the
critic, V(s_t)). Optional LoRA adapters on the q/k/v/o projections (Book §5.8:
r = 64, α = 16) freeze the base weights so that only the adapters and the
value head train.

Named dimensions in the shape comments: B batch, P prompt length, T response
length, L = P + T (or any sequence length), V vocabulary, C d_model, H heads.

There is no dropout anywhere: two forward passes on the same input give the
same numbers, which is what makes r = 1 before the first update (Book §5.7,
table 5.1) hold by construction rather than by luck.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import pydantic
import torch
import torch.nn.functional as F
from torch import nn


class PolicyConfig(pydantic.BaseModel):
    """Shape of the small causal LM (``CausalLMWithValueHead``); every field has a default for the toy task.

    Raises:
        pydantic.ValidationError (a ``ValueError``): non-positive sizes, d_model
        not divisible by n_head, PAD equal to EOS, or a special id outside the
        vocabulary.
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    vocab_size: int = pydantic.Field(32, ge=3, description="Number of token ids V (PAD and EOS included).")
    n_layer: int = pydantic.Field(2, ge=1, description="Transformer blocks.")
    n_head: int = pydantic.Field(4, ge=1, description="Attention heads per block; must divide d_model.")
    d_model: int = pydantic.Field(64, ge=1, description="Residual stream width C.")
    max_seq_len: int = pydantic.Field(64, ge=2, description="Longest prompt + response (learned positions).")
    lora_rank: int = pydantic.Field(0, ge=0, description="LoRA rank r on q/k/v/o (0 = off; Book §5.8 uses r = 64).")
    lora_alpha: float = pydantic.Field(16.0, gt=0, description="LoRA α; the adapter output is scaled by α/r (Book §5.8: α = 16).")
    pad_token_id: int = pydantic.Field(0, ge=0, description="PAD id: fills a row after its EOS (never in the mask).")
    eos_token_id: int = pydantic.Field(1, ge=0, description="EOS id: a real token (in the mask) that ends a response.")

    @pydantic.model_validator(mode="after")
    def _check(self) -> "PolicyConfig":
        if self.d_model % self.n_head:
            raise ValueError(f"PolicyConfig: d_model={self.d_model} must be divisible by n_head={self.n_head}")
        if self.pad_token_id == self.eos_token_id:
            raise ValueError(f"PolicyConfig: pad_token_id and eos_token_id must differ (both are {self.pad_token_id})")
        for name in ("pad_token_id", "eos_token_id"):
            if getattr(self, name) >= self.vocab_size:
                raise ValueError(f"PolicyConfig: {name}={getattr(self, name)} is outside the vocabulary (vocab_size={self.vocab_size})")
        return self


class Generation(NamedTuple):
    """What ``CausalLMWithValueHead.generate`` returns (one rollout, Book eq. 5.13).

    Attributes:
        responses: [B, T] long, the sampled tokens; PAD after a row's EOS.
        mask:      [B, T] bool, True up to and including the first EOS (a prefix per row).
        logprobs:  [B, T] float, log π(responses[:, t] | s_t) at the sampling temperature,
                   from one ``forward_response`` pass after sampling (no grad).
        values:    [B, T] float, V(s_t) from the same pass (no grad).
    """

    responses: torch.Tensor
    mask: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor


class LoRALinear(nn.Linear):
    """A linear layer with an optional low-rank adapter: y = x·Wᵀ + b + (α/r)·x·Aᵀ·Bᵀ (Hu et al. 2021; Book §5.8).

    A is [r, in] (Kaiming-uniform, as PEFT), B is [out, r] (zeros), so at
    initialisation the layer equals its base exactly. Its base ``weight`` and
    ``bias`` keep nn.Linear's state-dict keys, so a base model's weights load
    into a LoRA model with ``load_state_dict(..., strict=False)``.
    With rank 0 it is a plain nn.Linear.
    """

    def __init__(self, in_features: int, out_features: int, rank: int = 0, alpha: float = 16.0):
        super().__init__(in_features, out_features)
        self.rank = rank
        self.scaling = alpha / rank if rank > 0 else 0.0
        if rank > 0:
            self.lora_A = nn.Parameter(torch.empty(rank, in_features))
            self.lora_B = nn.Parameter(torch.zeros(out_features, rank))
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        if self.rank > 0:
            y = y + (x @ self.lora_A.T @ self.lora_B.T) * self.scaling
        return y


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with separate q/k/v/o projections (the LoRA targets of Book §5.8)."""

    def __init__(self, cfg: PolicyConfig):
        super().__init__()
        self.n_head = cfg.n_head
        self.q, self.k, self.v, self.o = (
            LoRALinear(cfg.d_model, cfg.d_model, cfg.lora_rank, cfg.lora_alpha) for _ in range(4)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, L, C = x.shape
        split = lambda t: t.view(B, L, self.n_head, C // self.n_head).transpose(1, 2)  # (B, H, L, C/H)
        y = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)), is_causal=True)  # (B, H, L, C/H)
        return self.o(y.transpose(1, 2).reshape(B, L, C))  # (B, L, C)


class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(ln(x)), then x + mlp(ln(x)) (as nanoGPT)."""

    def __init__(self, cfg: PolicyConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(), nn.Linear(4 * cfg.d_model, cfg.d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))  # (B, L, C)
        return x + self.mlp(self.ln_2(x))  # (B, L, C)


def _nucleus_sample(probs: torch.Tensor, top_p: float, generator: torch.Generator | None) -> torch.Tensor:
    """One token per row from the top-p nucleus of ``probs`` by inverse CDF (Holtzman et al. 2020; Book §5.5).

    Draws exactly one uniform number per row from ``generator`` on the generator's own device (CPU for the
    global RNG), then moves it to ``probs``' device, so a CPU generator gives the same stream on CPU and CUDA.

    Args:
        probs: [B, V] float, each row a probability distribution.
        top_p: in (0, 1]; keep the smallest prefix of most likely tokens whose mass reaches top_p.
        generator: torch.Generator for the draws (None: the global RNG).

    Returns:
        [B] long, the sampled token ids (never a zero-probability token).
    """
    B = probs.shape[0]
    sorted_probs, sorted_idx = probs.sort(dim=-1, descending=True)  # (B, V)
    cum = sorted_probs.cumsum(dim=-1)  # (B, V)
    # Nucleus: keep a token if the mass before it is still < top_p (the first always stays).
    keep = (cum - sorted_probs) < top_p  # (B, V), a prefix per row
    n_valid = torch.minimum(keep.sum(-1), (sorted_probs > 0).sum(-1)).clamp(min=1)  # (B,)
    total = cum.gather(1, (n_valid - 1)[:, None])  # (B, 1)
    u = torch.rand(B, generator=generator, device=generator.device if generator is not None else "cpu")
    target = u.to(device=probs.device, dtype=cum.dtype)[:, None] * total  # (B, 1)
    # Inverse CDF on the kept prefix; right=True never lands on a zero-mass token.
    pos = torch.searchsorted(torch.where(keep, cum, total.expand_as(cum)).contiguous(), target, right=True)  # (B, 1)
    pos = torch.minimum(pos.squeeze(1), n_valid - 1)  # (B,)
    return sorted_idx.gather(1, pos[:, None]).squeeze(1)  # (B,)


class CausalLMWithValueHead(nn.Module):
    """The policy π_θ (LM head) and the critic V (value head) on one transformer trunk (Book §5.8).

    Built from a ``PolicyConfig``. With ``lora_rank > 0`` every parameter but
    the LoRA adapters and the value head is frozen (``requires_grad=False``),
    as PEFT + TRL's value-head model do; the value head stays trainable because
    the critic has no pretrained weights to keep.

    The model is position-based and right-padding-safe: attention is causal,
    so PAD tokens after a row's EOS never change the logits or values of
    earlier positions, and no attention mask is needed.
    """

    def __init__(self, config: PolicyConfig):
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
        self.pos_emb = nn.Embedding(config.max_seq_len, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.value_head = nn.Linear(config.d_model, 1)
        self.apply(self._init_weights)
        if config.lora_rank > 0:
            for name, p in self.named_parameters():
                p.requires_grad_("lora_" in name or name.startswith("value_head."))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # GPT-2's N(0, 0.02) keeps the initial logits near uniform. LoRA's A and
        # B are plain Parameters, not modules, so they keep LoRALinear's init.
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def with_lora(self, rank: int, alpha: float = 16.0) -> "CausalLMWithValueHead":
        """A new model with this model's weights as the frozen base and fresh LoRA adapters (Book §5.8).

        Args:
            rank: LoRA rank r ≥ 1. alpha: LoRA α (output scaled by α/r).

        Returns:
            A ``CausalLMWithValueHead`` on the same device and dtype whose
            outputs equal this model's at first (B = 0), with only the adapters
            and the value head trainable.

        Raises:
            ValueError: if rank < 1.
        """
        if rank < 1:
            raise ValueError(f"with_lora: rank must be ≥ 1, got {rank}")
        ref = next(self.parameters())
        model = CausalLMWithValueHead(self.config.model_copy(update={"lora_rank": rank, "lora_alpha": alpha}))
        model.to(device=ref.device, dtype=ref.dtype)
        missing, unexpected = model.load_state_dict(self.state_dict(), strict=False)
        assert not unexpected and all("lora_" in k for k in missing), (missing, unexpected)
        return model

    def forward(self, input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and values at every position.

        Args:
            input_ids: [B, L] long, L ≤ max_seq_len.

        Returns:
            (logits [B, L, V], values [B, L]) in the model's dtype; logits[:, i]
            predict token i+1, values[:, i] = V(state ending at token i).

        Raises:
            ValueError: if input_ids is not 2-D integer or longer than max_seq_len.
        """
        if input_ids.dim() != 2 or input_ids.dtype not in (torch.long, torch.int32, torch.int64):
            raise ValueError(f"forward: input_ids must be a [B, L] integer tensor, got {tuple(input_ids.shape)} {input_ids.dtype}")
        B, L = input_ids.shape
        if L > self.config.max_seq_len:
            raise ValueError(f"forward: sequence length {L} exceeds max_seq_len={self.config.max_seq_len}")
        pos = torch.arange(L, device=input_ids.device)  # (L,)
        x = self.tok_emb(input_ids) + self.pos_emb(pos)  # (B, L, C)
        for block in self.blocks:
            x = block(x)  # (B, L, C)
        x = self.ln_f(x)  # (B, L, C)
        return self.lm_head(x), self.value_head(x).squeeze(-1)  # (B, L, V), (B, L)

    def forward_response(
        self, queries: torch.Tensor, responses: torch.Tensor, temperature: float = 1.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and values aligned with the response tokens (Book §5.7, eqs. 5.18–5.20).

        Runs the trunk on query + response (without the response's last token,
        whose successor is never needed) and keeps the T positions that
        predict the response tokens.

        Args:
            queries:     [B, P] long, unpadded prompts.
            responses:   [B, T] long, right-padded responses (PAD after EOS).
            temperature: the sampling temperature; logits are divided by it so
                         that log-softmax gives the log-probs the sampler used.

        Returns:
            (logits [B, T, V], values [B, T]): logits[:, t] produced
            responses[:, t]; values[:, t] = V(s_t) with s_t = query + responses[:, :t].
            Positions after EOS are computed but meaningless (mask them).

        Raises:
            ValueError: on mismatched batch sizes, non-positive temperature or
            P + T − 1 > max_seq_len.
        """
        if queries.dim() != 2 or responses.dim() != 2 or queries.shape[0] != responses.shape[0]:
            raise ValueError(f"forward_response: need queries [B, P] and responses [B, T] with the same B, got {tuple(queries.shape)} and {tuple(responses.shape)}")
        if temperature <= 0:
            raise ValueError(f"forward_response: temperature must be > 0, got {temperature}")
        P, T = queries.shape[1], responses.shape[1]
        input_ids = torch.cat([queries, responses[:, :-1]], dim=1)  # (B, P+T-1)
        logits, values = self.forward(input_ids)  # (B, P+T-1, V), (B, P+T-1)
        # Position P-1+t has seen the query and responses[:, :t]: it is state s_t.
        return logits[:, P - 1 :] / temperature, values[:, P - 1 :]  # (B, T, V), (B, T)

    @torch.no_grad()
    def generate(
        self,
        queries: torch.Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> Generation:
        """Sample responses with temperature and nucleus (top-p) sampling: the collect phase (Book §5.5, eq. 5.13).

        Each step draws one uniform number per row from ``generator`` (on the
        generator's own device, then moved), so a CPU generator gives the same
        random stream whether the model runs on CPU or CUDA, and the draw count
        is always B × max_new_tokens whatever the rows do. A row that has
        produced EOS keeps receiving PAD (not in the mask).

        Log-probs and values are recomputed afterwards by one
        ``forward_response`` pass at the same temperature, so they equal what a
        training-time forward pass gives and r = 1 before the first update.

        Top-p caveat: with top_p < 1 the token is sampled from the truncated,
        renormalised distribution but scored with the full softmax (as TRL
        does). The stored log-probs are then not those of the sampling
        distribution, and the KL estimator logp − ref_logp, unbiased only for
        samples from π itself, can come out negative on average once π and the
        reference differ.

        Args:
            queries:        [B, P] long, unpadded prompts.
            max_new_tokens: T ≥ 1; responses always have exactly T columns.
            temperature:    > 0; logits are divided by it before softmax.
            top_p:          in (0, 1]; keep the smallest set of most likely tokens
                            whose probability reaches top_p.
            generator:      torch.Generator for the draws (None: the global RNG).

        Returns:
            ``Generation(responses [B, T] long, mask [B, T] bool, logprobs [B, T], values [B, T])``.

        Raises:
            ValueError: bad queries, max_new_tokens < 1, temperature ≤ 0,
            top_p outside (0, 1], or P + T − 1 > max_seq_len.
        """
        if queries.dim() != 2 or queries.shape[1] < 1:
            raise ValueError(f"generate: queries must be [B, P] with P ≥ 1, got {tuple(queries.shape)}")
        if max_new_tokens < 1:
            raise ValueError(f"generate: max_new_tokens must be ≥ 1, got {max_new_tokens}")
        if temperature <= 0 or not 0 < top_p <= 1:
            raise ValueError(f"generate: need temperature > 0 and 0 < top_p ≤ 1, got {temperature}, {top_p}")
        if queries.shape[1] + max_new_tokens - 1 > self.config.max_seq_len:
            raise ValueError(f"generate: prompt {queries.shape[1]} + {max_new_tokens} new tokens exceeds max_seq_len={self.config.max_seq_len}")
        B, device = queries.shape[0], queries.device
        pad, eos = self.config.pad_token_id, self.config.eos_token_id
        seq = queries
        finished = torch.zeros(B, dtype=torch.bool, device=device)  # (B,)
        out = []
        for _ in range(max_new_tokens):
            logits, _ = self.forward(seq)  # (B, L, V)
            probs = torch.softmax(logits[:, -1] / temperature, dim=-1)  # (B, V)
            token = _nucleus_sample(probs, top_p, generator)  # (B,)
            token = torch.where(finished, torch.full_like(token, pad), token)  # (B,)
            out.append(token)
            finished = finished | (token == eos)
            seq = torch.cat([seq, token[:, None]], dim=1)  # (B, L+1)
        responses = torch.stack(out, dim=1)  # (B, T)
        # The mask is 1 up to and including the first EOS: count earlier EOS tokens.
        eos_before = (responses == eos).long().cumsum(dim=1) - (responses == eos).long()  # (B, T)
        mask = eos_before == 0  # (B, T)
        logits, values = self.forward_response(queries, responses, temperature)  # (B, T, V), (B, T)
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, responses[..., None]).squeeze(-1)  # (B, T)
        return Generation(responses, mask, logprobs, values)
