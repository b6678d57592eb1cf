"""Input makers for the reference tests: prefix masks of every dtype, data with junk in padding.

Named ``ref_inputs`` (not ``helpers``) so that it cannot collide with another
test folder's module under pytest's rootdir-relative imports.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Derandomised (the same examples on every machine and run), no example
# database on disk, no per-example deadline (the first call pays torch's
# warm-up). Registered as the "reference" profile and applied per test.
settings.register_profile(
    "reference",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow],
)
REFERENCE_SETTINGS = settings.get_profile("reference")

MASK_DTYPES = (torch.bool, torch.int64, torch.int32, torch.uint8, torch.float32, torch.float64)


def prefix_mask(lengths: list[int], resp_len: int, dtype: torch.dtype = torch.bool) -> torch.Tensor:
    """[batch, resp_len] mask with ``lengths[b]`` leading ones in row b."""
    rows = [[1] * n + [0] * (resp_len - n) for n in lengths]
    return torch.tensor(rows, dtype=torch.int64).to(dtype)


def junk_in_padding(x: torch.Tensor, mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A copy of ``x`` whose padding holds uniform junk in [−20, 20] (CONTRACT.md: |x| ≤ 20, never 0 by courtesy)."""
    real = mask.bool()
    while real.dim() < x.dim():
        real = real.unsqueeze(-1)
    junk = (torch.rand(x.shape, generator=generator, dtype=torch.float64) * 40 - 20).to(x.dtype)
    return torch.where(real, x, junk)


@dataclass(frozen=True)
class Rollout:
    """Shapes, a prefix mask and a seed; tensors come from ``data``."""

    lengths: tuple[int, ...]
    resp_len: int
    mask_dtype: torch.dtype
    seed: int

    @property
    def batch(self) -> int:
        return len(self.lengths)

    @property
    def n_real(self) -> int:
        return sum(self.lengths)

    def mask(self) -> torch.Tensor:
        return prefix_mask(list(self.lengths), self.resp_len, self.mask_dtype)

    def data(self, n: int, *, scale: float = 1.0, dtype=torch.float64, junk_seed: int = 0, vocab: int | None = None):
        """``n`` float tensors [batch, resp_len] (or [.., vocab]) with junk in padding chosen by ``junk_seed``."""
        gen = torch.Generator().manual_seed(self.seed)
        junk_gen = torch.Generator().manual_seed(10_000 + junk_seed)
        shape = (self.batch, self.resp_len) + ((vocab,) if vocab else ())
        out = []
        for _ in range(n):
            x = torch.randn(shape, generator=gen, dtype=torch.float64) * scale
            out.append(junk_in_padding(x, self.mask(), junk_gen).to(dtype))
        return out


@st.composite
def rollouts(draw, max_batch: int = 5, max_len: int = 10, min_real: int = 1) -> Rollout:
    """Random batch, response length, per-row lengths ≥ 1, mask dtype and seed (at least ``min_real`` real tokens)."""
    resp_len = draw(st.integers(1, max_len))
    batch = draw(st.integers(max(1, -(-min_real // resp_len)), max_batch))
    lengths = draw(st.lists(st.integers(1, resp_len), min_size=batch, max_size=batch))
    if sum(lengths) < min_real:
        lengths = [resp_len] * batch
    mask_dtype = draw(st.sampled_from(MASK_DTYPES))
    seed = draw(st.integers(0, 2**31 - 1))
    return Rollout(tuple(lengths), resp_len, mask_dtype, seed)


def real(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The real-token entries of ``x`` (1-D, row-major)."""
    return x[mask.bool()]
