"""What the catalogued mistakes return on the PUBLIC tests' fixed inputs.

One variant-matching path for public and hidden tests: the hidden graders run
the known buggy variants (`grader/mistakes/buggy_variants.py`) on their inputs; the
public tests cannot (the student bundle ships no grader), so the variants'
outputs on the public tests' own fixed inputs are computed once, on the
instructor side, by `tools/make_known_mistakes.py`, and stored in
`known_mistakes.json` beside this module. A public comparison then offers them
as candidates (`ppo_course.grading_kit.feedback.expect_close`), so that the same
mistake gets the same name in `check`, in the public tests graded, and in the
hidden tests. The numbers are outputs of wrong formulas on inputs every
student already sees: they reveal no hidden input and no solution.
`tests/catalogue/test_public_names.py::test_known_mistakes_table_is_current`
fails when the table is stale.

Cases (`CASES`) name a public input and the compared quantity; each public
test module lists the cases it uses in ``MISTAKE_CASES``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import torch

TABLE = Path(__file__).with_name("known_mistakes.json")
_DTYPES = {"float32": torch.float32, "float64": torch.float64}


@lru_cache(maxsize=1)
def _table() -> dict:
    if not TABLE.is_file():
        return {}
    return json.loads(TABLE.read_text(encoding="utf-8"))


def known_mistakes(case: str) -> list[tuple[str, torch.Tensor]]:
    """(diagnosis id, the variant's output) pairs for the public case ``case``, in the variants' order.

    Returns an empty list for an unknown case (or when the table is missing), so that a public
    test still runs; NaN/inf are kept (a variant that overflows is matched by its NaN).
    """
    out = []
    for diagnosis, dtype, shape, values in _table().get(case, []):
        flat = torch.tensor([float(v) for v in values], dtype=_DTYPES[dtype])
        out.append((diagnosis, flat.reshape(shape)))
    return out
