"""Child-process entry of `ppo-course check`: run the public tests on a folder of exercise modules.

    python -m ppo_course.check_support.runner EXERCISES_DIR OUT_JSON [STEM ...]

Imports the student's modules in this process (their own code, on their own
machine; the parent only reads OUT_JSON), runs `ppo_course/public_tests/`
with pytest and writes a JSON list of outcomes (see `collect.Outcome`). The
exit status is 0 whenever the tests ran, whatever they found.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

PUBLIC_TESTS = Path(__file__).resolve().parent.parent / "public_tests"
STEMS = ("ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer",
         "ex6_kl_reward", "ex7_ppo_step")


def public_test_files(stems: list[str] | tuple[str, ...] = STEMS) -> list[Path]:
    """The public test modules for the given exercise stems (those that exist)."""
    return [PUBLIC_TESTS / f"test_{stem}.py" for stem in stems if (PUBLIC_TESTS / f"test_{stem}.py").is_file()]


def pytest_args(files: list[Path]) -> list[str]:
    """pytest arguments that make a run independent of the caller's folder and config files."""
    root = str(PUBLIC_TESTS)
    return [*map(str, files), "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", root,
            "--confcutdir", root, "--assert=plain", "--tb=no", "-o", "addopts=", "--no-header", "-W", "ignore::DeprecationWarning"]


def run(exercises_dir: str, out_json: str, stems: list[str]) -> int:
    """Run the public tests of `stems` on `exercises_dir`; write the outcomes to `out_json`."""
    import pytest
    import torch

    from ppo_course.check_support.collect import OutcomeCollector
    from ppo_course.check_support.local import PROVIDER_PLUGIN, LocalProvider

    torch.set_num_threads(1)
    provider = LocalProvider(exercises_dir)
    collector = OutcomeCollector(provider.classify)
    files = public_test_files(stems or STEMS)
    log = io.StringIO()
    # pytest's own report is noise to a student: the parent prints the collected outcomes.
    with contextlib.redirect_stdout(log):
        code = pytest.main(pytest_args(files), plugins=[(provider), collector]) if files else 5
    outcomes = [o.to_dict() for o in collector.results()]
    Path(out_json).write_text(json.dumps({"pytest_exit": int(code), "outcomes": outcomes,
                                          "log": log.getvalue()[-20000:]}), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry (see the module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    return run(argv[0], argv[1], argv[2:])


if __name__ == "__main__":
    sys.exit(main())
