"""Input makers for grader tests: prefix masks, junk in padding, seeded tensors, hypothesis strategies.

Every input follows the contract's tensor conventions: `[B, T]` right-padded
token tensors, prefix masks given as bool, int (long) or float, at least one
real token per row, and finite junk with |x| ≤ 20 at padding (never 0 by
courtesy). Tensors are drawn from a `torch.Generator` seeded by a hypothesis
integer, so a failing example is replayed exactly from its printed seed and
grading is deterministic (`settings(derandomize=True, database=None)`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st


def fresh_copy(x: Any) -> Any:
    """A deep copy of the tensors inside ``x`` (nested lists, tuples and dicts); any other value as it is.

    Each tensor becomes ``x.detach().clone()`` (same shape, dtype and device, no autograd history), so
    that a function under test which writes into its arguments in place cannot change the caller's
    inputs (the next call, the reference's answer, the tie-break's second look). Containers keep their
    type (a tuple stays a tuple); a dict keeps its keys. Raises nothing of its own. Used by the hidden
    graders (``grader.hidden.calls``) and ``ppo-course check`` (``ppo_course.check_support.local``).
    """
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    if isinstance(x, (list, tuple)):
        return type(x)(fresh_copy(v) for v in x)
    if isinstance(x, dict):
        return {k: fresh_copy(v) for k, v in x.items()}
    return x


def no_local_constants() -> None:
    """Stop hypothesis from mixing constants mined from the grader's own source into the examples.

    Hypothesis (≥ 6.131) draws, with probability 0.05 per primitive, constants it parses out of every
    "local" (not site-packages) module currently in ``sys.modules``, and caches them under
    ``.hypothesis/constants/`` in the working folder. The examples then depend on which modules the
    process had imported when the test ran (a warm grader that graded an exercise-7 submission
    before had more: the next student got other examples and another grade), on
    whether the package is an editable install, and on files in the working folder. Grading
    examples must depend on the test and its settings only (grading is deterministic,
    also in warm graders), so the local pool is empty here; hypothesis's own fixed global constants
    stay. Idempotent; hypothesis is pinned (pyproject.toml), and
    ``tests/hostile/test_hostile_warm.py`` checks that the hook still exists.

    Raises:
        RuntimeError: if this hypothesis has no ``_get_local_constants`` to replace (a version change).
    """
    from hypothesis.internal.conjecture import providers

    if getattr(providers._get_local_constants, "_ppo_course_empty", False):
        return
    if not callable(getattr(providers, "_get_local_constants", None)):
        raise RuntimeError("hypothesis changed: no providers._get_local_constants to keep examples deterministic")
    empty = providers.Constants()

    def _empty_pool():
        return empty

    _empty_pool._ppo_course_empty = True
    providers._get_local_constants = _empty_pool
    providers.CONSTANTS_CACHE.cache.clear()  # anything computed from a local pool before


no_local_constants()

MASK_KINDS = ("bool", "int", "float")
DTYPES = {"float32": torch.float32, "float64": torch.float64}
JUNK = 20.0  # |junk| ≤ 20 at padding (contract)


def grading_settings(max_examples: int, *, shrink: bool) -> settings:
    """Deterministic hypothesis settings for grading.

    derandomize + no database + no deadline: the same examples on every run and
    machine; health checks off because they are timing-based (a slow machine must
    not fail a student). `shrink=True` (public tests) shows the smallest failing
    input; hidden tests skip shrinking: they never show inputs, and it saves time.
    """
    phases = (Phase.explicit, Phase.reuse, Phase.generate) + ((Phase.shrink,) if shrink else ())
    return settings(max_examples=max_examples, derandomize=True, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck), phases=phases, report_multiple_bugs=False,
                    print_blob=False)


def generator(seed: int) -> torch.Generator:
    """A CPU torch.Generator seeded with `seed`."""
    return torch.Generator().manual_seed(int(seed))


def prefix_mask(lengths: list[int] | tuple[int, ...], T: int, kind: str = "bool") -> torch.Tensor:
    """[B, T] prefix mask with `lengths[b]` real tokens in row b, as "bool", "int" (long) or "float".

    Raises:
        ValueError: if a length is outside 1..T or `kind` is unknown.
    """
    if any(not 1 <= n <= T for n in lengths):
        raise ValueError(f"every row needs 1..{T} real tokens, got lengths {list(lengths)}")
    m = torch.arange(T)[None, :] < torch.tensor(list(lengths))[:, None]  # (B, T) bool
    if kind == "bool":
        return m
    if kind == "int":
        return m.long()
    if kind == "float":
        return m.float()
    raise ValueError(f"mask kind must be one of {MASK_KINDS}, got {kind!r}")


def with_junk(x: torch.Tensor, mask: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Copy of `x` whose padding holds uniform junk in [-20, 20] (never 0 by courtesy)."""
    junk = (torch.rand(x.shape, generator=gen, dtype=torch.float64) * 2 - 1) * JUNK
    return torch.where(mask.to(torch.bool), x, junk.to(x.dtype))


def randn(shape, gen: torch.Generator, dtype: torch.dtype, scale: float = 1.0) -> torch.Tensor:
    """Normal(0, scale²) tensor drawn in float64 then cast (same numbers for both dtypes)."""
    return (torch.randn(shape, generator=gen, dtype=torch.float64) * scale).to(dtype)


@dataclass(frozen=True)
class Batch:
    """One generated batch description: sizes, row lengths, mask kind, dtype and seed."""

    B: int
    T: int
    lengths: tuple[int, ...]
    mask_kind: str
    dtype_name: str
    seed: int

    @property
    def dtype(self) -> torch.dtype:
        """torch dtype of the data tensors."""
        return DTYPES[self.dtype_name]

    def mask(self) -> torch.Tensor:
        """The [B, T] prefix mask in this batch's mask kind."""
        return prefix_mask(self.lengths, self.T, self.mask_kind)

    def gen(self, salt: int = 0) -> torch.Generator:
        """A generator for this batch (salt separates independent tensors)."""
        return generator(self.seed * 1009 + salt)

    def data(self, salt: int, scale: float = 1.0) -> torch.Tensor:
        """[B, T] normal data with junk at padding."""
        g = self.gen(salt)
        return with_junk(randn((self.B, self.T), g, self.dtype, scale), self.mask(), g)


@st.composite
def batches(draw, max_B: int = 4, max_T: int = 7, dtypes=("float32", "float64"), mask_kinds=MASK_KINDS,
            min_B: int = 1, min_T: int = 1) -> Batch:
    """Strategy for `Batch`: min_B..max_B rows of min_T..max_T tokens, varied row lengths (full rows
    and one-token rows included), every mask kind and dtype."""
    B = draw(st.integers(min_B, max_B))
    T = draw(st.integers(min_T, max_T))
    lengths = tuple(draw(st.lists(st.integers(1, T), min_size=B, max_size=B)))
    mask_kind = draw(st.sampled_from(mask_kinds))
    dtype_name = draw(st.sampled_from(dtypes))
    seed = draw(st.integers(0, 2**16))
    return Batch(B, T, lengths, mask_kind, dtype_name, seed)


def show(**tensors) -> str:
    """The input values for public feedback: `name=[[...]]` per tensor (4 significant digits), so that a
    student can replay the smallest failing example by hand."""
    parts = []
    for name, t in tensors.items():
        if isinstance(t, torch.Tensor):
            values = t.tolist()
            if t.is_floating_point():
                def fmt(v):
                    return [fmt(x) for x in v] if isinstance(v, list) else float(f"{v:.4g}")
                values = fmt(values)
            parts.append(f"{name}={values} ({t.dtype})")
        else:
            parts.append(f"{name}={t!r}")
    return ", ".join(parts)
