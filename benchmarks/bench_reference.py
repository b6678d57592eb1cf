"""Speed of the reference library on the grading hot path (a script, not a test).

    python benchmarks/bench_reference.py [--batch 128] [--resp-len 512] [--vocab 32] [--threads 1]

Section "kernels": GAE, whitening and the full PPO loss at the book's rollout
size (B = 128 prompts × T = 512 tokens, Book §5.5.1) against a plain
per-token Python loop over batch × tokens, measured in the same run; prints
both times, their ratio, and the largest difference between the two results
(a sanity check that the loop computes the same thing).

The script is organised as sections (functions returning rows) so that more
can be added: append a function to ``SECTIONS``.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import torch
from torch.utils import benchmark

import ppo_reference as R


# --------------------------------------------------------------------------- inputs


def make_inputs(batch: int, resp_len: int, vocab: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """A rollout with random lengths in [1, resp_len] and junk (|x| ≤ 20) in padding, float32."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, resp_len + 1, (batch,), generator=gen)
    mask = torch.arange(resp_len).unsqueeze(0) < lengths.unsqueeze(1)  # (B, T) bool prefix

    def field(scale=1.0, *extra):
        x = torch.randn(batch, resp_len, *extra, generator=gen) * scale
        junk = torch.rand(batch, resp_len, *extra, generator=gen) * 40 - 20
        m = mask if not extra else mask.unsqueeze(-1)
        return torch.where(m, x, junk)

    logp_old = field(1.0) - 2.0
    return dict(
        mask=mask, rewards=field(0.1), values=field(1.0), logp_old=logp_old,
        logp_new=logp_old + field(0.1), advantages=field(1.0), old_values=field(1.0),
        returns=field(1.0), logits=field(2.0, vocab),
    )


# --------------------------------------------------------------------------- plain per-token loops


def loop_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    """GAE by a Python loop over rows and tokens (Python floats)."""
    r, v, m = rewards.tolist(), values.tolist(), mask.tolist()
    adv = [[0.0] * len(row) for row in r]
    for b in range(len(r)):
        n = sum(1 for x in m[b] if x)
        last = 0.0
        for t in reversed(range(n)):
            next_value = v[b][t + 1] if t + 1 < n else 0.0
            delta = r[b][t] + gamma * next_value - v[b][t]
            last = delta + gamma * lam * last
            adv[b][t] = last
    return torch.tensor(adv)


def loop_whiten(x, mask):
    """Whitening by a Python loop over all tokens (two passes, unbiased variance)."""
    xs, ms = x.tolist(), mask.tolist()
    picked = [v for row, mrow in zip(xs, ms) for v, keep in zip(row, mrow) if keep]
    mean = sum(picked) / len(picked)
    var = sum((v - mean) ** 2 for v in picked) / (len(picked) - 1)
    scale = 1.0 / math.sqrt(var + 1e-8)
    return torch.tensor([[(v - mean) * scale for v in row] for row in xs])


def loop_loss(inp, clip_eps=0.2, clip_range_value=0.2, vf_coef=0.1, ent_coef=0.01):
    """The full PPO loss by a Python loop over rows and tokens (and the vocabulary for the entropy)."""
    lp, lo, adv = inp["logp_new"].tolist(), inp["logp_old"].tolist(), inp["advantages"].tolist()
    v, vo, ret = inp["values"].tolist(), inp["old_values"].tolist(), inp["returns"].tolist()
    logits, m = inp["logits"].tolist(), inp["mask"].tolist()
    pg = vf = ent = 0.0
    count = 0
    for b in range(len(m)):
        for t in range(len(m[b])):
            if not m[b][t]:
                continue
            count += 1
            r = math.exp(lp[b][t] - lo[b][t])
            a = adv[b][t]
            pg += min(r * a, min(max(r, 1 - clip_eps), 1 + clip_eps) * a)
            clipped = vo[b][t] + min(max(v[b][t] - vo[b][t], -clip_range_value), clip_range_value)
            vf += max((v[b][t] - ret[b][t]) ** 2, (clipped - ret[b][t]) ** 2)
            z = logits[b][t]
            zmax = max(z)
            lse = zmax + math.log(sum(math.exp(q - zmax) for q in z))
            ent -= sum(math.exp(q - lse) * (q - lse) for q in z)
    return -pg / count + vf_coef * vf / count - ent_coef * ent / count


def scan_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    """GAE by a reverse scan over T, vectorised over B (TRL's loop, masked): the usual vectorised version."""
    m = mask.to(rewards.dtype)
    r, v = rewards * m, values * m
    last = torch.zeros(rewards.shape[0], dtype=rewards.dtype)
    out = torch.zeros_like(r)
    for t in reversed(range(r.shape[1])):
        next_value = v[:, t + 1] if t + 1 < r.shape[1] else 0.0
        last = r[:, t] + gamma * next_value - v[:, t] + gamma * lam * last
        out[:, t] = last
    return out


# --------------------------------------------------------------------------- timing


# Both timers report the *best* time: the machine is shared, and other
# processes only ever add time, so the minimum is the least noisy estimate.


def time_vectorised(fn: Callable[[], object], min_run_time: float = 0.3) -> float:
    """Best seconds per call over torch.utils.benchmark's blocks (warm-up and repeats included)."""
    measurement = benchmark.Timer(stmt="fn()", globals={"fn": fn}).blocked_autorange(min_run_time=min_run_time)
    return min(measurement.times)


def time_once(fn: Callable[[], object], repeats: int = 3) -> tuple[float, object]:
    """Best seconds over ``repeats`` calls of a slow loop, and its result."""
    best, out = math.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def bench_kernels(batch: int = 128, resp_len: int = 512, vocab: int = 32) -> list[dict]:
    """Rows {name, baseline, reference_s, loop_s, speedup, max_abs_diff} for GAE, whitening and the full loss.

    ``loop_s`` is the baseline's time: a plain per-token Python loop, and for
    GAE also the common vectorised-over-B scan over T (TRL 0.11's loop).
    """
    inp = make_inputs(batch, resp_len, vocab)
    mask = inp["mask"]
    rows = []

    def row(name, baseline, ref_fn, loop_fn, compare, repeats=3):
        ref_s = time_vectorised(ref_fn)
        loop_s, loop_out = time_once(loop_fn, repeats)
        rows.append(dict(name=name, baseline=baseline, reference_s=ref_s, loop_s=loop_s, speedup=loop_s / ref_s,
                         max_abs_diff=compare(ref_fn(), loop_out)))

    real = mask

    def diff_real(a, b):
        a = a[0] if isinstance(a, tuple) else a
        return float((a.double() - b.double())[real].abs().max())

    row("compute_gae", "per-token Python loop", lambda: R.compute_gae(inp["rewards"], inp["values"], mask),
        lambda: loop_gae(inp["rewards"], inp["values"], mask), diff_real)
    row("compute_gae", "torch scan over T (TRL's loop)", lambda: R.compute_gae(inp["rewards"], inp["values"], mask),
        lambda: scan_gae(inp["rewards"], inp["values"], mask), diff_real)
    row("whiten", "per-token Python loop", lambda: R.whiten(inp["advantages"], mask), lambda: loop_whiten(inp["advantages"], mask), diff_real)
    row("ppo_loss (forward)", "per-token Python loop",
        lambda: R.ppo_loss(inp["logp_new"], inp["logp_old"], inp["advantages"], inp["values"], inp["old_values"],
                           inp["returns"], inp["logits"], mask)[0],
        lambda: loop_loss(inp), lambda a, b: abs(float(a) - b), repeats=1)
    return rows


SECTIONS: list[Callable[..., list[dict]]] = [bench_kernels]


def print_rows(title: str, rows: list[dict]) -> None:
    """A rich table of one section's rows."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, width=110)
    for col in ("kernel", "baseline", "reference (ms)", "baseline (ms)", "baseline / reference", "max |diff|"):
        table.add_column(col, justify="left" if col in ("kernel", "baseline") else "right")
    for r in rows:
        table.add_row(r["name"], r["baseline"], f"{r['reference_s'] * 1e3:.3f}", f"{r['loop_s'] * 1e3:.1f}",
                      f"{r['speedup']:.0f}×", f"{r['max_abs_diff']:.2e}")
    Console(width=120).print(table)


def main(argv: list[str] | None = None) -> int:
    """Run every section and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--resp-len", type=int, default=512)
    parser.add_argument("--vocab", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the grading machine is shared)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), B={args.batch}, T={args.resp_len}, V={args.vocab}")
    rows = bench_kernels(args.batch, args.resp_len, args.vocab)
    print_rows("ppo_reference kernels vs. baselines (best of repeats; float32)", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
