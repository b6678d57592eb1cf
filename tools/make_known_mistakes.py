"""Write ppo_course/grading_kit/known_mistakes.json: the known buggy variants on the public tests' inputs.

Run `python tools/make_known_mistakes.py` after changing `grader/mistakes/buggy_variants.py` (the lookup),
`grader/mistakes/variants_ex1_ex3.py`, `variants_ex4_ex6.py` (the variants) or a public test's `MISTAKE_CASES`;
`tests/catalogue/test_public_names.py::test_known_mistakes_table_is_current` checks that the table is current.
Each public test module may define ``MISTAKE_CASES = {case: (function, args_thunk, quantity)}`` where
``quantity`` is ``"output"``, ``"output[i]"`` or ``"grad:<parameter>"``; for ``"AdaptiveKLController"`` the
arguments are (init_kl_coef, target, horizon, [(current_kl, n_steps), ...]) and the candidates are the
controller's values after each update (``grader.mistakes.variants_ex4_ex6.adaptive_kl_candidates``).
An output case of a function with a public probe (`ppo_course.grading_kit.public_probe.probe_args`) also gets
``"<case>@probe"``: the variants on that probe with the case's hyper-parameters (the public tests' evidence rule),
and ``"<case>@probe_padded"``: the same on the probe with every row padded (for code that raises on a full row).
"""

from __future__ import annotations

import importlib
import json
import math
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
PUBLIC = ("ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer", "ex6_kl_reward")


def _encode(x: torch.Tensor) -> tuple[str, list[int], list]:
    flat = [v if math.isfinite(v) else str(v) for v in x.detach().double().reshape(-1).tolist()]
    return str(x.dtype).removeprefix("torch."), list(x.shape), flat


def build() -> dict:
    """{case: [[diagnosis, dtype, shape, values], ...]} for every public module's MISTAKE_CASES."""
    import ppo_reference
    from grader.mistakes import buggy_variants
    from grader.mistakes.variants_ex4_ex6 import adaptive_kl_candidates
    from ppo_course.grading_kit.public_probe import PADDED_SUFFIX, PROBE_SUFFIX, probe_args

    table: dict[str, list] = {}
    for stem in PUBLIC:
        module = importlib.import_module(f"ppo_course.public_tests.test_{stem}")
        for case, (function, make_args, quantity) in sorted(getattr(module, "MISTAKE_CASES", {}).items()):
            args, kwargs = make_args()
            ref = getattr(ppo_reference, function)
            if function == "AdaptiveKLController":  # args: (init_kl_coef, target, horizon, updates)
                pairs = adaptive_kl_candidates(*args)
            elif quantity.startswith("grad:"):
                pairs = buggy_variants.grad_candidates(function, args, kwargs, signature_of=ref, wrt=quantity[5:])
            else:
                index = int(quantity[7:-1]) if quantity.startswith("output[") else None
                pick = (lambda out, i=index: out[i]) if index is not None else (lambda out: out)
                pairs = buggy_variants.candidates(function, args, kwargs, signature_of=ref, pick=pick)
            table[case] = _rows(pairs)
            probe = probe_args(function)
            if probe is not None and quantity.startswith("output"):  # the evidence rule's second input
                table[case + PROBE_SUFFIX] = _rows(buggy_variants.candidates(function, probe, kwargs, signature_of=ref,
                                                                              pick=pick))
                padded = probe_args(function, padded=True)
                if padded is not None:  # for a function that raises on the probe's full row
                    table[case + PADDED_SUFFIX] = _rows(buggy_variants.candidates(function, padded, kwargs,
                                                                                   signature_of=ref, pick=pick))
    return table


def _rows(pairs) -> list:
    """[[diagnosis, dtype, shape, values], ...] of the (diagnosis, thunk or tensor) pairs that give a float tensor."""
    rows = []
    for diagnosis, thunk in pairs:
        try:
            value = thunk() if callable(thunk) else thunk
        except Exception:  # noqa: BLE001 - a variant undefined on this input offers nothing
            continue
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            rows.append([diagnosis, *_encode(value)])
    return rows


def main() -> int:
    table = build()
    target = REPO / "ppo_course" / "grading_kit" / "known_mistakes.json"
    lines = [f"{json.dumps(case)}: {json.dumps(rows)}" for case, rows in sorted(table.items())]
    target.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
    print(f"wrote {target} ({len(table)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
