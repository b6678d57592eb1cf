"""The child's seccomp filter (issue 10, class 4) and the read-only interpreter paths (class 6).

A kernel keyring is not covered by any namespace: without the filter, a key
added by one grading is read back by the next. The filter turns the calls no
exercise needs into EPERM; these tests call them the way a hostile student
would (ctypes), check that torch still trains under the filter, and that two
gradings cannot hand data to each other through any kernel object.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from grader.sandbox import Limits

PROBE = {
    "ex6_kl_reward.py": r'''
        import ctypes, ctypes.util, errno, os

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        # x86_64 / aarch64 numbers of the calls under test
        import platform
        NR = {"x86_64": {"add_key": 248, "keyctl": 250, "request_key": 249, "bpf": 321, "perf_event_open": 298,
                          "userfaultfd": 323, "ptrace": 101, "unshare": 272, "mount": 165, "io_uring_setup": 425,
                          "clone": 56},
              "aarch64": {"add_key": 217, "keyctl": 219, "request_key": 218, "bpf": 280, "perf_event_open": 241,
                          "userfaultfd": 282, "ptrace": 117, "unshare": 97, "mount": 40, "io_uring_setup": 425,
                          "clone": 220}}[platform.machine()]

        def raw(name, *args):
            ctypes.set_errno(0)
            ret = libc.syscall(ctypes.c_long(NR[name]), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
            return ret, errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))

        def add_key(description):
            # add_key("user", description, payload, len, KEY_SPEC_USER_KEYRING = -4)
            payload = b"answers of the last grading"
            return raw("add_key", b"user", description.encode(), payload, len(payload), -4)

        def keyctl_read_user_keyring():
            # keyctl(KEYCTL_READ = 11, KEY_SPEC_USER_KEYRING, buf, 4096)
            buf = ctypes.create_string_buffer(4096)
            return raw("keyctl", 11, -4, buf, 4096)

        def others():
            return {name: raw(name, 0, 0, 0, 0, 0)[1] for name in
                    ("bpf", "perf_event_open", "userfaultfd", "ptrace", "io_uring_setup")}

        def new_namespace():
            return raw("unshare", 0x10000000 | 0x00020000)[1]  # CLONE_NEWUSER | CLONE_NEWNS

        def clone_with_namespace():
            # os.fork passes no namespace flag; a raw clone(CLONE_NEWNET | SIGCHLD) must be refused
            ret, err = raw("clone", 0x40000000 | 17, 0, 0, 0, 0)
            if ret == 0:  # the filter failed and this is the new process: leave at once
                os._exit(0)
            return err

        def train():
            import torch
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
            opt = torch.optim.Adam(model.parameters(), lr=0.1)
            x = torch.randn(32, 4)
            y = x.sum(-1, keepdim=True)
            first = None
            for _ in range(20):
                loss = ((model(x) - y) ** 2).mean()
                first = float(loss) if first is None else first
                opt.zero_grad(); loss.backward(); opt.step()
            return first, float(loss)

        def leave_everywhere(tag):
            """Leave `tag` in every kernel object a process can make; report what worked."""
            done = {}
            done["key"] = add_key("ppo-relay-" + tag)[1]
            # SysV shared memory with a fixed key: shmget(0x5050, 4096, IPC_CREAT | 0600)
            libc.shmget.restype = ctypes.c_int
            ctypes.set_errno(0)
            done["shm"] = libc.shmget(0x5050, 4096, 0o1000 | 0o600), errno.errorcode.get(ctypes.get_errno())
            ctypes.set_errno(0)
            done["sem"] = libc.semget(0x5050, 1, 0o1000 | 0o600), errno.errorcode.get(ctypes.get_errno())
            ctypes.set_errno(0)
            done["msg"] = libc.msgget(0x5050, 0o1000 | 0o600), errno.errorcode.get(ctypes.get_errno())
            try:
                fd = os.open("/dev/mqueue/ppo-relay", os.O_CREAT | os.O_WRONLY, 0o600)
                os.write(fd, tag.encode()); os.close(fd)
                done["mqueue"] = "written"
            except OSError as exc:
                done["mqueue"] = errno.errorcode.get(exc.errno)
            for folder in ("/dev/shm", "/tmp", "/var/tmp"):
                try:
                    with open(os.path.join(folder, "ppo-relay"), "w") as fh:
                        fh.write(tag)
                    done[folder] = "written"
                except OSError as exc:
                    done[folder] = errno.errorcode.get(exc.errno)
            return done

        def find_anything():
            """What a later grading can read back of an earlier one's objects."""
            found = {}
            found["keyring"] = keyctl_read_user_keyring()
            ctypes.set_errno(0)
            found["shm"] = libc.shmget(0x5050, 0, 0), errno.errorcode.get(ctypes.get_errno())
            ctypes.set_errno(0)
            found["sem"] = libc.semget(0x5050, 0, 0), errno.errorcode.get(ctypes.get_errno())
            ctypes.set_errno(0)
            found["msg"] = libc.msgget(0x5050, 0), errno.errorcode.get(ctypes.get_errno())
            for path in ("/dev/mqueue/ppo-relay", "/dev/shm/ppo-relay", "/tmp/ppo-relay", "/var/tmp/ppo-relay"):
                found[path] = os.path.exists(path)
            try:
                with open("/proc/keys") as fh:
                    found["proc_keys"] = [l for l in fh if "ppo-relay" in l]
            except OSError:
                found["proc_keys"] = []
            return found
        ''',
}


@pytest.fixture
def probe(load):
    return load(PROBE, "ex6_kl_reward", limits=Limits(call_timeout_s=60.0, import_timeout_s=30.0))


def _proc_keys() -> list[str]:
    try:
        with open("/proc/keys") as fh:
            return [line for line in fh if "ppo-relay" in line]
    except OSError:
        return []


def test_the_child_reports_the_filter_loaded(probe):
    assert probe.info["seccomp"] is True


def test_keyring_calls_fail_with_eperm(probe):
    """add_key and keyctl through ctypes: -1 and EPERM (a clear OSError for a student, not a kill)."""
    assert probe.add_key("ppo-relay-test") == (-1, "EPERM")
    assert probe.keyctl_read_user_keyring() == (-1, "EPERM")
    assert _proc_keys() == []  # nothing reached the kernel's key table


def test_other_denied_calls_fail_with_eperm(probe):
    assert probe.others() == {name: "EPERM" for name in
                              ("bpf", "perf_event_open", "userfaultfd", "ptrace", "io_uring_setup")}
    assert probe.new_namespace() == "EPERM"
    assert probe.clone_with_namespace() == "EPERM"


def test_torch_trains_under_the_filter(probe):
    """Forward, backward and Adam steps run in the filtered child and the loss goes down."""
    first, last = probe.train()
    assert last < first


def test_two_gradings_cannot_relay_through_kernel_objects(load):
    """The first child tries every kernel object a process can create; a second child finds none of them."""
    limits = Limits(call_timeout_s=60.0, import_timeout_s=30.0)
    first = load(PROBE, "ex6_kl_reward", limits=limits)
    left = first.leave_everywhere("alice")
    assert left["key"] == "EPERM"
    for kind in ("shm", "sem", "msg"):
        assert tuple(left[kind]) == (-1, "EPERM"), (kind, left[kind])
    first.close()  # the first grading is over: its child and everything it made are gone
    second = load(PROBE, "ex6_kl_reward", limits=limits)
    found = second.find_anything()
    assert found["keyring"] == (-1, "EPERM")
    for kind in ("shm", "sem", "msg"):
        assert tuple(found[kind]) == (-1, "EPERM"), (kind, found[kind])
    assert not any(found[p] for p in ("/dev/mqueue/ppo-relay", "/dev/shm/ppo-relay", "/tmp/ppo-relay",
                                      "/var/tmp/ppo-relay")), found
    assert found["proc_keys"] == [] and _proc_keys() == []
    for path in ("/dev/mqueue/ppo-relay", "/dev/shm/ppo-relay", "/tmp/ppo-relay", "/var/tmp/ppo-relay"):
        assert not os.path.exists(path), f"{path} outlived the child"


def _confine_in_fork(config: dict, before=None, after=None) -> dict:
    """Run ``isolate.confine`` in a forked copy of this process; returns its JSON report."""
    from sandbox_child import isolate, submission_files

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked process
        report: dict = {}
        try:
            os.close(read_end)
            if before:
                before()
            iso = isolate.confine(config, [submission_files.SubmissionFile("m.py", b"X = 1\n", 0o644)])
            report["iso"] = {"mounts": iso.mounts_private, "seccomp": iso.seccomp, "notes": iso.notes}
            if after:
                report.update(after(iso))
        except BaseException as exc:  # noqa: BLE001
            report["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            os.write(write_end, json.dumps(report).encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as fh:
        report = json.loads(fh.read() or "{}")
    os.waitpid(pid, 0)
    return report


def _config(tmp_path: Path, needed: list[str] | None = None) -> dict:
    from grader.sandbox.sandbox import instructor_paths, needed_paths

    work = tmp_path / "work"
    work.mkdir()
    os.chmod(work, 0o777)
    return {"limits": Limits().child_dict(), "uid": None, "workdir": str(work),
            "hide_paths": instructor_paths(), "needed_paths": needed_paths() + (needed or [])}


def test_a_child_that_cannot_load_the_filter_refuses_to_run(tmp_path):
    """Fail closed: with the binding missing, confine raises before returning to run student code."""
    from sandbox_child import syscall_filter

    def break_binding():
        syscall_filter._seccomp = None
        syscall_filter._IMPORT_ERROR = "ModuleNotFoundError: No module named 'pyseccomp'"

    report = _confine_in_fork(_config(tmp_path), before=break_binding)
    assert "iso" not in report
    assert "seccomp filter could not be installed" in report.get("error", ""), report


@pytest.fixture(params=["under /tmp", "under a data folder"])
def traversable_dir(request, tmp_path):
    """A folder "nobody" can traverse: under /tmp (bound back into the private /tmp) or outside it (/srv...)."""
    import shutil
    import tempfile

    if request.param == "under /tmp":
        path = Path(tempfile.mkdtemp(prefix="ppo-ro-test-", dir="/tmp"))
    else:
        path = request.getfixturevalue("folder_outside_tmp") / "ro-test"
        path.mkdir()
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_non_root_child_cannot_write_into_the_interpreters_paths(traversable_dir):
    """A grader running as "nobody" whose venv it owns: the child's .pth/sitecustomize never lands there."""
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user for the test")
    tmp_path = traversable_dir
    venv = tmp_path / "venv"
    site = venv / "lib" / "site-packages"
    site.mkdir(parents=True)
    for p in (tmp_path, venv, venv / "lib", site):
        os.chown(p, 65534, 65534)
        os.chmod(p, 0o755)
    config = _config(tmp_path, needed=[str(venv)])

    def become_nobody():
        os.setgroups([])
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)
        assert os.access(site, os.W_OK)  # the grader's user owns its venv

    def plant(iso):
        out = {}
        for name in ("evil.pth", "sitecustomize.py"):
            try:
                with open(site / name, "w") as fh:
                    fh.write("import os; os.system('echo pwned')\n")
                out[name] = "written"
            except OSError as exc:
                out[name] = errno.errorcode.get(exc.errno)
        return out

    report = _confine_in_fork(config, before=become_nobody, after=plant)
    assert "error" not in report, report
    if not report["iso"]["mounts"]:
        pytest.skip(f"this kernel refuses unprivileged user namespaces: {report['iso']['notes']}")
    assert report["evil.pth"] == "EROFS" and report["sitecustomize.py"] == "EROFS", report
    assert sorted(os.listdir(site)) == []
