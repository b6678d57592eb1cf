"""One memory budget per child (issue 19, class 2): processes, memfds and tmpfs pages count together.

Budgets here are small (256 MiB on top of the interpreter, plus memcg.HEADROOM_MB) so that the tests
stay cheap; a broken budget lets the swarm take ~640 MiB, which this machine survives.
"""

from __future__ import annotations

import os
import threading

import pytest

from grader.sandbox import StudentCrash
from sandbox_child import memcg, syscall_filter
from sandbox_helpers import FAST

BUDGET = FAST.model_copy(update={"memory_mb": 256, "max_respawns": 0})

HOG = {
    "hog.py": '''
        import os, time

        def swarm(processes, each_mb):
            """Fork processes that each write each_mb MiB, then wait for them."""
            r, w = os.pipe()
            pids = []
            for _ in range(processes):
                pid = os.fork()
                if pid == 0:
                    try:
                        hog = b"\\x01" * (each_mb * 2**20)
                        os.write(w, b"x")
                        time.sleep(20 + len(hog) % 2)
                    finally:
                        os._exit(0)
                pids.append(pid)
            got = 0
            while got < processes:
                got += len(os.read(r, 64))
            for pid in pids:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            return got

        _fds = []

        def memfds(count, each_mb=16):
            for i in range(count):
                fd = os.memfd_create(f"m{i}")
                for _ in range(each_mb):
                    os.write(fd, b"\\x02" * 2**20)
                _fds.append(fd)
            return len(_fds)

        def allocate(mb):
            data = b"\\x03" * (mb * 2**20)
            return len(data) // 2**20
    ''',
}


def _needs_cgroup(server) -> None:
    if not server.probe.get("memory_cgroup"):
        pytest.skip("this machine refuses a memory cgroup (the fallback is tested below)")


def test_the_fork_server_says_whether_it_has_a_memory_cgroup(server):
    """The hello's probe names the feature (the client prints a warning when it is missing)."""
    assert "memory_cgroup" in server.probe
    if os.geteuid() == 0 and os.access(memcg._V1_ROOT, os.W_OK):
        assert server.probe["memory_cgroup"] is True


def test_a_swarm_of_processes_is_held_to_one_budget(load, server):
    """4 processes x 160 MiB = 640 MiB, each far under RLIMIT_AS, together over 256 + 64 MiB: out of memory."""
    _needs_cgroup(server)
    hog = load(HOG, "hog", limits=BUDGET)
    with pytest.raises(StudentCrash, match=r"out of memory: the submission's processes together used more than its 256 MiB"):
        hog.swarm(4, 160)


def test_memfd_pages_count_against_the_budget(load, server):
    """24 memfds of 16 MiB (384 MiB, each under RLIMIT_FSIZE, none in any address space): out of memory."""
    _needs_cgroup(server)
    hog = load(HOG, "hog", limits=BUDGET)
    with pytest.raises(StudentCrash, match="out of memory"):
        hog.memfds(24)


def test_an_honest_allocation_within_the_budget_passes(load, server):
    """200 MiB in one process, and a few processes of 16 MiB, stay within 256 MiB: no error."""
    _needs_cgroup(server)
    hog = load(HOG, "hog", limits=BUDGET)
    assert hog.allocate(200) == 200
    assert hog.swarm(3, 16) == 3


def test_the_childs_cgroup_is_removed_after_it(load, server):
    """After close, the fork server's sub-tree holds no leaf of the child."""
    _needs_cgroup(server)
    own = next(line.split(":", 2)[2] for line in open("/proc/self/cgroup").read().splitlines()
               if "memory" in line.split(":")[1].split(","))
    base = os.path.join(memcg._V1_ROOT, own.lstrip("/"), f"ppo-sandbox-{server.pid}")
    if not os.path.isdir(base):
        pytest.skip("the fork server uses cgroup v2 or another hierarchy")
    before = {d for d in os.listdir(base) if d.startswith("c")}
    hog = load(HOG, "hog", limits=BUDGET)
    assert hog.allocate(8) == 8
    during = {d for d in os.listdir(base) if d.startswith("c")} - before
    assert during, "the child has no memory cgroup"
    hog.close()
    assert not ({d for d in os.listdir(base) if d.startswith("c")} & during)


def test_without_a_cgroup_one_process_without_memfds_holds_everything():
    """The fallback filter: fork and memfd_create fail with EPERM, threads still run (checked in a throwaway child)."""
    if syscall_filter.available() is not None:
        pytest.skip(f"no seccomp here: {syscall_filter.available()}")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            syscall_filter.install(single_process=True)
            results = []
            for attempt in (lambda: os.fork(), lambda: os.memfd_create("x")):
                try:
                    got = attempt()
                    if got == 0:
                        os._exit(0)
                    results.append("allowed")
                except OSError as exc:
                    results.append(str(exc.errno))
            box = []
            t = threading.Thread(target=lambda: box.append(1))
            t.start()
            t.join()
            results.append("thread" if box else "no thread")
            os.write(w, ",".join(results).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = os.read(r, 100).decode()
    os.waitpid(pid, 0)
    assert data == "1,1,thread", data  # EPERM = 1


def test_the_fallback_address_space_leaves_room_for_the_tmpfs():
    """RLIMIT_AS without a cgroup: memory_mb less tmp_size_mb and 1 MiB (hand computation: 2048 - 64 - 1 = 1983 MiB)."""
    import resource

    from sandbox_child import isolate

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            before = isolate.vm_size_bytes()
            isolate.set_limits(FAST.child_dict(), single_process=True)
            soft = resource.getrlimit(resource.RLIMIT_AS)[0]
            os.write(w, str((soft - before) // 2**20).encode())
        finally:
            os._exit(0)
    os.close(w)
    got = int(os.read(r, 100))
    os.waitpid(pid, 0)
    assert 1983 - 1 <= got <= 1983  # the VmSize read inside set_limits may differ by a page
