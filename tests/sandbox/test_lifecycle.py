"""Nothing outlives its grader: closed sandboxes, a killed grader, speed of spawn and calls."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from sandbox_helpers import fork_server_pid, host_pid, left_under_free_uid

GRADER_SCRIPT = textwrap.dedent('''
    import sys, time
    from grader.sandbox import ForkServerClient, Limits, Sandbox
    server = ForkServerClient(warm_up=False)
    sb = Sandbox(sys.argv[1], server=server)
    mod = sb.load("ex1_ratio")
    print(server.pid, mod.info["pid"], mod.info.get("uid"), mod.grandchild(), flush=True)
    time.sleep(120)
''')

STUDENT = {
    "ex1_ratio.py": '''
        import os, time
        def grandchild():
            pid = os.fork()
            if pid == 0:
                os.setsid()  # tries to leave the process group
                time.sleep(120)
                os._exit(0)
            return pid
        def add(a, b):
            return a + b
        ''',
}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    return data[data.rindex(b")") + 2 :].split()[0] != b"Z"


def test_no_child_is_left_from_earlier_tests(server):
    # Every fixture closes its sandboxes: the shared server holds no child between tests.
    assert server.ping()["children"] == 0


def test_closing_kills_the_child_and_what_it_started(load):
    mod = load(STUDENT, "ex1_ratio")
    uid = mod.info.get("uid")
    grandchild = host_pid(mod.grandchild(), uid)
    child = host_pid(mod.info["pid"], uid)
    assert _alive(child) and _alive(grandchild)
    mod.close()
    assert not _alive(child) and not _alive(grandchild)


def test_a_killed_grader_takes_its_fork_server_and_children_with_it(submission):
    sub = submission(STUDENT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    grader = subprocess.Popen([sys.executable, "-c", GRADER_SCRIPT, str(sub)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = grader.stdout.readline()
        server_pid, child_pid, uid, grandchild_pid = line.split()
        owner = None if uid == "None" else int(uid)
        pids = [int(server_pid), host_pid(int(child_pid), owner), host_pid(int(grandchild_pid), owner)]
        assert all(_alive(p) for p in pids)
        grader.send_signal(signal.SIGKILL)
        grader.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)
        assert not [p for p in pids if _alive(p)]
        if uid != "None":
            assert not left_under_free_uid(int(uid))  # the dead server let go of it: no other may take it meanwhile
    finally:
        if grader.poll() is None:
            grader.kill()
            grader.wait()


def test_spawn_and_call_latency(load, capsys):
    """A full submission is 7 children and a few hundred calls: both must stay cheap."""
    started = time.perf_counter()
    mods = [load(STUDENT, "ex1_ratio") for _ in range(7)]
    spawn_s = (time.perf_counter() - started) / 7
    x = torch.randn(16, 32)
    started = time.perf_counter()
    for _ in range(50):
        mods[0].add(x, x)
    call_s = (time.perf_counter() - started) / 50
    with capsys.disabled():
        print(f"\n[sandbox] spawn+import {spawn_s * 1000:.1f} ms/child, call {call_s * 1000:.2f} ms/call")
    # Generous bounds for a loaded 2-core machine (measured: ~40 ms and ~1 ms).
    assert spawn_s < 1.0 and call_s < 0.05


def test_a_dead_fork_server_is_replaced(submission, server):
    from grader.sandbox import ForkServerClient, Sandbox

    # A client whose server process has exited (a real start costs seconds; only `proc` matters here).
    private = object.__new__(ForkServerClient)
    private._broken = False
    private.proc = subprocess.Popen(["true"])
    private.proc.wait()
    assert not private.alive()
    with Sandbox(submission(STUDENT), server=private) as sb:
        assert torch.equal(sb.load("ex1_ratio").add(torch.ones(1), torch.ones(1)), torch.full((1,), 2.0))
        assert sb.server is server and server.alive()  # the shared one took over


def test_children_die_with_a_killed_fork_server(submission):
    """PR_SET_PDEATHSIG survives the uid drop (the kernel clears it on a credential change)."""
    from grader.sandbox import ForkServerClient, Sandbox

    private = ForkServerClient(warm_up=False)
    with Sandbox(submission(STUDENT), server=private) as sb:
        mod = sb.load("ex1_ratio")
        uid = mod.info["uid"]
        child = host_pid(mod.info["pid"], uid)
        grandchild = host_pid(mod.grandchild(), uid)
        assert _alive(child) and _alive(grandchild)
        os.kill(private.pid, signal.SIGKILL)
        private.proc.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and _alive(child):
            time.sleep(0.02)
        assert not _alive(child)
    # What the child started (a setsid'd sleeper, without a parent-death signal) outlives a
    # SIGKILLed server under the child's uid; the next fork server to start kills it. On a machine
    # where other graders start fork servers (xdist workers here), one of theirs may be that next
    # server and sweep it first: its uid's lock died with our server. Either way it must not survive
    # a sweep, and this test's own sweep runs whenever it is still there.
    if uid is not None:
        import socket

        from sandbox_child.zygote import ForkServer

        a, b = socket.socketpair()
        try:
            ForkServer(a, os.getppid())  # its start-up sweep (cheap: no new process is started)
        finally:
            a.close()
            b.close()
        assert not _alive(grandchild)


def test_other_processes_share_the_fork_server_and_own_their_children(server, submission, monkeypatch):
    from grader.sandbox import ForkServerClient, Sandbox, SandboxError
    from grader.sandbox.forkserver_client import SHARE_ENV

    if not server.listen_path:
        # Another test of this worker made the process-wide server first, without share=True
        # (shared() returns an existing server as it is): start a listening one for this test.
        server = ForkServerClient(share=True)
    env = server.share_env()
    owner_box = Sandbox(submission(STUDENT, name="owner"), server=server)
    owner_info = owner_box.load("ex1_ratio").info
    owner_child = fork_server_pid(owner_info["pid"], owner_info.get("uid"))
    # What a batch worker does: shared() with the parent's variable connects instead of starting.
    monkeypatch.setenv(SHARE_ENV, env[SHARE_ENV])
    monkeypatch.setattr(ForkServerClient, "_shared", None)
    worker = ForkServerClient.shared()
    try:
        assert worker.proc is None and worker.pid == server.pid
        with Sandbox(submission(STUDENT, name="worker"), server=worker) as sb:
            mod = sb.load("ex1_ratio")
            assert torch.equal(mod.add(torch.ones(2), torch.ones(2)), torch.full((2,), 2.0))
            worker_child = mod.info["pid"]
            assert worker.ping()["children"] == 1
            with pytest.raises(SandboxError, match="another grader"):
                worker.finish(owner_child)  # a connection may only stop its own children
        worker = ForkServerClient.connect(env[SHARE_ENV])
        with Sandbox(submission(STUDENT, name="worker2"), server=worker) as sb:
            info = sb.load("ex1_ratio").info
            worker_child = host_pid(info["pid"], info.get("uid"))
            worker.close()  # the worker dies: its children go, the owner's stay
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and _alive(worker_child):
                time.sleep(0.02)
            assert not _alive(worker_child)
        assert _alive(owner_child) and server.alive()
    finally:
        owner_box.close()
        monkeypatch.setattr(ForkServerClient, "_shared", server)
