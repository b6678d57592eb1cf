"""Latency of the sandbox: ``python -m grader.sandbox.bench [--repeat N]``.

Prints, in milliseconds: fork-server start (once per grader process), spawn +
import of one child, close (kill + reap), a call with small tensors, a call
with a [64, 128, 32] float32 tensor (1 MiB) each way, ``call_with_grad``, and
one known-good callback round trip (the child calls the reference in the parent).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import textwrap
import time
from pathlib import Path

import torch

STUDENT = textwrap.dedent('''
    import torch
    import ex4_gae

    def echo(x):
        return x

    def loss(x):
        return (x * x).sum()

    def through_proxy(rewards, values, mask):
        return ex4_gae.compute_gae(rewards, values, mask)
    ''')


def _median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    """Run the measurements and print one line each."""
    from grader.sandbox import ForkServerClient, KnownGood, Sandbox

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="repetitions per call measurement")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    server = ForkServerClient()
    print(f"fork server start (import torch + warm-up): {1000 * (time.perf_counter() - start):8.1f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        sub = Path(tmp) / "student"
        sub.mkdir()
        (sub / "ex7_ppo_step.py").write_text(STUDENT)
        with Sandbox(sub, server=server, known_good=KnownGood.reference(["ex4_gae"])) as sb:
            spawns, closes = [], []
            for _ in range(10):
                t0 = time.perf_counter()
                mod = sb.load("ex7_ppo_step")
                t1 = time.perf_counter()
                mod.close()
                spawns.append(t1 - t0)
                closes.append(time.perf_counter() - t1)
            print(f"spawn + import one child (median of 10):   {1000 * statistics.median(spawns):8.1f} ms")
            print(f"close one child (kill + reap):             {1000 * statistics.median(closes):8.1f} ms")
            mod = sb.load("ex7_ppo_step")
            small, big = torch.randn(4, 8), torch.randn(64, 128, 32)
            print(f"call, [4, 8] tensor:                       {_median_ms(lambda: mod.echo(small), args.repeat):8.2f} ms")
            print(f"call, [64, 128, 32] float32 (1 MiB) each way: {_median_ms(lambda: mod.echo(big), args.repeat):6.2f} ms")
            print(f"call_with_grad, [4, 8]:                    "
                  f"{_median_ms(lambda: mod.call_with_grad('loss', (small,), wrt=('x',)), args.repeat):8.2f} ms")
            mask = torch.ones(4, 8)
            print(f"call + one known-good callback:            "
                  f"{_median_ms(lambda: mod.through_proxy(small, small, mask), args.repeat):8.2f} ms")
    server.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
