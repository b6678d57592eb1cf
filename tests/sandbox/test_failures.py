"""Broken and hostile submissions: each failure costs only the calls it affects."""

from __future__ import annotations

import os
import time

import pytest
import torch

from grader.sandbox import (
    Limits,
    Sandbox,
    StudentCrash,
    StudentError,
    StudentImportError,
    StudentTimeout,
)

from sandbox_helpers import FAST, left_under_free_uid

# ---------------------------------------------------------------------------
# Import time
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source, cause, type_name, words",
    [
        ("raise ValueError('broken at import')", "error", "ValueError", "broken at import"),
        ("def f(:\n    pass", "error", "SyntaxError", ""),
        ("import sys\nsys.exit(3)", "error", "SystemExit", "3"),
        ("import os\nos._exit(4)", "crash", "", "exited with code 4"),
        ("import no_such_helper_module", "error", "ModuleNotFoundError", "no_such_helper_module"),
    ],
    ids=["exception", "syntax", "sys-exit", "os-exit", "bad-import"],
)
def test_import_failures_are_student_import_errors(load, source, cause, type_name, words):
    with pytest.raises(StudentImportError) as info:
        load({"ex1_ratio.py": source}, "ex1_ratio")
    assert info.value.cause == cause and info.value.type_name == type_name
    assert words in str(info.value)


def test_missing_module_is_reported_as_missing(load):
    with pytest.raises(StudentImportError) as info:
        load({"ex1_ratio.py": "x = 1"}, "ex2_clipped_loss")
    assert info.value.cause == "missing"


def test_hang_at_import_times_out(load):
    start = time.monotonic()
    with pytest.raises(StudentImportError) as info:
        load({"ex1_ratio.py": "while True:\n    pass"}, "ex1_ratio", limits=Limits(import_timeout_s=1.0))
    assert info.value.cause == "timeout"
    assert time.monotonic() - start < 4


def test_every_call_of_an_unimportable_module_raises_the_import_error(submission, server):
    with Sandbox(submission({"ex1_ratio.py": "raise RuntimeError('nope')"}), limits=FAST, server=server) as sb:
        with pytest.raises(StudentImportError):
            sb.load("ex1_ratio")
        other = sb.load  # the sandbox itself stays usable for other modules
        assert other is not None


# ---------------------------------------------------------------------------
# Call time
# ---------------------------------------------------------------------------

HOSTILE = {
    "ex2_clipped_loss.py": '''
        import os, signal, sys, time
        import torch

        def ok(x):
            return x + 1

        _BORN = os.urandom(8).hex()  # one per process: in a pid namespace of its own every child is pid 2

        def pid():
            return os.getpid(), _BORN

        def raises():
            raise KeyError("student bug")

        def exits():
            sys.exit(5)

        def hard_exit():
            os._exit(9)

        def hang():
            while True:
                pass

        def ignore_sigterm_and_hang():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            while True:
                time.sleep(0.01)

        def huge_tensor():
            return torch.empty(4 * 1024**3, dtype=torch.uint8).fill_(1).sum()

        def growing_list():
            chunks = []
            while True:
                chunks.append(bytearray(64 * 1024**2))

        def flood():
            while True:
                print("x" * 10000)

        def fork_bomb():
            children = []
            try:
                while len(children) < 200:
                    pid = os.fork()
                    if pid == 0:
                        time.sleep(30)
                        os._exit(0)
                    children.append(pid)
            except OSError as exc:
                return {"forked": len(children), "error": type(exc).__name__}
            return {"forked": len(children), "error": None}

        def daemon():
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    time.sleep(60)
                os._exit(0)
            return "spawned"

        def garbage_on_channel():
            os.write(3, b"this is not a frame at all, just junk bytes" * 10)
            time.sleep(5)

        def oversized_frame():
            import struct
            os.write(3, struct.pack("<4sII", b"PPOS", 10, 1) + struct.pack("<Q", 2**50))
            time.sleep(5)

        def big_file(n):
            with open("big.bin", "wb") as fh:
                fh.write(b"\\0" * n)
            return os.path.getsize("big.bin")

        def kill_parent(ppid):
            os.kill(ppid, signal.SIGKILL)

        def spin_cpu():
            x = 0
            while True:
                x += 1

        class Holder:
            pass
        ''',
}


@pytest.fixture
def hostile(load):
    return load(HOSTILE, "ex2_clipped_loss")


def test_exception_and_sys_exit_are_student_errors_and_the_process_lives_on(hostile):
    pid = hostile.pid()
    with pytest.raises(StudentError) as err:
        hostile.raises()
    assert err.value.type_name == "KeyError" and "student bug" in err.value.message
    assert err.value.traceback == ""  # the child's traceback is its own text: it never leaves (issue 10, class 3)
    with pytest.raises(StudentError) as exits:
        hostile.exits()
    assert exits.value.type_name == "SystemExit"
    assert hostile.pid() == pid


def test_os_exit_is_a_crash_that_costs_only_that_call(hostile):
    holder = hostile.new("Holder")
    first_pid = hostile.pid()
    with pytest.raises(StudentCrash, match="exited with code 9"):
        hostile.hard_exit()
    assert torch.equal(hostile.ok(torch.ones(2)), torch.full((2,), 2.0))  # a fresh child
    assert hostile.pid() != first_pid
    with pytest.raises(StudentCrash, match="lost"):
        holder.anything  # noqa: B018 - the handle died with its process


def test_hang_times_out_and_the_next_call_works(hostile):
    start = time.monotonic()
    with pytest.raises(StudentTimeout):
        hostile.call("hang", timeout=0.5)
    assert time.monotonic() - start < 2.5
    assert torch.equal(hostile.ok(torch.zeros(1)), torch.ones(1))


def test_sigterm_ignoring_loop_is_killed_with_its_group(hostile):
    uid = hostile.info["uid"]
    with pytest.raises(StudentTimeout):
        hostile.call("ignore_sigterm_and_hang", timeout=0.5)
    assert not left_under_free_uid(uid)


def test_cpu_time_limit_kills_a_spinning_child(load):
    spinner = load(HOSTILE, "ex2_clipped_loss", limits=Limits(cpu_time_s=1, call_timeout_s=20))
    start = time.monotonic()
    with pytest.raises(StudentCrash, match="CPU time limit"):
        spinner.spin_cpu()
    assert time.monotonic() - start < 10


def test_memory_hog_is_stopped_by_the_address_space_limit(load):
    hog = load(HOSTILE, "ex2_clipped_loss", limits=Limits(memory_mb=512, call_timeout_s=20))
    with pytest.raises(StudentError) as big:
        hog.huge_tensor()
    assert big.value.type_name in ("RuntimeError", "MemoryError")
    with pytest.raises((StudentError, StudentCrash)) as growing:
        hog.growing_list()
    if isinstance(growing.value, StudentError):
        assert growing.value.type_name == "MemoryError"
    assert torch.equal(hog.ok(torch.zeros(1)), torch.ones(1))


def test_output_flood_is_bounded_and_stops_the_child(load):
    limits = Limits(max_output_bytes=4096, max_output_kill_bytes=2 * 2**20, call_timeout_s=20)
    flooder = load(HOSTILE, "ex2_clipped_loss", limits=limits)
    with pytest.raises(StudentCrash, match="printed more than"):
        flooder.flood()
    out = flooder.captured_output()
    assert out.startswith("xxxx") and "more bytes of output not kept" in out
    assert len(out) < 4096 + 200


def test_fork_bomb_is_bounded_and_leaves_nothing_behind(hostile, server):
    uid = hostile.info["uid"]
    got = hostile.call("fork_bomb", timeout=20)
    if server.root:
        assert got["error"] == "BlockingIOError" and got["forked"] < Limits().max_processes
    hostile.close()
    assert not left_under_free_uid(uid)


def test_daemonised_grandchild_is_killed_on_close(hostile, server):
    uid = hostile.info["uid"]
    assert hostile.daemon() == "spawned"
    time.sleep(0.1)
    hostile.close()
    if server.root:
        assert not left_under_free_uid(uid)


@pytest.mark.parametrize("name", ["garbage_on_channel", "oversized_frame"])
def test_garbage_on_the_channel_is_a_crash_not_a_parent_error(hostile, name):
    with pytest.raises(StudentCrash, match="malformed"):
        hostile.call(name, timeout=3)
    assert torch.equal(hostile.ok(torch.zeros(1)), torch.ones(1))


def test_file_size_limit_makes_big_writes_fail(load):
    writer = load(HOSTILE, "ex2_clipped_loss", limits=Limits(max_file_bytes=2**20))
    assert writer.big_file(1000) == 1000
    with pytest.raises(StudentError) as err:
        writer.big_file(4 * 2**20)
    assert err.value.type_name == "OSError" and "too large" in err.value.message.lower()


def test_respawns_are_bounded(load):
    crashing = load(HOSTILE, "ex2_clipped_loss", limits=Limits(max_respawns=1))
    with pytest.raises(StudentCrash):
        crashing.hard_exit()
    with pytest.raises(StudentCrash):
        crashing.hard_exit()  # the one respawn
    with pytest.raises(StudentCrash, match="no further calls"):
        crashing.ok(torch.ones(1))


def test_child_cannot_signal_the_grader(hostile, server):
    if not server.root:
        pytest.skip("without a private uid the child runs as the grader's user (see docs/threat_model.md)")
    with pytest.raises(StudentError) as err:
        hostile.kill_parent(os.getpid())
    # In its own pid namespace the grader's pid names no process the child can see (or another one of its own).
    if server.probe.get("pid_namespace"):
        assert err.value.type_name == "PermissionError" or "No such process" in err.value.message
    else:
        assert err.value.type_name == "PermissionError"
    if server.probe.get("pid_namespace"):
        with pytest.raises(StudentError) as err:
            hostile.kill_parent(1)  # its namespace's reaper: root, never the student's uid
        assert err.value.type_name == "PermissionError"
