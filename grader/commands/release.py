"""``ppo-course release OUT_DIR``: write the student bundle (see ``grader.platforms.release``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "write the student bundle: stubs, public tests, key-less quiz, the public package (no solutions or keys)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``release``."""
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="an empty (or new) folder for the bundle")
    parser.add_argument("--force", action="store_true",
                        help="replace a bundle written earlier in OUT_DIR (never any other folder)")


def run(args: argparse.Namespace) -> int:
    """Write the bundle; exit 0 on success, 2 when OUT_DIR or the source tree is unusable."""
    import time

    import torch

    from grader.platforms.release import ReleaseError, build_release

    torch.set_num_threads(1)  # the reference runs' toy model gains nothing from intra-op threads
    started = time.monotonic()
    try:
        files = build_release(args.out_dir, force=args.force)
    except ReleaseError as exc:
        print(f"ppo-course release: {exc}", file=sys.stderr)
        return 2
    stubs = sum(1 for f in files if f.parent.name == "exercises")
    print(f"wrote the student bundle to {args.out_dir} in {time.monotonic() - started:.0f} s: {len(files)} files "
          f"({stubs} exercise stubs, the reference's training runs for train --mine). "
          f"Students install it with one command in that folder: `./install.sh` (see its README.md).")
    return 0
