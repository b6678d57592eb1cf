"""Generate the demo cohort (``examples/cohort/submissions/``) from ``solutions/``.

Run from the repository root: ``python examples/make_cohort.py``. The result
is committed, so the demo never depends on this script; rerun it after the
solutions change, then re-measure ``examples/cohort/EXPECTED.md``:

    ppo-course demo --out /tmp/full --profile full
    ppo-course demo --out /tmp/fast --profile fast
    python examples/make_cohort.py --expected /tmp/full/gradebook.csv /tmp/fast/gradebook.csv

Each student starts from the solutions as a student would hand them in (the
``### BEGIN/END SOLUTION`` markers and ``# TODO`` hints removed) and gets the
realistic edits listed in ``STUDENTS``: exact text replacements that must
match the solutions (the script stops, naming the edit, if one does not).
The mistakes are the common ones of the mistake catalogue
(``tests/catalogue/buggy/``), with the diagnosis id the graders should report.
"""

from __future__ import annotations

import io
import shutil
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
STUBS = ROOT / "exercises"
OUT = ROOT / "examples" / "cohort" / "submissions"
ALL = ["ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer", "ex6_kl_reward", "ex7_ppo_step"]

MASKED_MEAN = "return torch.where(real, x, torch.zeros((), dtype=x.dtype, device=x.device)).sum() / real.sum()"
ROW_MEANS = ("return (torch.where(real, x, torch.zeros((), dtype=x.dtype, device=x.device)).sum(dim=1)"
             " / real.sum(dim=1)).mean()")

# student id -> (modules handed in, {module: [(old, new), ...]}, modules left as the stub, note)
STUDENTS: dict[str, dict] = {
    "ada": {"note": "perfect: every exercise solved"},
    "ben": {"modules": ALL[:4] + ["ex5_rollout_buffer"], "stubs": ["ex5_rollout_buffer"],
            "note": "partial: ex1-ex4 solved, ex5 handed in as the untouched stub, ex6-ex7 missing"},
    "chen": {"edits": {
        "ex2_clipped_loss": [("objective = torch.where(binds, clipped.detach(), unclipped)",
                              "objective = torch.maximum(unclipped, clipped)")],
        "ex3_full_loss": [("-masked_mean(torch.where(binds, clipped.detach(), unclipped), mask)",
                           "-masked_mean(torch.maximum(unclipped, clipped), mask)")]},
        "note": "max instead of min in the clipped surrogate (ex2, copied into ex3)"},
    "dana": {"edits": {"ex2_clipped_loss": [(MASKED_MEAN, ROW_MEANS)], "ex3_full_loss": [(MASKED_MEAN, ROW_MEANS)]},
             "note": "mean of per-row means instead of the token-level masked mean (ex2, ex3)"},
    "eli": {"edits": {"ex4_gae": [("v = torch.where(real, values.to(rewards.dtype), zero)",
                                   "v = values.to(rewards.dtype)")]},
            "note": "GAE bootstraps from the junk values in the padding (ex4)"},
    "fay": {"edits": {"ex1_ratio": [("return torch.exp(logp_new - logp_old)  # (B, T)",
                                     "return torch.exp(logp_new) / torch.exp(logp_old)  # (B, T)")]},
            "note": "ratio of probabilities instead of log space: 0/0 at log-probs of -1000 (ex1)"},
    "gus": {"edits": {"ex3_full_loss": [("torch.maximum(loss_unclipped, loss_clipped)",
                                         "torch.minimum(loss_unclipped, loss_clipped)")]},
            "note": "min instead of max in the clipped value loss (ex3)"},
    "hana": {"edits": {"ex6_kl_reward": [(
        "return torch.where(mask.bool(), kl, torch.zeros((), dtype=kl.dtype, device=kl.device))", "return kl")]},
        "note": "per-token KL not zeroed on padding (ex6)"},
    "ivan": {"edits": {"ex4_gae": [(
        "def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:",
        "def whiten(x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor")]},
        "note": "syntax error in ex4 (a missing colon): ex4 scores 0, nothing else is affected"},
    "jin": {"edits": {"ex1_ratio": [(
        "return torch.exp(logp_new - logp_old)  # (B, T)",
        "ratio = torch.exp(logp_new - logp_old)  # (B, T)\n"
        "    i = 0\n"
        "    while i < ratio.numel():  # check every entry is finite (forgot i += 1)\n"
        "        assert torch.isfinite(ratio.flatten()[i])\n"
        "    return ratio")]},
        "note": "infinite loop in probability_ratio (ex1): the sandbox's limits stop it"},
    "kai": {"edits": {"ex1_ratio": [(
        "logp_all = torch.log_softmax(logits, dim=-1)  # (B, T, V)",
        "lookup = torch.ones(64, 1024, 1024, 16, dtype=logits.dtype)  # 'precomputed table': 4 GiB\n"
        "    logp_all = torch.log_softmax(logits, dim=-1) + 0 * lookup[0, 0, 0, 0]  # (B, T, V)")]},
        "note": "memory hog in logprobs_from_logits (ex1): the sandbox's memory limit stops it"},
    "lea": {"modules": [], "note": "empty folder"},
    "max": {"zip": True, "top": "max_ppo", "modules": ALL[:6],
            "note": "a .zip with everything under one top folder, ex1-ex6 solved, ex7 missing"},
    "noor": {"edits": {"ex4_gae": [(".sum() / (n - 1)  # Bessel's correction, as TRL", ".sum() / n")]},
             "note": "whiten with the biased variance (ex4)"},
    "ola": {"edits": {"ex7_ppo_step": [("    advantages = ex4_gae.whiten(advantages, mask)\n", "")]},
            "helpers": True,
            "note": "forgets to whiten the advantages in ppo_step (ex7); keeps masked_mean in a helper module"},
    "pia": {"utf16": ["ex2_clipped_loss"],
            "note": "ex2 saved as UTF-16 by a Windows editor: NUL bytes, so it cannot be imported"},
}


def as_handed_in(source: str) -> str:
    """The solution as a student would hand it in: no solution markers, no TODO hints."""
    keep = []
    for line in source.splitlines(keepends=True):
        stripped = line.strip()
        if stripped in ("### BEGIN SOLUTION", "### END SOLUTION") or stripped.startswith("# TODO: implement"):
            continue
        keep.append(line)
    return "".join(keep)


def build_student(sid: str, spec: dict) -> dict[str, bytes]:
    """{relative path: bytes} of one student's submission."""
    files: dict[str, bytes] = {}
    for stem in spec.get("modules", ALL):
        if stem in spec.get("stubs", []):
            text = (STUBS / f"{stem}.py").read_text(encoding="utf-8")
        else:
            text = as_handed_in((SOLUTIONS / f"{stem}.py").read_text(encoding="utf-8"))
        for old, new in spec.get("edits", {}).get(stem, []):
            if text.count(old) != 1:
                sys.exit(f"make_cohort: edit for {sid}/{stem}.py does not match the solution exactly once: {old!r}")
            text = text.replace(old, new)
        if spec.get("helpers") and stem in ("ex2_clipped_loss",):
            start = text.index("def masked_mean(")
            end = text.index("\ndef ", start + 1)
            text = text[:start] + text[end + 1:]
            text = text.replace("import torch\n", "import torch\n\nfrom ppo_utils import masked_mean\n", 1)
        data = text.encode("utf-16") if stem in spec.get("utf16", []) else text.encode("utf-8")
        files[f"{stem}.py"] = data
    if spec.get("helpers"):
        files["ppo_utils.py"] = (
            '"""My helpers."""\nimport torch\n\n\ndef masked_mean(x, mask):\n'
            '    real = mask.bool()\n'
            '    return torch.where(real, x, torch.zeros((), dtype=x.dtype, device=x.device)).sum() / real.sum()\n'
        ).encode()
    return files


def write_expected(full_csv: Path, fast_csv: Path) -> Path:
    """Write examples/cohort/EXPECTED.md from two measured gradebooks (full and fast profile)."""
    import csv

    def read(path: Path) -> dict[str, dict[str, str]]:
        with open(path, newline="", encoding="utf-8") as fh:
            return {r["student_id"]: r for r in csv.DictReader(fh)}

    full, fast = read(full_csv), read(fast_csv)
    stems = [s for s in ALL if s in next(iter(full.values()))]
    lines = [
        "# Demo cohort: expected gradebook",
        "",
        "Measured with `ppo-course demo` (full and fast profile) on the committed",
        "submissions in `submissions/`, generated by `examples/make_cohort.py`",
        "from `solutions/`. `tests/batch/test_demo.py` checks the demo against this",
        "table (per-exercise scores are the full profile's; the fast profile only",
        "leaves out exercise 7's short training run). Re-measure after a change to",
        "the graders, the points or the solutions (see make_cohort.py).",
        "",
        "| student_id | " + " | ".join(stems) + " | total_full | total_fast | max_full | status | what it holds |",
        "| --- | " + " | ".join("---:" for _ in stems) + " | ---: | ---: | ---: | --- | --- |",
    ]
    for sid in sorted(full):
        row = full[sid]
        note = STUDENTS.get(sid, {}).get("note", "")
        lines.append(f"| {sid} | " + " | ".join(row[s] for s in stems)
                     + f" | {row['total']} | {fast[sid]['total']} | {row['max_total']} | {row['status']} | {note} |")
    out = OUT.parent / "EXPECTED.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def main() -> int:
    """Write examples/cohort/submissions/ from scratch (or, with --expected FULL FAST, EXPECTED.md)."""
    if sys.argv[1:2] == ["--expected"]:
        print(write_expected(Path(sys.argv[2]), Path(sys.argv[3])))
        return 0
    # Every edit is checked before the committed cohort is touched.
    built = {sid: build_student(sid, spec) for sid, spec in STUDENTS.items()}
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    for sid, spec in STUDENTS.items():
        files = built[sid]
        if spec.get("zip"):
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
                for rel, data in sorted(files.items()):
                    info = zipfile.ZipInfo(f"{spec['top']}/{rel}", date_time=(2026, 1, 1, 0, 0, 0))
                    info.compress_type = zipfile.ZIP_DEFLATED
                    zf.writestr(info, data)
            (OUT / f"{sid}.zip").write_bytes(buf.getvalue())
            continue
        folder = OUT / sid
        folder.mkdir()
        for rel, data in files.items():
            (folder / rel).write_bytes(data)
        if not files:
            (folder / ".gitkeep").write_text("")  # git keeps no empty folder; hidden files are not graded
        print(f"{sid:6s} {spec['note']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
