"""Calibration of the similarity thresholds (grader/reports/similarity.py): honest pairs against copied pairs.

Honest pairs (independent code for the same formulas; must stay unflagged):
  * ``ppo_reference`` against ``solutions`` (written independently on purpose, ARCHITECTURE.md),
    function by function's module;
  * every two entries of the mistake catalogue (``tests/catalogue/buggy`` and ``correct``) for the
    same exercise: different authors' takes on the same book formulas.
Copied pairs (must be flagged):
  * the demo cohort (``examples/cohort/submissions``): every student was generated from
    ``solutions/`` (examples/make_cohort.py), so two students' same module is a copy with a bug or two;
  * each solution module against a disguised copy: every identifier renamed, top-level functions
    and classes in reverse order, comments stripped and new ones added (:func:`disguise`).

Run ``python tests/ta/similarity_calibration.py`` to print the table that docs/ta_guide.md quotes.
"""

from __future__ import annotations

import ast
import itertools
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from grader.reports.similarity import SimilarityConfig, Unit, _boilerplate_hashes, _fingerprint, compare_units, read_cohort  # noqa: E402

REFERENCE_OF = {"ex1_ratio": ["ratio.py", "masked.py"], "ex2_clipped_loss": ["losses.py", "masked.py"],
                "ex3_full_loss": ["losses.py", "masked.py"], "ex4_gae": ["gae.py", "masked.py"],
                "ex5_rollout_buffer": ["buffer.py"], "ex6_kl_reward": ["kl.py", "masked.py"],
                "ex7_ppo_step": ["ppo_step.py"]}


def disguise(source: str) -> str:
    """A plagiarist's copy: identifiers renamed, top-level definitions reversed, comments replaced.

    Parses and unparses (ast), so that comments and docstrings vanish and the layout changes;
    every local name, argument and function name gets a new spelling (``x`` → ``x_v2``).
    """
    tree = ast.parse(source)
    import builtins

    keep = set(dir(builtins)) | {"torch", "self", "math", "F", "nn", "dataclass", "field"}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id not in keep and not node.id.startswith("__"):
                node.id = node.id + "_v2"
            return node

        def visit_arg(self, node):
            if node.arg not in keep:
                node.arg = node.arg + "_v2"
            return node

        def visit_FunctionDef(self, node):
            if not node.name.startswith("__"):
                node.name = node.name + "_v2"
            if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
                node.body = node.body[1:] or [ast.Pass()]
            self.generic_visit(node)
            return node

    tree = Rename().visit(tree)
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    rest = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.ClassDef))
            and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    tree.body = rest + defs[::-1]
    text = ast.unparse(ast.fix_missing_locations(tree))
    return "# my own work\n" + re.sub(r"\n(def |class )", r"\n# helper\n\1", text)


def _unit(owner: str, module: str, text: str) -> Unit:
    return Unit(owner, module, text, "class")


def _reference_unit(stem: str) -> Unit:
    text = "\n\n".join((ROOT / "ppo_reference" / f).read_text() for f in REFERENCE_OF[stem])
    return _unit("ppo_reference", stem, text)


def honest_pairs() -> list[tuple[str, Unit, Unit]]:
    """(label, a, b) for the honest pairs: independent authors, the same formulas.

    ``ppo_reference`` vs ``solutions``; every catalogue entry (buggy or correct) vs ``ppo_reference``;
    the ``correct/`` entries of one exercise with each other. Not included: catalogue entries vs
    ``solutions`` (the harness appends entries to the solutions, and some were written from them)
    and buggy vs buggy (one exercise's buggy entries share the catalogue author's skeleton: they
    are reported as copies, see :func:`shared_skeleton_pairs`).
    """
    pairs = []
    for stem in REFERENCE_OF:
        sol = (ROOT / "solutions" / f"{stem}.py").read_text()
        pairs.append((f"reference vs solutions {stem}", _reference_unit(stem), _unit("solutions", stem, sol)))
    catalogue: dict[str, list[Path]] = {}
    for path in sorted((ROOT / "tests" / "catalogue").glob("*/*__*.py")):
        stem = path.name.split("__")[0]
        catalogue.setdefault(stem, []).append(path)
        pairs.append((f"catalogue {path.parent.name}/{path.stem} vs reference", _unit(path.stem, stem, path.read_text()),
                      _reference_unit(stem)))
    for stem, paths in catalogue.items():
        correct = [p for p in paths if p.parent.name == "correct"]
        for a, b in itertools.combinations(correct, 2):
            pairs.append((f"catalogue correct/{a.stem} vs correct/{b.stem}",
                          _unit(a.stem, stem, a.read_text()), _unit(b.stem, stem, b.read_text())))
    return pairs


def shared_skeleton_pairs() -> list[tuple[str, Unit, Unit]]:
    """(label, a, b): buggy catalogue entries of one exercise, each pair (one author's variations)."""
    catalogue: dict[str, list[Path]] = {}
    for path in sorted((ROOT / "tests" / "catalogue" / "buggy").glob("*__*.py")):
        catalogue.setdefault(path.name.split("__")[0], []).append(path)
    return [(f"buggy/{a.stem} vs buggy/{b.stem}", _unit(a.stem, stem, a.read_text()), _unit(b.stem, stem, b.read_text()))
            for stem, paths in catalogue.items() for a, b in itertools.combinations(paths, 2)]


def copied_pairs() -> list[tuple[str, Unit, Unit]]:
    """(label, a, b) for the copied pairs of the module docstring."""
    pairs = []
    units = read_cohort(ROOT / "examples" / "cohort" / "submissions")
    by_module: dict[str, list[Unit]] = {}
    for u in units:
        by_module.setdefault(u.module, []).append(u)
    for module, group in by_module.items():
        if module.startswith("("):
            continue
        for a, b in itertools.combinations(group, 2):
            pairs.append((f"demo {a.owner} vs {b.owner} {module}", a, b))
    for path in sorted((ROOT / "solutions").glob("ex*.py")):
        text = path.read_text()
        pairs.append((f"disguised copy of solutions/{path.name}", _unit("original", path.stem, text),
                      _unit("disguised", path.stem, disguise(text))))
    return pairs


def measure(config: SimilarityConfig) -> dict[str, list]:
    """{"honest"|"copied"|"skeleton": [(label, PairResult)]} under ``config`` (stubs as boilerplate).

    Pairs where either side has no code left after the stubs are removed (an untouched stub,
    a file that does not decode) are left out: there is nothing to compare.
    """
    boilerplate = _boilerplate_hashes(ROOT / "exercises", config)
    out = {}
    for name, pairs in (("honest", honest_pairs()), ("copied", copied_pairs()), ("skeleton", shared_skeleton_pairs())):
        results = []
        for label, a, b in pairs:
            _fingerprint(a, config, boilerplate)
            _fingerprint(b, config, boilerplate)
            if a.fingerprint.token_coverage and b.fingerprint.token_coverage:
                results.append((label, compare_units(a, b, config)))
        out[name] = results
    return out


def main() -> None:
    """Print, for k in a grid and the default thresholds, the honest and copied score ranges and flags."""
    chosen = SimilarityConfig()
    print(f"threshold {chosen.threshold}, min_overlap {chosen.min_overlap}")
    print("| k | honest pairs | top two honest shares | honest flagged | copied pairs | lowest copied share | copied flagged |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for k in (20, 25, 30, 40):
        config = chosen.model_copy(update={"noise_t": k, "guarantee_t": k})
        m = measure(config)
        honest = sorted(m["honest"], key=lambda lp: -lp[1].score)
        copied = sorted(m["copied"], key=lambda lp: lp[1].score)
        print(f"| {k} | {len(honest)} | {honest[0][1].score:.2f}, {honest[1][1].score:.2f} | "
              f"{sum(p.flagged for _, p in honest)} | {len(copied)} | {copied[0][1].score:.2f} | "
              f"{sum(p.flagged for _, p in copied)} |")
        if k == chosen.noise_t:
            keep = honest, copied, m["skeleton"]
    honest, copied, skeleton = keep
    print("\nat the default k: most similar honest pairs (share, matched tokens):")
    for label, p in honest[:4]:
        print(f"  {label}: {p.score:.2f}, {p.overlap_tokens}")
    print("least similar copied pairs:")
    for label, p in copied[:4]:
        print(f"  {label}: {p.score:.2f}, {p.overlap_tokens}")
    print(f"buggy catalogue entries of one exercise (one author's skeleton): {len(skeleton)} pairs, "
          f"{sum(p.flagged for _, p in skeleton)} flagged")


if __name__ == "__main__":
    main()
