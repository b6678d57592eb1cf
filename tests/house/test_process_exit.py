"""`ppo_course.process_exit.run_and_exit`: the exit status, atexit handlers and buffered output survive
the fast exit; a live non-daemon thread is joined as in a normal exit (each case in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ppo_course.process_exit import exit_code

PROGRAM = textwrap.dedent("""
    import atexit, sys, threading, time
    from pathlib import Path
    from ppo_course.process_exit import run_and_exit
    out = Path(sys.argv[1])
    atexit.register(lambda: out.joinpath("atexit").write_text("ran"))

    def main():
        sys.stdout.write("buffered line without a newline")  # flushed only at exit
        if sys.argv[2] == "thread":
            def late():
                time.sleep(0.3)
                out.joinpath("thread").write_text("done")
            threading.Thread(target=late).start()
        if sys.argv[2] == "raise":
            raise SystemExit("usage error")
        return 3
    run_and_exit(main)
""")


def _run(tmp_path: Path, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path), mode], capture_output=True, text=True,
                          timeout=120)


def test_status_atexit_and_buffered_output_survive(tmp_path):
    done = _run(tmp_path, "return")
    assert done.returncode == 3
    assert done.stdout == "buffered line without a newline"
    assert (tmp_path / "atexit").read_text() == "ran"


def test_a_live_thread_is_joined_not_cut_off(tmp_path):
    done = _run(tmp_path, "thread")
    assert done.returncode == 3
    assert (tmp_path / "thread").read_text() == "done"
    assert (tmp_path / "atexit").read_text() == "ran"


def test_system_exit_with_a_message_is_printed_and_gives_1(tmp_path):
    done = _run(tmp_path, "raise")
    assert done.returncode == 1
    assert "usage error" in done.stderr


@pytest.mark.parametrize(("value", "code"), [(None, 0), (0, 0), (2, 2), (130, 130), (True, 1)])
def test_exit_code_follows_sys_exit(value, code):
    """Python's own rule for ``sys.exit(value)`` (None is 0; an int is itself; True is the int 1)."""
    assert exit_code(value) == code
