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
