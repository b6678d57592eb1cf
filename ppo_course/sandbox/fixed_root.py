"""The fork server's fixed paths: the venv and the package seen at ``/opt/ppo``, not in the checkout.

Grades must not depend on the folder a checkout lives in. A child is a fork of
the fork server, so it inherits the server's command line
(``/proc/self/cmdline``, ``sys.argv``), ``sys.path`` and the ``__file__`` of
every module the server imported (torch, ``ppo_course``). Exec'd straight from
the checkout's venv, all of them named the checkout's folder, and a submission
could branch on it.

So the grader starts the server in two stages (``grader.sandbox.forkserver_client``):

1. ``launch`` (the checkout's own interpreter, briefly): a private mount
   namespace (``unshare(CLONE_NEWNS)``, ``/`` made private, so nothing leaks
   back to the machine), a small tmpfs on ``/opt`` (that namespace only), the
   venv bound at ``/opt/ppo/venv`` and the package folder at
   ``/opt/ppo/src/ppo_course``; then ``execve`` of ``/opt/ppo/venv/bin/python
   -S -P -c BOOT ...``, which replaces the command line;
2. ``BOOT``: ``sys.path`` is the interpreter's standard library, then
   ``/opt/ppo/src`` and the venv's site-packages under ``/opt/ppo/venv`` (no
   ``site``: the editable install's ``.pth`` and finder, which name the
   checkout, are never read). Then ``zygote.main``.

The grader translates the paths it sends with a spawn (``needed_paths``,
``hide_paths``) with :func:`translate`, so the child's minimal root binds the
fixed paths. Where stage 1 cannot be done (not root, a mount refused, the venv
or the interpreter living under ``/opt``), it execs the old command (the
checkout's paths stay visible; the server's hello says ``fixed_root: false``).

Not hidden: ``/proc/self/mountinfo`` names each bind's source folder within
its file system (see docs/threat_model.md).
"""

from __future__ import annotations

import os
import sys

FIXED_TOP = "/opt"
FIXED_VENV = "/opt/ppo/venv"
FIXED_SRC = "/opt/ppo/src"
FIXED_PYTHON = FIXED_VENV + "/bin/python"

#: Stage 2 (``python -S -P -c BOOT CTL_FD PARENT_PID warm|cold LISTEN_PATH``): fixed sys.path, then the zygote.
BOOT = (
    "import sys, glob\n"
    "sys.path[:0] = ['/opt/ppo/src']\n"
    "sys.path += sorted(glob.glob('/opt/ppo/venv/lib/python%d.%d/site-packages' % sys.version_info[:2]))\n"
    "from ppo_course.sandbox.zygote import main\n"
    "main(sys.argv[1:])\n"
)

#: The old single-stage boot (the fallback): ``-P -s -c FALLBACK CTL_FD PARENT_PID SRC_ROOT warm|cold LISTEN``.
FALLBACK = (
    "import sys, importlib.util\n"
    "if importlib.util.find_spec('ppo_course') is None: sys.path.append(sys.argv[3])\n"
    "from ppo_course.sandbox.zygote import main\n"
    "main([sys.argv[1], sys.argv[2], sys.argv[4], sys.argv[5]])\n"
)


def active() -> bool:
    """True in a fork server started by stage 2 (its interpreter is the fixed one)."""
    return sys.executable == FIXED_PYTHON


def layout(src_root: str, venv: str) -> dict[str, str]:
    """Host folder -> fixed folder for the package (``src_root/ppo_course``) and the venv (``venv``; '' for none).

    Returns ``{}`` when the fixed paths cannot be used: no package folder, or
    the package, the venv or the base interpreter under ``/opt`` (the tmpfs
    there would hide them).
    """
    package = os.path.realpath(os.path.join(src_root, "ppo_course")) if src_root else ""
    if not package or not os.path.isdir(package):
        return {}
    out = {package: FIXED_SRC + "/ppo_course"}
    if venv:
        out[os.path.realpath(venv)] = FIXED_VENV
    base = os.path.realpath(sys.base_prefix)
    if any(p == FIXED_TOP or p.startswith(FIXED_TOP + "/") for p in [*out, base]):
        return {}
    return out


def translate(paths: list[str], mapping: dict[str, str]) -> list[str]:
    """Each path under a host folder of ``mapping`` rewritten under its fixed folder (real paths compared)."""
    out = []
    for p in paths:
        real = os.path.realpath(p)
        for host, fixed in mapping.items():
            if real == host or real.startswith(host + "/"):
                p = fixed + real[len(host):]
                break
        out.append(p)
    return out


def _bind_fixed(mapping: dict[str, str]) -> None:
    from ppo_course.sandbox import linux

    linux.unshare(linux.CLONE_NEWNS)
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE, None)
    linux.mount("tmpfs", FIXED_TOP, "tmpfs", 2 | 4, "size=1m,mode=0755")  # nosuid, nodev
    for host, fixed in mapping.items():
        os.makedirs(fixed, mode=0o755, exist_ok=True)
        linux.mount(host, fixed, None, 4096 | 16384, None)  # MS_BIND | MS_REC
    linux.mount(None, FIXED_TOP, None, 32 | 1 | 2 | 4, "size=1m,mode=0755")  # remount read-only


def launch(argv: list[str]) -> None:
    """Stage 1: ``SRC_ROOT VENV CTL_FD PARENT_PID warm|cold LISTEN_PATH``; never returns (execs stage 2 or the fallback)."""
    src_root, venv, rest = argv[0], argv[1], argv[2:]
    mapping = layout(src_root, venv) if os.geteuid() == 0 else {}
    # Only a venv's interpreter finds its prefix from the fixed path it is started by (pyvenv.cfg).
    if mapping and venv and os.path.realpath(venv) in mapping and os.path.realpath(sys.prefix) == os.path.realpath(venv):
        try:
            _bind_fixed(mapping)
            os.execve(FIXED_PYTHON, [FIXED_PYTHON, "-S", "-P", "-c", BOOT, *rest], dict(os.environ))
        except OSError as exc:
            print(f"ppo-course sandbox: fixed paths for the fork server failed ({exc}); "
                  "its children will see the checkout's folder", file=sys.stderr)
    os.execv(sys.executable, [sys.executable, "-P", "-s", "-c", FALLBACK, rest[0], rest[1], src_root, *rest[2:]])
