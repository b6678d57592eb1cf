"""Hostile submissions against classes 4, 5, 6 and the intake of issue 10, each with an honest twin.

* class 4 (state that outlives a grading): ``attacks/a35_kernel_keyring_relay.py``,
  also run by ``test_hostile.py``; here graded three times, with the same grade
  each time and no kernel object left;
* class 5 (the grader as the victim): an exercise-7 step that floods the
  known-good helpers with 16 MiB arguments before doing the real step;
* class 6 (the operator's environment): a batch graded from inside the
  submissions folder, which holds student folders named ``grader/``,
  ``ppo_reference/`` and ``torch/``; and a grading by a non-root grader whose
  venv the grader's user owns, where the submission drops a ``.pth`` and a
  ``sitecustomize.py`` into it;
* the intake: a zip bomb that expands ~1000-fold beside the honest modules.

Each asserts: no more points than the twin, no other score changed, nothing
changed outside the student's output, no process or kernel object left, and
(where cheap enough) the same grade on three reruns.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from hostile_limits import SUITE_LIMITS
from hostile_helpers import (CANARY, MARKER, REPO, SOLUTIONS, read_attack, scores_by_test, write_hostile_submission,
                             write_other_student, write_twin_submission)
from hostile_guards import Guards, guard_window, kernel_objects

pytestmark = pytest.mark.xdist_group("hostile")

HERE = Path(__file__).resolve().parent


def _comparable(result) -> str:
    data = result.to_results_json()
    data.get("extra_data", {}).pop("timing", None)
    return json.dumps(data, sort_keys=True)


def _guarded(fork_server, tmp_path):
    cohort = tmp_path / "cohort"
    other = write_other_student(cohort / "other_student")
    out = tmp_path / "grader_out"
    out.mkdir()
    return cohort, other, out, Guards([CANARY, other, out], fork_server.pid)


def test_the_kernel_object_guard_sees_a_sysv_segment():
    """The guard can fail: a SysV segment made by this test is reported, then removed."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    # Exclusive: an attack watched on another xdist worker would report this deliberate segment as its own.
    with guard_window(exclusive=True):
        before = kernel_objects()
        shmid = libc.shmget(0x70706F69, 4096, 0o1000 | 0o600)
        assert shmid >= 0
        try:
            assert any(o.startswith("SysV shm") for o in kernel_objects() - before)
        finally:
            libc.shmctl(shmid, 0, None)  # IPC_RMID
        assert kernel_objects() == before


@pytest.mark.slow
def test_class4_keyring_relay_leaves_nothing_and_grades_the_same_three_times(tmp_path, twin_results, fork_server):
    from grader.grade import grade_submission

    attack = read_attack(HERE / "attacks" / "a35_kernel_keyring_relay.py")
    twin = twin_results(attack)
    cohort, other, out, guards = _guarded(fork_server, tmp_path)
    try:
        folder = write_hostile_submission(cohort / "hostile", attack, guards.hints(other_student=other,
                                                                                     results_dir=out))
        runs = [grade_submission(folder, exercises=[attack.target, attack.other], profile="fast", limits=SUITE_LIMITS)
                for _ in range(3)]
        violations, leftovers = guards.violations(), guards.leftovers()
    finally:
        guards.restore()
        guards.close()
    assert not violations, violations
    assert not leftovers, leftovers
    assert len({_comparable(r) for r in runs}) == 1, "three gradings of the same submission differ"
    got, want = scores_by_test(runs[0]), scores_by_test(twin)
    assert not {k for k in want if got[k][0] > want[k][0]}, "scored above the honest twin"
    assert runs[0].exercises[attack.other].score == twin.exercises[attack.other].score


EX7_FLOOD = '''
# An honest ppo_step (the solution) behind a flood of the grader's known-good helpers.
import torch
import ex4_gae

_flood = []


def _hog_the_grader():
    x = torch.randn(1, 4 * 2**20, requires_grad=True)  # 16 MiB per call, kept by the grader as a pending gradient
    m = torch.ones(1, 4 * 2**20)
    for _ in range(128):  # 2 GiB if nothing stops it
        _flood.append(ex4_gae.whiten(x, m))

'''


@pytest.mark.slow
def test_class5_a_callback_flood_ends_its_child_and_not_the_grader(tmp_path, fork_server):
    """The flood costs the attacker its exercise-7 points; the grader stays bounded; ex1 is unchanged."""
    from grader.grade import grade_submission

    solution = (SOLUTIONS / "ex7_ppo_step.py").read_text(encoding="utf-8")
    twin_dir = tmp_path / "twin"
    twin_dir.mkdir()
    for stem in ("ex1_ratio", "ex7_ppo_step"):
        shutil.copyfile(SOLUTIONS / f"{stem}.py", twin_dir / f"{stem}.py")
    hostile_dir = tmp_path / "cohort" / "hostile"
    shutil.copytree(twin_dir, hostile_dir)
    # The honest step renamed, and a ppo_step with its signature that floods first, then does the real step.
    assert "\ndef ppo_step(" in solution
    flooded = solution.replace("\ndef ppo_step(", "\ndef _honest_ppo_step(", 1) + EX7_FLOOD + (
        "import functools\n\n\n@functools.wraps(_honest_ppo_step)\n"
        "def ppo_step(*args, **kwargs):\n    _hog_the_grader()\n    return _honest_ppo_step(*args, **kwargs)\n")
    (hostile_dir / "ex7_ppo_step.py").write_text(flooded, encoding="utf-8")

    twin = grade_submission(twin_dir, exercises=["ex1_ratio", "ex7_ppo_step"], profile="fast")
    cohort, other, out, guards = _guarded(fork_server, tmp_path)
    rss_before = _rss_mib()
    try:
        hostile = grade_submission(hostile_dir, exercises=["ex1_ratio", "ex7_ppo_step"], profile="fast")
        violations, leftovers = guards.violations(), guards.leftovers()
    finally:
        guards.restore()
        guards.close()
    grown = _rss_mib() - rss_before
    assert not violations and not leftovers, (violations, leftovers)
    # bound: the 256 MiB callback budget of one live child, plus messages in flight and allocator slack
    assert grown < 768, f"the grader grew by {grown:.0f} MiB (the flood offers 2 GiB per call)"
    assert hostile.exercises["ex7_ppo_step"].score <= twin.exercises["ex7_ppo_step"].score
    assert hostile.exercises["ex7_ppo_step"].score < hostile.exercises["ex7_ppo_step"].max_score
    assert hostile.exercises["ex1_ratio"].score == twin.exercises["ex1_ratio"].score == \
        twin.exercises["ex1_ratio"].max_score
    texts = " ".join(t.output + t.detail for t in hostile.tests if t.exercise == "ex7_ppo_step")
    assert "known-good" in texts or hostile.exercises["ex7_ppo_step"].score == 0


def _rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


#: Student folders named like the grader's packages: importing any of them writes a marker file.
_SHADOW = "import os\nopen(os.path.join({where!r}, '{name}-{marker}-imported'), 'w').close()\n"


def _shadow_cohort(tmp_path: Path) -> tuple[Path, Path]:
    subs = tmp_path / "submissions"
    witness = tmp_path / "witness"
    witness.mkdir()
    os.chmod(witness, 0o777)
    for name in ("grader", "ppo_reference", "torch", "hypothesis"):
        pkg = subs / name
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(_SHADOW.format(where=str(witness), name=name, marker=MARKER))
        (pkg / "batch.py").write_text(_SHADOW.format(where=str(witness), name=f"{name}.batch", marker=MARKER))
    (subs / "alice").mkdir()
    shutil.copyfile(SOLUTIONS / "ex1_ratio.py", subs / "alice" / "ex1_ratio.py")
    return subs, witness


def _check_shadow_batch(out: Path, witness: Path) -> None:
    assert sorted(os.listdir(witness)) == [], "a shadow package was imported by a trusted process"
    alice = json.loads((out / "alice" / "batch.json").read_text(encoding="utf-8"))
    assert alice["status"] == "graded" and alice["score"] == alice["max_score"] > 0
    for name in ("grader", "ppo_reference", "torch", "hypothesis"):  # graded as students: nothing to grade
        record = json.loads((out / name / "batch.json").read_text(encoding="utf-8"))
        assert record["score"] == 0


@pytest.mark.slow
@pytest.mark.xdist_group("confine")  # no shared guards: may run beside the attacks
def test_class6_packages_named_like_the_graders_in_the_working_folder_change_nothing(tmp_path):
    """`ppo-course grade-batch .` from inside the submissions folder: the shadow packages are never imported."""
    subs, witness = _shadow_cohort(tmp_path)
    exe = Path(sys.executable).parent / "ppo-course"
    if not exe.exists():
        pytest.skip("the ppo-course console script is not installed next to this interpreter")
    proc = subprocess.run([str(exe), "grade-batch", ".", "--out", str(tmp_path / "out"), "--exercises", "ex1_ratio",
                           "--profile", "fast", "--jobs", "2"], cwd=subs, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _check_shadow_batch(tmp_path / "out", witness)


@pytest.mark.slow
@pytest.mark.xdist_group("confine")  # no shared guards: may run beside the attacks
def test_class6_workers_ignore_the_operators_pythonpath_and_working_folder(tmp_path, monkeypatch):
    """The batch's workers start with `python -I` in an empty folder: PYTHONPATH=. and cwd name nothing."""
    from grader.batch import run_batch

    subs, witness = _shadow_cohort(tmp_path)
    monkeypatch.chdir(subs)
    monkeypatch.setenv("PYTHONPATH", str(subs))
    monkeypatch.setenv("PPO_COURSE_SECRET_TOKEN", "ppohostile-token")
    run_batch(Path("."), tmp_path / "out", jobs=2, profile="fast", exercises=["ex1_ratio"], progress=False,
              report=False, log=lambda m: None)
    _check_shadow_batch(tmp_path / "out", witness)


def test_class6_a_workers_environment_is_an_allow_list(monkeypatch):
    from grader.runners import workers as batch

    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.setenv("PYTHONSTARTUP", "/somewhere/evil.py")
    monkeypatch.setenv("GRADESCOPE_TOKEN", "secret")
    from grader.course_secret import SECRET_ENV, secret_path
    from grader.hidden.disk_cache import CACHE_DIR_ENV, root

    env = batch.worker_environment(shared_server=False)
    assert not {"PYTHONPATH", "PYTHONSTARTUP", "GRADESCOPE_TOKEN"} & set(env)
    # Besides the allow-list, only what the grader sets itself: the course's secret file and the root of the
    # graders' store on disk, as it resolved them.
    assert set(env) <= set(batch._WORKER_ENV_KEEP) | {"PYTHONDONTWRITEBYTECODE", SECRET_ENV, CACHE_DIR_ENV}
    assert env[SECRET_ENV] == str(secret_path())
    assert env[CACHE_DIR_ENV] == str(root())


_PLANT = '''
import os, site, sys
for folder in {site.getsitepackages()[0], sys.prefix}:
    for name in ("ppohostile_evil.pth", "sitecustomize.py"):
        try:
            with open(os.path.join(folder, name), "w") as fh:
                fh.write("import os; open('/tmp/ppohostile-pwned-by-pth', 'w').close()\\n")
        except OSError:
            pass
'''


def _hidden_ancestors(paths: list[str]) -> dict[str, list[str]]:
    """``{first ancestor "other" cannot traverse: [the paths below it]}`` (e.g. a clone in a 0700 mktemp folder, /root)."""
    found: dict[str, list[str]] = {}
    for path in paths:
        parts = Path(path).parts
        for i in range(2, len(parts) + 1):
            anc = str(Path(*parts[:i]))
            if not os.stat(anc).st_mode & 0o001:
                found.setdefault(anc, []).append(path)
                break
    return found


def _as_user_who_can_read(paths: list[str], stash: Path, command: list[str]) -> list[str]:
    """``command`` run in a private mount namespace where every folder on the way to ``paths`` is traversable.

    What a non-root grader needs (docs/ta_guide.md) is read access to the venv, the Python installation
    and the package; a checkout in a folder other users cannot enter (``git clone`` into ``mktemp -d``,
    a 0700 home) does not give it. Rather than copy torch, the test gives the grader's user a view of the
    same paths: each closed ancestor is covered with a 0755 tmpfs and the paths are bound back (as root,
    before ``setpriv`` drops to the other user); the machine's own mounts are untouched.
    """
    script = ["set -e"]
    for i, (anc, below) in enumerate(sorted(_hidden_ancestors(paths).items())):
        for j, path in enumerate(below):
            script.append(f"mkdir -p {stash}/{i}_{j} && mount --bind {path} {stash}/{i}_{j}")
        script.append(f"mount -t tmpfs -o mode=0755,size=64k tmpfs {anc}")
        for j, path in enumerate(below):
            script.append(f"mkdir -p {path} && mount --bind {stash}/{i}_{j} {path}")
    script.append('exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(script), "sh", *command]


@pytest.mark.slow
@pytest.mark.xdist_group("confine")  # no shared guards: may run beside the attacks
def test_class6_a_non_root_grader_keeps_its_venv(tmp_path):
    """A grader running as "nobody" over a venv it owns: the submission's .pth never lands, grades repeat.

    Independent of where the checkout lives: the grader's user reads the checkout and the Python
    installation through ``_as_user_who_can_read`` (issue 19: a clone in a 0700 folder failed with
    ``No module named 'grader'``).
    """
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("setpriv", "unshare", "mount")):
        pytest.skip("needs root, setpriv, unshare and mount to start a grader as another user")
    base = Path("/tmp") / f"ppo-nonroot-grader-{os.getpid()}"  # no marker: a parallel attack's guard scans /tmp
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(mode=0o755)
    try:
        venv = base / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--copies", str(venv)], check=True)
        site_dir = next(venv.glob("lib/python*/site-packages"))
        import site as _site

        here_site = next(p for p in _site.getsitepackages() if Path(p).is_dir())
        (site_dir / "ppo_course_dev.pth").write_text(f"import site; site.addsitedir({here_site!r})\n")
        for name, source in (("twin", SOLUTIONS / "ex1_ratio.py"), ("hostile", None)):
            (base / name).mkdir()
            text = (SOLUTIONS / "ex1_ratio.py").read_text(encoding="utf-8")
            (base / name / "ex1_ratio.py").write_text(text if source else _PLANT + text, encoding="utf-8")
        (base / "stash").mkdir()
        # The grader's own course secret, where a grader user keeps it (~/.config/ppo-course, 0700 / 0600).
        from grader.course_secret import SECRET_ENV
        secret_dir = base / ".config" / "ppo-course"
        secret_dir.mkdir(parents=True, mode=0o700)
        shutil.copy(os.environ[SECRET_ENV], secret_dir / "grader_secret")
        os.chmod(secret_dir / "grader_secret", 0o600)
        os.chmod(base / ".config", 0o700)
        subprocess.run(["chown", "-R", "65534:65534", str(base)], check=True)
        before = sorted(p.name for p in site_dir.iterdir())
        readable = sorted({str(REPO), os.path.realpath(sys.base_prefix), os.path.realpath(here_site)})

        def grade(name: str) -> dict:
            code = ("import json, sys; from grader.grade import grade_submission; "
                    f"r = grade_submission({str(base / name)!r}, exercises=['ex1_ratio'], profile='fast'); "
                    "d = r.to_results_json(); d['extra_data'].pop('timing', None); print(json.dumps(d))")
            command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", "-i",
                       "PATH=/usr/bin:/bin", f"HOME={base}", str(venv / "bin" / "python"), "-I", "-c", code]
            proc = subprocess.run(_as_user_who_can_read(readable, base / "stash", command),
                                  capture_output=True, text=True, timeout=600, cwd=base)
            assert proc.returncode == 0, proc.stderr[-3000:]
            return json.loads(proc.stdout.strip().splitlines()[-1])

        twin = grade("twin")
        runs = [grade("hostile") for _ in range(3)]
        assert sorted(p.name for p in site_dir.iterdir()) == before, "the submission wrote into the grader's venv"
        assert not (venv / "sitecustomize.py").exists()
        assert not Path("/tmp/ppohostile-pwned-by-pth").exists()
        assert runs[0]["extra_data"]["status"] == "graded"
        assert runs[0]["score"] <= twin["score"] == twin["extra_data"]["exercises"]["ex1_ratio"]["max_score"]
        assert len({json.dumps(r, sort_keys=True) for r in runs}) == 1
    finally:
        shutil.rmtree(base, ignore_errors=True)
        Path("/tmp/ppohostile-pwned-by-pth").unlink(missing_ok=True)


@pytest.mark.slow
@pytest.mark.xdist_group("confine")  # no shared guards: may run beside the attacks
def test_intake_a_zip_bomb_beside_honest_modules_is_rejected_everywhere(tmp_path):
    """The bomb gains nothing on any path: rejected by `grade` as by the batch (it was graded by `grade`)."""
    from grader.grade import grade_submission
    from ppo_course.submission_layout import entry_for
    from ppo_course.submission_rules import Rejected, SubmissionLimits, stage_submission

    bomb = tmp_path / f"{MARKER}.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(SOLUTIONS / "ex1_ratio.py", "ex1_ratio.py")
        zf.writestr("weights.bin", b"\0" * 15_000_000)  # under the 20 MB size limit, ~1000-fold compression
    result = grade_submission(bomb, exercises=["ex1_ratio"], profile="fast")
    assert (result.status, result.score) == ("rejected", 0)
    assert "zip bomb" in result.message
    with pytest.raises(Rejected, match="zip bomb"):
        stage_submission(entry_for(bomb), tmp_path / "staging", SubmissionLimits())
    assert not list(Path("/tmp").glob("ppo-intake-*/submission/weights.bin")), "the bomb was unpacked"
