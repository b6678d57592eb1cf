"""``Sandbox``: run a submission's modules in confined child processes (ARCHITECTURE.md "The sandbox").

Usage (the hidden graders)::

    with Sandbox(submission_dir, limits=Limits(call_timeout_s=5)) as sb:
        gae = sb.load("ex4_gae")                 # StudentImportError if it cannot be imported
        adv, ret = gae.compute_gae(rewards, values, mask, gamma=1.0)

Each ``load`` forks one child from the shared fork server; the child copies
the submission into its private temp folder, confines itself
(``ppo_course.sandbox.isolate``) and imports the module. ``close`` (or leaving
the ``with``) kills every child with everything it started.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Iterable

from grader.sandbox.errors import SandboxError
from grader.sandbox.forkserver_client import ForkServerClient
from grader.sandbox.known_good import KnownGood
from grader.sandbox.limits import Limits
from grader.sandbox.process import ChildProcess
from grader.sandbox.remote import RemoteModule
from grader.sandbox.remote_object import RemoteObject
from ppo_course.sandbox import codec

_INSTRUCTOR_PACKAGES = ("grader", "ppo_reference", "quiz_bank", "solutions")
_INHERIT = object()


def find_module_root(submission_dir: Path) -> Path:
    """The folder holding the module files: the submission itself, or its single top folder.

    A zip often unpacks into one folder (``alice/ex1_ratio.py``); macOS adds
    ``__MACOSX``. Anything else is returned unchanged.
    """
    if any(submission_dir.glob("*.py")):
        return submission_dir
    subdirs = [p for p in submission_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))] if submission_dir.is_dir() else []
    if len(subdirs) == 1 and any(subdirs[0].glob("*.py")):
        return subdirs[0]
    return submission_dir


def instructor_paths(extra: Iterable[str | os.PathLike] = ()) -> list[str]:
    """Paths a child must not read: the repository (except what the interpreter needs), the
    instructor packages wherever they are installed, the grader's home and working folder, ``extra``,
    and every non-system top-level folder (``data_folders``)."""
    paths: list[str] = []
    spec = importlib.util.find_spec("ppo_course")
    if spec is not None and spec.origin:
        root = Path(spec.origin).resolve().parent.parent
        if (root / "pyproject.toml").exists() or (root / ".git").exists():
            paths.append(str(root))
    for name in _INSTRUCTOR_PACKAGES:
        try:
            s = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            s = None
        if s is not None and s.submodule_search_locations:
            paths.extend(str(Path(p).resolve()) for p in s.submodule_search_locations)
    home = os.path.expanduser("~")
    cwd = os.getcwd()
    for path in (home, cwd):  # the grader's home and working folder (results are often written there)
        if path not in ("/", ""):
            paths.append(str(Path(path).resolve()))
    paths.extend(str(Path(p).resolve()) for p in extra)
    paths.extend(data_folders())
    return sorted(set(paths))


#: Top-level folders of the system itself; every other top-level folder is hidden from children.
_SYSTEM_TOP_LEVEL = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc", "sys", "tmp", "run"}


def data_folders() -> list[str]:
    """Every top-level folder that is not the system's own (/srv, /opt, /home, /var, /work, /mnt, ...).

    Submissions, batch output and course material live there, wherever a TA
    put them (a child that saw them could read a classmate's module from a batch
    cohort under /srv): a child sees none of it, except what the interpreter
    needs, which ``plan_covers`` binds back (e.g. a virtualenv under /work).
    """
    found = set()
    try:
        names = os.listdir("/")
    except OSError:
        return []
    for name in names:
        real = os.path.realpath(os.path.join("/", name))
        top = Path(real).parts[1] if len(Path(real).parts) > 1 else ""
        if top and top not in _SYSTEM_TOP_LEVEL and os.path.isdir(real):
            found.add(real)
    return sorted(found)


def needed_paths() -> list[str]:
    """What the child's interpreter must keep reading (stdlib, site-packages, the public package)."""
    import sysconfig

    paths = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            paths.add(p)
    for name in ("ppo_course", "torch", "numpy", "pydantic", "pydantic_core", "typing_extensions"):
        s = importlib.util.find_spec(name)
        if s is not None and s.origin:
            paths.add(str(Path(s.origin).resolve().parent) if s.submodule_search_locations else str(Path(s.origin).resolve()))
    return sorted(p for p in paths if p and os.path.exists(p))


class Sandbox:
    """A submission's modules, each loaded in its own confined child process.

    Args:
        submission_dir: the submission folder (module files at its root or under one top folder).
        limits: per-child limits (``Limits()`` defaults).
        known_good: None, a ``KnownGood``, or True for ``KnownGood.reference()``:
            ``import ex1_ratio`` ... ``import ex6_kl_reward`` in the child are then
            served by the reference in this process (exercise 7 grading).
        hide_paths: more folders the child must not read (results, other submissions).
        server: the fork server (default: the process-wide shared one).
    """

    def __init__(
        self,
        submission_dir: str | os.PathLike,
        limits: Limits | None = None,
        known_good: KnownGood | bool | None = None,
        hide_paths: Iterable[str | os.PathLike] = (),
        server: ForkServerClient | None = None,
    ) -> None:
        self.submission_dir = find_module_root(Path(submission_dir).resolve())
        self.limits = limits or Limits()
        self.known_good = KnownGood.reference() if known_good is True else known_good or None
        extra = list(hide_paths)
        parent = self.submission_dir.parent
        if len(parent.parts) > 2:
            extra.append(parent)  # other students' folders beside this one
        self.hide_paths = instructor_paths(extra)
        self._server = server
        self.modules: list[RemoteModule] = []

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def server(self) -> ForkServerClient:
        if self._server is None or not self._server.alive():
            self._server = ForkServerClient.shared()
        return self._server

    def load(self, module_name: str, known_good: Any = _INHERIT) -> RemoteModule:
        """Fork a child that imports ``module_name`` from the submission.

        Args:
            module_name: e.g. ``"ex4_gae"``.
            known_good: override the sandbox's ``known_good`` for this module.

        Raises:
            StudentImportError: missing module, exception/exit/crash/time-out at import.
            SandboxError: the sandbox machinery failed.
        """
        kg = self.known_good if known_good is _INHERIT else (KnownGood.reference() if known_good is True else known_good)
        if kg is not None and module_name in kg.table:
            kg = KnownGood({m: v for m, v in kg.table.items() if m != module_name})
        module = RemoteModule.__new__(RemoteModule)
        self.modules.append(module)
        RemoteModule.__init__(module, self, module_name, kg)
        return module

    def _spawn_child(self, module: RemoteModule, known_good: KnownGood | None) -> ChildProcess:
        config = {
            "module": module.name,
            "submission_dir": str(self.submission_dir),
            "limits": self.limits.child_dict(),
            "hide_paths": self.hide_paths,
            "needed_paths": needed_paths(),
            "known_good": known_good.spec() if known_good else None,
        }

        def resolve(owner: str, hid: int, type_name: str) -> Any:
            if owner != "child":
                raise codec.ProtocolError("the child sent back an object of the grader's")
            return RemoteObject(module, hid, type_name, module._generation)

        session = known_good.session() if known_good else None
        try:
            return ChildProcess(self.server, config, self.limits, resolve, session)
        except SandboxError:
            if self.server.alive():
                raise
            # The shared fork server died (killed from outside, machine pressure): one fresh start.
            self._server = None
            return ChildProcess(self.server, config, self.limits, resolve, session)

    def close(self) -> None:
        """Stop every child of this sandbox (the fork server stays up for the next one)."""
        for module in self.modules:
            module.close()
