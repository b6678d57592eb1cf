"""Benchmark of batch grading on the demo cohort (a runnable script, not a test).

    python benchmarks/bench_grading.py [--profile full|fast] [--skip-nbgrader]

Measures, in one run, on ``examples/cohort/submissions``:

1. ``ppo-course`` at ``--jobs 1``: median seconds per submission (each
   student's worker wall time, from ``OUT/<student>/batch.json``) and the
   batch's wall time;
2. ``ppo-course`` at ``--jobs 2``: wall time, throughput (submissions per
   second) and its speed-up over ``--jobs 1`` (goal ≥ 1.7× on 2 cores), and
   the peak memory of the whole process tree (goal < 3 GB), sampled every
   100 ms: PSS (shared pages split among the processes that share them) and,
   as an upper bound, the sum of RSS;
3. the same submissions graded by ``nbgrader autograde`` (one run per
   student, as a TA would): a minimal nbgrader course built in a temporary
   folder, one notebook whose cells hold each module's code and whose
   autograded test cells compare exercises 1-6 with ``ppo_reference`` on
   seeded inputs (exercise 7 needs sibling modules, which a notebook does not
   have, so nbgrader grades ex1-ex6 only: the ratio is a lower bound of
   nbgrader's cost). nbgrader has no memory limit of its own, so its process
   runs under RLIMIT_AS = 3 GiB, or the cohort's memory hog would take 4 GiB.

The last line reads ``ratio nbgrader/ppo-course per submission: X.XX`` (median
seconds per submission of nbgrader over that of ppo-course at --jobs 1).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COHORT = ROOT / "examples" / "cohort" / "submissions"
NB_STEMS = ["ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer", "ex6_kl_reward"]
NB_MEMORY_LIMIT = 3 * 2**30

# Autograded test cells: the same behaviours as the hidden tests, on seeded inputs, against the reference.
NB_SETUP = """\
import torch
import ppo_reference as ref
torch.manual_seed(0)
def case(B=3, T=6, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, T + 1, (B,), generator=g)
    mask = torch.arange(T)[None, :] < lengths[:, None]
    junk = lambda: torch.where(mask, torch.randn(B, T, generator=g, dtype=dtype), 17 + 3 * torch.randn(B, T, generator=g, dtype=dtype))
    return mask, junk
def close(a, b, mask=None, tol=1e-6):
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    if mask is not None:
        a, b = a[mask.bool()], b[mask.bool()]
    assert a.shape == b.shape and torch.allclose(a, b, rtol=tol, atol=tol), (a, b)
"""
NB_TESTS = {
    "ex1_ratio": """\
for seed in range(4):
    mask, junk = case(seed=seed)
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(3, 6, 7, generator=g, dtype=torch.float64) * (1 if seed < 2 else 1000)
    tokens = torch.randint(0, 7, (3, 6), generator=g)
    close(logprobs_from_logits(logits, tokens), ref.logprobs_from_logits(logits, tokens), tol=1e-6)
    a, b = junk(), junk()
    close(probability_ratio(a, b), ref.probability_ratio(a, b), mask)
close(probability_ratio(torch.full((1, 2), -1000.0), torch.full((1, 2), -1000.0)), torch.ones(1, 2))
""",
    "ex2_clipped_loss": """\
for seed in range(4):
    mask, junk = case(seed=seed)
    args = (junk() * 0.3, junk() * 0.3, junk(), mask)
    close(clipped_surrogate_loss(*args), ref.clipped_surrogate_loss(*args))
    new = args[0].clone().requires_grad_(True)
    clipped_surrogate_loss(new, *args[1:]).backward()
    new_ref = args[0].clone().requires_grad_(True)
    ref.clipped_surrogate_loss(new_ref, *args[1:]).backward()
    close(new.grad, new_ref.grad, mask)
""",
    "ex3_full_loss": """\
for seed in range(3):
    mask, junk = case(seed=seed)
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(3, 6, 5, generator=g, dtype=torch.float64)
    v = (junk(), junk(), junk(), mask)
    close(clipped_value_loss(*v), ref.clipped_value_loss(*v))
    close(entropy_from_logits(logits, mask), ref.entropy_from_logits(logits, mask))
    args = (junk() * 0.3, junk() * 0.3, junk(), junk(), junk(), junk(), logits, mask)
    loss, stats = ppo_loss(*args)
    loss_ref, stats_ref = ref.ppo_loss(*args)
    close(loss, loss_ref)
    close(stats["approx_kl"], stats_ref["approx_kl"]); close(stats["clipfrac"], stats_ref["clipfrac"])
""",
    "ex4_gae": """\
for seed in range(4):
    mask, junk = case(seed=seed)
    r, v = junk(), junk()
    for a, b in zip(compute_gae(r, v, mask, 0.99, 0.95), ref.compute_gae(r, v, mask, 0.99, 0.95)):
        close(a, b, mask)
    close(whiten(r, mask), ref.whiten(r, mask), mask)
    close(whiten(r, mask, shift_mean=False), ref.whiten(r, mask, shift_mean=False), mask)
""",
    "ex5_rollout_buffer": """\
buf = RolloutBuffer()
assert buf.phase == "collect"
buf.add(x=torch.arange(10.0).reshape(5, 2), y=torch.arange(5))
assert len(buf) == 5
buf.start_training()
g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
r1 = RolloutBuffer(); r1.add(x=torch.arange(10.0).reshape(5, 2), y=torch.arange(5)); r1.start_training()
got = [mb["y"].tolist() for mb in buf.minibatches(2, generator=g1)]
want_buf = ref.RolloutBuffer(); want_buf.add(x=torch.arange(10.0).reshape(5, 2), y=torch.arange(5)); want_buf.start_training()
want = [mb["y"].tolist() for mb in want_buf.minibatches(2, generator=g2)]
assert got == want, (got, want)
try:
    buf.add(x=torch.zeros(1, 2), y=torch.zeros(1)); raise AssertionError("add during training must raise")
except RuntimeError:
    pass
buf.purge()
assert buf.phase == "collect" and len(buf) == 0
""",
    "ex6_kl_reward": """\
for seed in range(3):
    mask, junk = case(seed=seed)
    a, b = junk(), junk()
    close(per_token_kl(a, b, mask), ref.per_token_kl(a, b, mask))
    scores = torch.randn(3, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    for placement in ("per_token", "last_token"):
        close(kl_shaped_rewards(scores, a, b, mask, 0.05, placement), ref.kl_shaped_rewards(scores, a, b, mask, 0.05, placement), mask)
ctl, ctl_ref = AdaptiveKLController(0.05, 6.0, 10000), ref.AdaptiveKLController(0.05, 6.0, 10000)
for kl in (1.0, 12.0, 6.5):
    ctl.update(kl, 64); ctl_ref.update(kl, 64)
close(ctl.value, ctl_ref.value)
""",
}


def _pss_bytes(pid: int) -> int:
    """Proportional set size of one process (shared pages split among their users), from smaps_rollup."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class PeakMemory:
    """Peak memory of this process and all its descendants, sampled every 100 ms.

    ``peak_rss`` sums resident sizes (counts pages shared between forked
    children once per child: an upper bound); ``peak_pss`` sums proportional
    set sizes (each shared page split among its users: the memory the tree
    really holds). The sandbox forks its children from a server that has
    imported torch, so the two differ a lot.
    """

    def __init__(self) -> None:
        import psutil

        self._psutil = psutil
        self.peak_rss = 0
        self.peak_pss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = self._psutil.Process()
        while not self._stop.is_set():
            rss = pss = 0
            try:
                procs = [me, *me.children(recursive=True)]
            except self._psutil.Error:
                procs = [me]
            for p in procs:
                try:
                    rss += p.memory_info().rss
                except self._psutil.Error:
                    continue
                pss += _pss_bytes(p.pid)
            self.peak_rss = max(self.peak_rss, rss)
            self.peak_pss = max(self.peak_pss, pss)
            time.sleep(0.1)

    def __enter__(self) -> "PeakMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def grade_with_ppo_course(out: Path, jobs: int, profile: str, exercises=None):
    """(wall seconds, per-student worker seconds, PeakMemory, summary) of one forced batch over the cohort."""
    from grader.batch import run_batch

    t0 = time.monotonic()
    with PeakMemory() as mem:
        summary = run_batch(COHORT, out, jobs=jobs, force=True, profile=profile, exercises=exercises,
                            progress=False, report=False, log=lambda m: None)
    wall = time.monotonic() - t0
    per_student = [r.seconds for r in summary.records if r.status != "rejected" and r.seconds > 0]
    return wall, per_student, mem, summary


# ----------------------------------------------------------------------------- nbgrader


def _nb_cell(kind: str, source: str, grade_id: str | None = None, points: float = 0.0, solution=False, grade=False):
    import nbformat

    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    if grade_id:
        cell.metadata["nbgrader"] = {"grade_id": grade_id, "schema_version": 3, "solution": solution,
                                     "grade": grade, "locked": not solution, "task": False}
        if grade:
            cell.metadata["nbgrader"]["points"] = points
    return cell


def build_nbgrader_course(root: Path, submissions: dict[str, dict[str, str]]) -> None:
    """A minimal nbgrader course in ``root`` with the assignment ``ppo`` released and every student submitted."""
    import nbformat

    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        "c.CourseDirectory.course_id = 'ppo'\n"
        "c.Execute.timeout = 30\n"
    )
    cells = [_nb_cell("markdown", "# PPO exercises 1-6 (benchmark notebook)"),
             _nb_cell("code", NB_SETUP, "setup")]
    for stem in NB_STEMS:
        solution = (ROOT / "solutions" / f"{stem}.py").read_text(encoding="utf-8")
        # The solutions already hold ### BEGIN/END SOLUTION regions: nbgrader strips them for the release.
        cells.append(_nb_cell("code", solution, stem, solution=True))
        cells.append(_nb_cell("code", NB_TESTS[stem], f"test_{stem}", points=10, grade=True))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (root / "source" / "ppo").mkdir(parents=True)
    nbformat.write(nb, root / "source" / "ppo" / "ppo.ipynb")
    _nbgrader(root, "generate_assignment", "ppo", "--create", "--force")
    release = nbformat.read(root / "release" / "ppo" / "ppo.ipynb", as_version=4)
    for sid, modules in submissions.items():
        student_nb = nbformat.from_dict(json.loads(json.dumps(release)))
        for cell in student_nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid in modules:
                cell.source = modules[gid]
        folder = root / "submitted" / sid / "ppo"
        folder.mkdir(parents=True)
        nbformat.write(student_nb, folder / "ppo.ipynb")


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (NB_MEMORY_LIMIT, NB_MEMORY_LIMIT))


def _nbgrader(root: Path, *args: str) -> float:
    t0 = time.monotonic()
    # nbgrader runs `alembic` by name to set up its database: the venv's bin must be on PATH even when the
    # venv is not activated (`make bench` calls .venv/bin/python directly).
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=root, capture_output=True, text=True,
                          preexec_fn=_limit_memory, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return time.monotonic() - t0


def cohort_modules() -> dict[str, dict[str, str]]:
    """{student: {module stem: source}} of the cohort, staged by the batch's own checks (zip included)."""
    from grader.batch import BatchLimits, Rejected, discover, stage_submission

    entries, _ = discover(COHORT)
    out: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for entry in entries:
            try:
                staged = stage_submission(entry, Path(tmp) / entry.student_id, BatchLimits())
            except Rejected:
                out[entry.student_id] = {}
                continue
            modules = {}
            for path in staged.root.rglob("*.py"):
                if path.stem in NB_STEMS:
                    # A notebook cell holds text: NUL bytes (a UTF-16 file) cannot be in it.
                    modules[path.stem] = path.read_bytes().decode("utf-8", "replace").replace("\x00", "")
            out[entry.student_id] = modules
    return out


def grade_with_nbgrader(root: Path) -> tuple[list[float], dict[str, float]]:
    """Per-student seconds of ``nbgrader autograde ppo --student S`` and the scores from nbgrader's gradebook."""
    submissions = cohort_modules()
    build_nbgrader_course(root, submissions)
    seconds = [_nbgrader(root, "autograde", "ppo", "--student", sid, "--create", "--force") for sid in submissions]
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        scores = {sid: gb.find_submission("ppo", sid).score for sid in submissions}
    return seconds, scores


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the numbers (see the module docstring)."""
    global COHORT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=["full", "fast"], default="full")
    parser.add_argument("--skip-nbgrader", action="store_true")
    parser.add_argument("--cohort", type=Path, default=None, help="submissions folder (default: the demo cohort)")
    args = parser.parse_args(argv)
    COHORT = (args.cohort or COHORT).resolve()
    n = sum(1 for p in COHORT.iterdir() if not p.name.startswith("."))
    work = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        print(f"cohort: {n} submissions in {COHORT}; profile {args.profile}")
        wall1, per1, mem1, s1 = grade_with_ppo_course(work / "jobs1", 1, args.profile)
        med1 = statistics.median(per1)
        print(f"ppo-course --jobs 1: wall {wall1:.1f} s, median {med1:.2f} s per submission "
              f"(min {min(per1):.2f}, max {max(per1):.2f}); peak memory PSS {mem1.peak_pss / 1e9:.2f} GB "
              f"(RSS sum {mem1.peak_rss / 1e9:.2f} GB)")
        wall2, per2, mem2, s2 = grade_with_ppo_course(work / "jobs2", 2, args.profile)
        speedup = wall1 / wall2
        print(f"ppo-course --jobs 2: wall {wall2:.1f} s, throughput {n / wall2:.3f} submissions/s "
              f"({speedup:.2f}x of --jobs 1; goal >= 1.7x); peak memory PSS {mem2.peak_pss / 1e9:.2f} GB "
              f"(goal < 3 GB; RSS sum {mem2.peak_rss / 1e9:.2f} GB)")
        book1 = (work / "jobs1" / "gradebook.csv").read_text().splitlines()
        book2 = (work / "jobs2" / "gradebook.csv").read_text().splitlines()
        print(f"gradebooks of --jobs 1 and --jobs 2 identical: {book1 == book2}")
        for a, b in zip(book1, book2):
            if a != b:
                print(f"  differs: --jobs 1 {a!r}\n           --jobs 2 {b!r}")
        if args.skip_nbgrader:
            return 0
        nb_seconds, nb_scores = grade_with_nbgrader(work / "nbgrader")
        med_nb = statistics.median(nb_seconds)
        print(f"nbgrader autograde (ex1-ex6, one student per run): wall {sum(nb_seconds):.1f} s, "
              f"median {med_nb:.2f} s per submission (min {min(nb_seconds):.2f}, max {max(nb_seconds):.2f})")
        print("nbgrader scores (of 60): " + ", ".join(f"{k} {v:g}" for k, v in sorted(nb_scores.items())))
        print(f"ratio nbgrader/ppo-course per submission: {med_nb / med1:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
