"""What a child can see: scrubbed environment, private /tmp, no instructor files, no network."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from grader.sandbox import StudentError
from grader.sandbox.sandbox import instructor_paths
from sandbox_helpers import in_child

REPO = Path(__file__).resolve().parents[2]

PROBE = {
    "ex6_kl_reward.py": '''
        import os, socket

        def environment():
            return dict(os.environ)

        def can_read(path):
            try:
                with open(path, "rb") as fh:
                    return len(fh.read(100)) > 0
            except OSError as exc:
                return type(exc).__name__

        def listing(path):
            try:
                return sorted(os.listdir(path))
            except OSError as exc:
                return type(exc).__name__

        def try_import(name):
            try:
                __import__(name)
                return "imported"
            except ImportError as exc:
                return type(exc).__name__

        def interfaces():
            return sorted(name for _, name in socket.if_nameindex())

        def connect(host, port):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(2)
            s.connect((host, port))
            return "connected"

        def write_and_list(folder, name):
            try:
                with open(os.path.join(folder, name), "w") as fh:
                    fh.write("left for the next student")
            except OSError as exc:
                return type(exc).__name__
            return sorted(os.listdir(folder))

        def whoami():
            return {"uid": os.getuid(), "euid": os.geteuid(), "cwd": os.getcwd(), "files": sorted(os.listdir("."))}
        ''',
    "helper_pkg/__init__.py": "VALUE = 42\n",
}


@pytest.fixture
def probe(load):
    return load(PROBE, "ex6_kl_reward")


def test_environment_is_scrubbed(probe, monkeypatch):
    env = probe.environment()
    assert set(env) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                        "OPENBLAS_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING"}
    assert env["HOME"] == os.path.dirname(probe.info["workdir"])
    assert env["CUDA_VISIBLE_DEVICES"] == ""


def test_grader_secrets_in_its_environment_never_reach_the_child(load, monkeypatch):
    monkeypatch.setenv("GRADER_SECRET_TOKEN", "s3cr3t")
    env = load(PROBE, "ex6_kl_reward").environment()
    assert "GRADER_SECRET_TOKEN" not in env and "s3cr3t" not in str(env)


def test_the_course_secret_never_reaches_the_child(load, monkeypatch, folder_outside_tmp):
    """The grader's secret (grader.course_secret) is neither in a child's environment nor readable by it, wherever
    the course keeps it: the suite's own file (under /tmp) or a course folder outside /tmp and the home folder."""
    from grader.course_secret import SECRET_ENV, create_secret, load_secret

    suite_file = Path(os.environ[SECRET_ENV])
    course_file = create_secret(folder_outside_tmp / "course" / "grader_secret")
    os.chmod(course_file.parent, 0o755)  # the folder alone would not stop a reader: the file must
    secrets_here = {suite_file: load_secret(suite_file), course_file: load_secret(course_file)}
    for path, value in secrets_here.items():
        monkeypatch.setenv(SECRET_ENV, str(path))  # as in a worker: the parent names its secret file
        child = load(PROBE, "ex6_kl_reward")
        env = child.environment()
        assert SECRET_ENV not in env and str(path) not in str(env) and value.decode() not in str(env)
        assert child.can_read(str(path)) is not True, path
        assert child.listing(str(path.parent)) in ([], "FileNotFoundError", "PermissionError"), path


def test_submission_is_copied_into_a_private_working_folder(probe):
    me = probe.whoami()
    assert me["cwd"] == probe.info["workdir"]
    assert "ex6_kl_reward.py" in me["files"] and "helper_pkg" in me["files"]
    assert probe.try_import("helper_pkg") == "imported"


def test_parent_temp_files_are_invisible(probe, server):
    if not probe.info["mounts_private"]:
        pytest.skip("no private mount namespace on this machine (see docs/threat_model.md)")
    with tempfile.NamedTemporaryFile(prefix="hidden-expected-", dir="/tmp") as fh:
        fh.write(b"expected values")
        fh.flush()
        os.chmod(fh.name, 0o644)
        assert probe.can_read(fh.name) == "FileNotFoundError"
        assert os.path.basename(fh.name) not in probe.listing("/tmp")


def test_instructor_folders_are_unreadable(probe, server):
    if not (server.root and probe.info["mounts_private"]):
        pytest.skip("instructor files can only be hidden as root with a mount namespace (see docs/threat_model.md)")
    for folder in ("ppo_reference", "grader", "solutions", "quiz_bank", "tests", ".git"):
        assert (REPO / folder).exists()
        assert probe.listing(str(REPO / folder)) in ([], "FileNotFoundError"), folder
    assert probe.can_read(str(REPO / "ppo_reference" / "__init__.py")) == "FileNotFoundError"
    assert probe.can_read(str(REPO / "solutions" / "ex4_gae.py")) == "FileNotFoundError"
    for name in ("ppo_reference", "grader", "solutions", "quiz_bank"):
        assert probe.try_import(name) == "ModuleNotFoundError"
    if server.fixed_layout:  # a109: the packages alone are bound at /opt/ppo/src, nothing else of the checkout
        assert probe.listing("/opt/ppo/src") == ["ppo_course", "sandbox_child"]
    # What the child needs stays readable: the public package and torch.
    assert probe.can_read(in_child(server, REPO / "ppo_course" / "model.py")) is True
    assert probe.try_import("ppo_course.toy_task") == "imported"
    assert probe.try_import("json.tool") == "imported"  # a stdlib module not imported before the fork


def test_grader_home_is_covered(probe, server):
    home = os.path.expanduser("~")
    if not (server.root and probe.info["mounts_private"]) or home == "/":
        pytest.skip("needs root, a mount namespace and a home folder")
    visible = probe.listing(home)
    assert isinstance(visible, list) and set(visible) <= {p.split("/")[len(Path(home).parts)] for p in _needed_under(home)}


def _needed_under(home: str) -> list[str]:
    from grader.sandbox.sandbox import needed_paths

    return [p for p in needed_paths() if p.startswith(home.rstrip("/") + "/")]


def test_other_students_folders_are_hidden(load, submission, server):
    other = submission({"ex6_kl_reward.py": "SECRET = 'bob'\n"}, name="bob")
    child = load(PROBE, "ex6_kl_reward")
    if not child.info["mounts_private"]:
        pytest.skip("no private mount namespace on this machine")
    assert child.can_read(str(other / "ex6_kl_reward.py")) in ("FileNotFoundError", "PermissionError")
    assert str(other.parent) in instructor_paths([other.parent])


def test_grader_processes_are_invisible(probe, server):
    if not (server.root and probe.info["mounts_private"]):
        pytest.skip("needs root and a mount namespace (a /proc with hidepid)")
    pids = [p for p in probe.listing("/proc") if p.isdigit()]
    assert str(os.getpid()) not in pids and str(server.pid) not in pids
    assert str(probe.info["pid"]) in pids  # its own process stays visible
    assert probe.can_read(f"/proc/{os.getpid()}/environ") in ("FileNotFoundError", "PermissionError")


def test_no_network(probe, server):
    if not probe.info["network_isolated"]:
        pytest.skip("this machine refuses a network namespace (logged at start-up)")
    assert probe.interfaces() == ["lo"]
    with pytest.raises(StudentError) as err:
        probe.connect("1.1.1.1", 53)
    assert err.value.type_name in ("OSError", "ConnectionRefusedError", "TimeoutError")


def test_runs_as_an_unprivileged_uid_when_root(probe, server):
    if not server.root:
        pytest.skip("privileges are dropped only when the grader runs as root")
    me = probe.whoami()
    assert me["uid"] == me["euid"] == probe.info["uid"] and 61000 <= me["uid"] < 62000


def test_dropped_capabilities_forbid_undoing_the_mounts():
    """After drop_capabilities (the non-root path) a process can no longer mount or unmount."""

    from sandbox_child import linux

    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked process
        code = 1
        try:
            linux.unshare(linux.CLONE_NEWUSER) if os.geteuid() != 0 else linux.unshare(linux.CLONE_NEWNS)
            linux.drop_capabilities()
            try:
                linux.mount("tmpfs", "/mnt", "tmpfs", 0, None)
            except OSError as exc:
                code = 0 if exc.errno == 1 else 2  # EPERM
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_symlinks_in_a_submission_are_not_followed(submission, server):
    """A link to the reference must not be copied by the (root) child set-up."""
    from grader.sandbox import Sandbox, StudentImportError

    sub = submission({"helper.py": "X = 1\n"})
    (sub / "ex4_gae.py").symlink_to(REPO / "ppo_reference" / "gae.py")
    (sub / "linked_dir").symlink_to(REPO / "solutions", target_is_directory=True)
    with Sandbox(sub, server=server) as sb:
        with pytest.raises(StudentImportError) as err:
            sb.load("ex4_gae")
        assert err.value.cause == "missing"
        assert sb.load("helper").names() == {"X": "value"}


def test_oversized_submission_is_refused_as_the_students_error(submission, server):
    from grader.sandbox import Limits, Sandbox, StudentImportError

    sub = submission({"ex1_ratio.py": "X = 1\n", "blob.txt": "x" * 5000})
    with Sandbox(sub, limits=Limits(max_submission_bytes=4096), server=server) as sb:
        with pytest.raises(StudentImportError, match="exceeds"):
            sb.load("ex1_ratio")


def test_graders_working_folder_is_hidden(load, folder_outside_tmp, monkeypatch):
    (folder_outside_tmp / "results.json").write_text('{"score": 10}')
    monkeypatch.chdir(folder_outside_tmp)
    child = load(PROBE, "ex6_kl_reward")
    if not child.info["mounts_private"]:
        pytest.skip("no private mount namespace on this machine")
    assert child.can_read(str(folder_outside_tmp / "results.json")) == "FileNotFoundError"
    # Covered by its own tmpfs (empty) or inside a covered data folder such as /srv (absent): hidden either way.
    assert child.listing(str(folder_outside_tmp)) in ([], "FileNotFoundError")


@pytest.mark.parametrize("folder", ["/tmp", "/var/tmp", "/dev/shm", "/run/lock"])
def test_world_writable_folders_are_private_per_child(load, folder):
    if not os.path.isdir(folder):
        pytest.skip(f"{folder} does not exist here")
    first = load(PROBE, "ex6_kl_reward")
    if not first.info["mounts_private"]:
        pytest.skip("no private mount namespace on this machine")
    written = first.write_and_list(folder, "drop.txt")
    if folder == "/run/lock":  # not in the child's minimal root at all (issue 19): nowhere to leave a file
        assert written == "FileNotFoundError"
    else:  # a private tmpfs of the child's own
        assert isinstance(written, list) and "drop.txt" in written
    second = load(PROBE, "ex6_kl_reward")
    assert "drop.txt" not in second.listing(folder)
    assert not os.path.exists(os.path.join(folder, "drop.txt"))  # nor in the grader's view


def test_unprivileged_confinement_uses_a_user_namespace(server, tmp_path):
    """The non-root path of isolate.confine, run in a forked copy of this process turned into "nobody"."""
    import json
    import resource
    import socket

    from sandbox_child import isolate, submission_files
    from grader.sandbox import Limits
    from grader.sandbox.sandbox import instructor_paths, needed_paths

    if not server.root:
        pytest.skip("needs root to become another user for the test")
    # The fork server's own temp folder is its user's; pytest's tmp_path lies under root's 0700 folder,
    # where "nobody" could not mount the minimal root (rootfs).
    workdir = tempfile.mkdtemp(prefix="ppo-sandbox-test-")
    config = {"limits": Limits().child_dict(), "uid": None, "workdir": workdir,
              "hide_paths": instructor_paths(), "needed_paths": needed_paths()}
    os.chmod(workdir, 0o777)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked process
        report = {}
        try:
            os.close(read_end)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            iso = isolate.confine(config, [submission_files.SubmissionFile("m.py", b"X = 1\n", 0o644)])
            report["iso"] = {"net": iso.network_isolated, "mounts": iso.mounts_private, "notes": iso.notes}
            try:
                open(str(REPO / "ppo_reference" / "__init__.py")).close()
                report["reference"] = "readable"
            except OSError as exc:
                report["reference"] = type(exc).__name__
            report["nproc"] = resource.getrlimit(resource.RLIMIT_NPROC)[0]
            report["ifaces"] = sorted(n for _, n in socket.if_nameindex())
            report["caps"] = [line.split()[1] for line in open("/proc/self/status") if line.startswith("CapEff")]
            report["submission"] = open(os.path.join(iso.workdir, "m.py")).read()
        except BaseException as exc:  # noqa: BLE001
            report["error"] = repr(exc)
        finally:
            os.write(write_end, json.dumps(report).encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as fh:
        report = json.loads(fh.read())
    os.waitpid(pid, 0)
    shutil.rmtree(workdir, ignore_errors=True)
    assert "error" not in report, report
    if not report["iso"]["mounts"]:
        pytest.skip(f"this kernel refuses unprivileged user namespaces: {report['iso']['notes']}")
    assert report["reference"] == "FileNotFoundError"
    assert report["ifaces"] == ["lo"] and report["iso"]["net"]
    assert report["caps"] == ["0000000000000000"]
    assert report["submission"] == "X = 1\n"
    if isolate.kernel_at_least(5, 14):
        assert report["nproc"] == Limits().max_processes  # per-namespace counting: no grader tasks on top
