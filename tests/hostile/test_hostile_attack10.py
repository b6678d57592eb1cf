"""Red-team round attack10: what a submission's own code can make the trusted side believe.

Each test plays the attack against the real sandbox (the shared fork server, real children) and asserts
the house's promise: a forged frame is the student's failure, never a grader fault.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from grader.sandbox import ForkServerClient, Limits, Sandbox, SandboxError, StudentImportError

LIMITS = Limits(call_timeout_s=5.0, import_timeout_s=5.0)

#: A module whose import sends one frame of its choosing on the protocol socket, then ends the process.
FORGE_AT_IMPORT = '''
import gc, os
for obj in gc.get_objects():
    if type(obj).__name__ == "Channel" and type(obj).__module__ == "sandbox_child.channel":
        obj.send(FRAME, [])
        os._exit(0)
'''


def _load(tmp_path: Path, frame: dict) -> None:
    folder = tmp_path / "student"
    folder.mkdir()
    (folder / "ex4_gae.py").write_text(f"FRAME = {frame!r}\n" + textwrap.dedent(FORGE_AT_IMPORT))
    with Sandbox(folder, limits=LIMITS, server=ForkServerClient.shared(share=True)) as sb:
        sb.load("ex4_gae")


@pytest.mark.parametrize("frame", [
    {"m": "setup_error", "student": False, "message": "forged"},
    {"m": "setup_error", "student": False, "message": "x" * 100_000},
    {"m": "setup_done"},
], ids=["setup-error", "setup-error-long", "second-setup-done"])
def test_a_setup_error_sent_by_the_import_is_the_students(tmp_path, frame):
    """a01: the import forged the set-up's failure (`student: false`), which the parent took for the sandbox's
    (`SandboxError`: the whole submission a grader fault, no score). Only a frame before `setup_done` is the
    sandbox's; after it, anything but `ready` / `import_error` is the module's crash."""
    with pytest.raises(StudentImportError) as caught:
        _load(tmp_path, frame)
    assert not isinstance(caught.value, SandboxError)
    assert caught.value.cause == "crash"
    assert "forged" not in str(caught.value) and len(str(caught.value)) < 2000


@pytest.mark.parametrize("info", [5, "ab", [[1, 2, 3]], None])
def test_a_forged_ready_with_odd_info_is_not_a_grader_exception(tmp_path, info):
    """a01b: `dict(header["info"])` on a forged `ready` raised TypeError / ValueError inside the grader (a
    `grader_error`); the child's info is kept only when it is a dict."""
    folder = tmp_path / "student"
    folder.mkdir()
    frame = {"m": "ready", "info": info}
    # After the forged ready, the real worker's ready follows: the module is loaded, and serves calls.
    source = f"FRAME = {frame!r}\n" + textwrap.dedent(FORGE_AT_IMPORT).replace("        os._exit(0)\n", "")
    (folder / "ex4_gae.py").write_text(source + "\ndef f(x):\n    return x + 1\n")
    with Sandbox(folder, limits=LIMITS, server=ForkServerClient.shared(share=True)) as sb:
        mod = sb.load("ex4_gae")
        assert mod.info == {}


#: Each page-cache primitive in the child, reported as "ok" or the errno it failed with.
PAGE_CACHE_PROBES = '''
import ctypes, ctypes.util, errno, mmap, os
import torch

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _shared_file():
    return torch.__file__  # a file every child sees, read-only, through the same inode


def _try(fn):
    try:
        fn()
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))


def _with_fd(fn):
    fd = os.open(_shared_file(), os.O_RDONLY)
    try:
        return _try(lambda: fn(fd))
    finally:
        os.close(fd)


def _mapped(advice):
    def run(fd):
        m = mmap.mmap(fd, 4096, prot=mmap.PROT_READ)
        try:
            m.madvise(advice)
        finally:
            m.close()
    return run


def _mincore(fd):
    m = mmap.mmap(-1, 4096)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    vec = ctypes.create_string_buffer(1)
    rc = _libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(4096), vec)
    err = ctypes.get_errno()
    del addr
    if rc != 0:
        raise OSError(err, "mincore")


def probes():
    return {
        "fadvise_dontneed": _with_fd(lambda fd: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)),
        "preadv2_nowait": _with_fd(lambda fd: os.preadv(fd, [bytearray(64)], 0, os.RWF_NOWAIT)),
        "preadv2_plain": _with_fd(lambda fd: os.preadv(fd, [bytearray(64)], 0, 0)),
        "madvise_pageout": _with_fd(_mapped(21)),
        "madvise_cold": _with_fd(_mapped(20)),
        "madvise_willneed": _with_fd(_mapped(mmap.MADV_WILLNEED)),
        "mincore": _with_fd(_mincore),
    }
'''


def test_the_shared_page_cache_cannot_be_evicted_or_probed(tmp_path):
    """a02: one child evicted pages of a shared read-only file (`posix_fadvise(DONTNEED)`) or read them in, and
    the next student's child read the bits back with `preadv2(RWF_NOWAIT)` (16 of 16 bits, both ways, through
    the real sandbox). The eviction and the non-faulting probes fail with EPERM; plain reads still work."""
    folder = tmp_path / "student"
    folder.mkdir()
    (folder / "cache_probe.py").write_text(textwrap.dedent(PAGE_CACHE_PROBES))
    with Sandbox(folder, limits=LIMITS, server=ForkServerClient.shared(share=True)) as sb:
        got = sb.load("cache_probe").probes()
    assert got == {"fadvise_dontneed": "EPERM", "preadv2_nowait": "EPERM", "preadv2_plain": "ok",
                   "madvise_pageout": "EPERM", "madvise_cold": "EPERM", "madvise_willneed": "ok",
                   "mincore": "EPERM"}, got


#: A RolloutBuffer that stores nothing: its phase, the first add()'s keys and shapes, the documented errors.
PHASE_ONLY_BUFFER = '''
import torch


class RolloutBuffer:
    def __init__(self):
        self.phase = "collect"
        self._n = 0
        self._spec = None
        self._cycle = 0

    def add(self, **fields):
        if self.phase != "collect":
            raise RuntimeError("add() while training")
        if not fields:
            raise ValueError("no fields")
        for k, v in fields.items():
            if not isinstance(v, torch.Tensor) or v.dim() < 1:
                raise ValueError(f"{k} is not a [B, ...] tensor")
        sizes = {v.shape[0] for v in fields.values()}
        if len(sizes) != 1:
            raise ValueError("fields of different batch sizes")
        spec = {k: (tuple(v.shape[1:]), v.dtype) for k, v in fields.items()}
        if self._spec is not None and spec != self._spec:
            raise ValueError("inconsistent fields")
        self._spec = spec
        self._n += sizes.pop()

    def __len__(self):
        return self._n

    def start_training(self):
        if self.phase != "collect" or self._n == 0:
            raise RuntimeError("cannot start training")
        self.phase = "train"

    def minibatches(self, mini_batch_size, generator=None):
        if isinstance(mini_batch_size, bool) or not isinstance(mini_batch_size, int) or mini_batch_size < 1:
            raise ValueError("mini_batch_size must be an int >= 1")
        if self.phase != "train":
            raise RuntimeError("minibatches() while collecting")
        cycle = self._cycle
        n = self._n
        perm = torch.randperm(n, generator=generator)

        def gen():
            for i in range(0, n, mini_batch_size):
                if self._cycle != cycle:
                    raise RuntimeError("purged")
                yield {}
        return gen()

    def purge(self):
        self._cycle += 1
        self._n = 0
        self._spec = None
        self.phase = "collect"
'''


def test_a_buffer_that_stores_nothing_earns_no_point(tmp_path):
    """a05b: exercise 5's phase, cycle and error tests are properties a buffer storing nothing has (only a phase
    flag, the first add()'s keys and shapes, empty mini-batches): they paid it 4.25 of 10 points. Each now
    `requires` the value test (grader/points.yaml), which such a buffer fails without computing."""
    from grader.grade import grade_submission

    folder = tmp_path / "student"
    folder.mkdir()
    (folder / "ex5_rollout_buffer.py").write_text(PHASE_ONLY_BUFFER, encoding="utf-8")
    result = grade_submission(folder, exercises=["ex5_rollout_buffer"], profile="fast")
    by_test = {t.test: t for t in result.tests if t.exercise == "ex5_rollout_buffer"}
    # The attack still has the properties (the tests pass); they are worth nothing without the rows.
    assert by_test["test_minibatches_during_collect_raise"].status == "passed"
    assert by_test["test_minibatch_order_matches_reference"].status == "failed"
    assert result.exercises["ex5_rollout_buffer"].score == 0.0, {t: v.score for t, v in by_test.items() if v.score}


def test_a_student_named_like_a_batch_file_is_rejected(tmp_path):
    """a08: a student folder named `attempts.csv` (a file the batch writes or removes at the top of OUT_DIR, missing
    from the reserved ids) became OUT_DIR/attempts.csv/, and the next run of the batch (a resume) ended in
    IsADirectoryError for the whole class. Every top-level output is reserved, in any case."""
    from grader.intake.class_list import discover
    from grader.records.gradebook import RESERVED_IDS

    names = ["alice", "attempts.csv", "attempts.md", "lti_publish_report.json", "Gradebook.CSV", "REPORT.md"]
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "ex1_ratio.py").write_text("x = 1\n")
    entries, _ = discover(tmp_path)
    problems = {e.student_id: e.problem for e in entries}
    assert problems["alice"] is None
    for name in names[1:]:
        assert problems[name] and "reserved" in problems[name], (name, problems[name])
    assert {"attempts.csv", "attempts.md", "lti_publish_report.json", "regrade.md", "regrade.csv"} <= RESERVED_IDS


def test_a_reserved_id_gets_its_row_and_never_a_folder_in_place_of_a_batch_file(tmp_path):
    """a08, in a batch: a student folder named `gradebook.csv` was rejected, then its feedback folder
    OUT_DIR/gradebook.csv/ made the gradebook's write fail ("failed in the batch layer") and the student vanished
    from the gradebook; `attempts.csv/` made the next run fail for the whole class. Now each reserved id has its
    rejected row with the reason, no folder, and the batch runs again."""
    import csv
    import subprocess
    import sys

    subs, out = tmp_path / "subs", tmp_path / "out"
    for name in ("gradebook.csv", "attempts.csv"):
        (subs / name).mkdir(parents=True)
        (subs / name / "ex1_ratio.py").write_text("x = 1\n")
    command = [str(Path(sys.executable).parent / "ppo-course"), "grade-batch", str(subs), "--out", str(out),
               "--jobs", "1", "--profile", "fast", "--exercises", "ex1_ratio", "--no-progress"]
    for _ in range(2):  # the second run resumes
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        with open(out / "gradebook.csv", newline="", encoding="utf-8") as fh:
            rows = {row["student_id"]: row for row in csv.DictReader(fh)}
        assert set(rows) == {"gradebook.csv", "attempts.csv"}, rows
        assert all(r["status"] == "rejected" and "reserved" in r["message"] for r in rows.values()), rows
        assert (out / "gradebook.csv").is_file() and not (out / "attempts.csv").exists()
