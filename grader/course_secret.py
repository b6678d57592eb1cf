"""The course's grader secret: where it lives, how it is made, read, rotated and named by a digest.

Instructor side. Every hidden input is drawn from it (``grader.hidden.draws``), so
each course has its own, made with the standard library's ``secrets`` and kept by
the instructor, never in the repository, the installed package or the student
bundle. Where it is, first match wins:

1. ``$PPO_COURSE_SECRET_FILE`` (:data:`SECRET_ENV`): a file named explicitly (one
   per course; the graders' worker processes, the Gradescope bundle and the
   nbgrader course are always pointed at theirs this way);
2. ``$XDG_CONFIG_HOME/ppo-course/grader_secret`` (default ``~/.config/...``): the
   instructor account's course secret (:func:`default_path`).

The file holds one line of 64 hex characters (256 random bits), mode 0600 in a
0700 folder. It is made at first use by the commands that start a grading
(:func:`ensure_secret`: ``grade``, ``grade-batch``, ``demo``, ``gradescope-bundle``,
``nbgrader``) or by ``ppo-course secret init``, and replaced by ``ppo-course secret
rotate`` (the old one is kept beside it as ``grader_secret.retired-<UTC time>``).
A process that only grades (a worker, the Gradescope runner, nbgrader's autograde)
never makes one: with none found it raises :class:`GraderSecretMissing`, a grader
fault, and never falls back to a built-in value. :func:`secret_digest` names a
secret without revealing it (the grader fingerprint and the cluster check use it).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

#: Environment variable naming the course's secret file (an absolute or relative path).
SECRET_ENV = "PPO_COURSE_SECRET_FILE"
#: The secret file's name in the default folder, a Gradescope bundle and an nbgrader course.
SECRET_NAME = "grader_secret"
#: Random bytes in a new secret (written as twice as many hex characters).
SECRET_BYTES = 32
#: The shortest secret accepted, in characters (after stripping white space): 128 bits of hex.
MIN_SECRET_CHARS = 32
#: Permission bits a secret file must not have: group write, anything for other users.
_FORBIDDEN_MODE = 0o027

_OVERRIDE: Path | None = None


class GraderSecretError(RuntimeError):
    """The course's grader secret cannot be used: nothing may be graded (a grader fault, never a score).

    ``str(exc)`` says which file and what to do.
    """


class GraderSecretMissing(GraderSecretError):
    """No secret file where one must be (and this process may not make one)."""


class GraderSecretInvalid(GraderSecretError):
    """A secret file that cannot be read, is too short, or can be read by other users."""


def default_path() -> Path:
    """``$XDG_CONFIG_HOME/ppo-course/grader_secret``, else ``~/.config/ppo-course/grader_secret`` (absolute)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base).resolve() / "ppo-course" / SECRET_NAME


def use_secret_file(path: str | os.PathLike | None) -> None:
    """Make ``path`` this process's secret file, ahead of ``$PPO_COURSE_SECRET_FILE`` (None: undo).

    For a process that grades for one course without an environment of its own (nbgrader's
    autograde reads its course's file this way); the environment is left as it is, so that nothing
    this process starts inherits the path.
    """
    global _OVERRIDE
    _OVERRIDE = None if path is None else Path(path).resolve()


def secret_path(explicit: str | os.PathLike | None = None) -> Path:
    """The course's secret file: ``explicit``, else :func:`use_secret_file`'s, else ``$PPO_COURSE_SECRET_FILE``,
    else :func:`default_path` (absolute; the file may not exist yet)."""
    if explicit is not None:
        return Path(explicit).expanduser().resolve()
    if _OVERRIDE is not None:
        return _OVERRIDE
    named = os.environ.get(SECRET_ENV, "").strip()
    return Path(named).expanduser().resolve() if named else default_path()


def load_secret(path: str | os.PathLike | None = None) -> bytes:
    """The secret's bytes (stripped of surrounding white space) from :func:`secret_path` (``path``).

    Raises:
        GraderSecretMissing: no file there.
        GraderSecretInvalid: not a regular file, unreadable, readable or writable by other users
            (``chmod 600``), or shorter than :data:`MIN_SECRET_CHARS` characters.
    """
    where = secret_path(path)
    try:
        st = os.stat(where)
    except FileNotFoundError:
        raise GraderSecretMissing(
            f"no grader secret at {where}: nothing can be graded without the course's secret. Make one with "
            f"`ppo-course secret init` (or copy the course's own there with `ppo-course secret init --from FILE`), "
            f"or point ${SECRET_ENV} at it (docs/ta_guide.md, 'The grader's secret')") from None
    except OSError as exc:
        raise GraderSecretInvalid(f"cannot read the grader secret at {where} ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise GraderSecretInvalid(f"the grader secret at {where} is not a regular file")
    if st.st_mode & _FORBIDDEN_MODE:
        raise GraderSecretInvalid(f"the grader secret at {where} is open to other users (mode "
                                  f"{stat.filemode(st.st_mode)}): `chmod 600 {where}`, and rotate it "
                                  "(`ppo-course secret rotate`) if anyone else may have read it")
    try:
        secret = where.read_bytes().strip()
    except OSError as exc:
        raise GraderSecretInvalid(f"cannot read the grader secret at {where} ({exc.strerror})") from None
    if len(secret) < MIN_SECRET_CHARS:
        raise GraderSecretInvalid(f"the grader secret at {where} is too short ({len(secret)} characters, at "
                                  f"least {MIN_SECRET_CHARS}); make a new one with `ppo-course secret rotate`")
    return secret


def secret_digest(secret: bytes | None = None) -> str:
    """16 hex characters naming ``secret`` (default: :func:`load_secret`'s) without revealing it.

    SHA-256 of a fixed label and the secret: what a record, a cluster check or ``secret show`` may print.

    Raises:
        GraderSecretError: as :func:`load_secret`, when ``secret`` is None.
    """
    secret = load_secret() if secret is None else secret
    return hashlib.sha256(b"ppo-course grader secret digest\0" + secret).hexdigest()[:16]


def new_secret_text() -> str:
    """A new secret's file content: :data:`SECRET_BYTES` bytes from ``secrets.token_hex``, one line."""
    return secrets.token_hex(SECRET_BYTES) + "\n"


def _private_folder(folder: Path) -> None:
    """Make ``folder`` (and its parents) if absent; a folder made here is 0700."""
    if not folder.is_dir():
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)


def create_secret(path: str | os.PathLike | None = None, text: str | None = None) -> Path:
    """Write a new secret (``text``, default :func:`new_secret_text`) at :func:`secret_path` (``path``), mode 0600.

    Never replaces a file: the secret appears whole or not at all (written aside, then hard-linked into place).

    Raises:
        FileExistsError: a secret is already there (``rotate`` replaces one).
        GraderSecretInvalid: ``text`` is shorter than :data:`MIN_SECRET_CHARS` characters.
        OSError: the folder cannot be made or written.
    """
    where = secret_path(path)
    text = new_secret_text() if text is None else text.strip() + "\n"
    if len(text.strip()) < MIN_SECRET_CHARS:
        raise GraderSecretInvalid(f"a grader secret needs at least {MIN_SECRET_CHARS} characters")
    _private_folder(where.parent)
    aside = where.with_name(f".{where.name}.{secrets.token_hex(8)}.new")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.link(aside, where)  # FileExistsError if one appeared meanwhile: that one stays
    finally:
        aside.unlink(missing_ok=True)
    return where


def ensure_secret(path: str | os.PathLike | None = None, say: Callable[[str], None] | None = None) -> Path:
    """The course's secret file, made at first use when there is none; checked either way.

    For the commands that start a grading on the instructor's machine, never for a worker.

    Returns:
        the file's path.

    Raises:
        GraderSecretError: a file that cannot be used, or none and none can be made (the reason said).
    """
    where = secret_path(path)
    if not where.exists():
        try:
            create_secret(where)
        except FileExistsError:
            pass  # another command made it a moment ago: use that one
        except OSError as exc:
            raise GraderSecretMissing(f"no grader secret at {where}, and none can be made there ({exc}); "
                                      f"point ${SECRET_ENV} at the course's secret file") from None
        else:
            (say or (lambda msg: None))(
                f"made a new grader secret for this course at {where} (digest {secret_digest(load_secret(where))}); "
                "keep it, and give it to every machine that grades this course (docs/ta_guide.md)")
    load_secret(where)
    return where


def rotate_secret(path: str | os.PathLike | None = None) -> tuple[Path, Path | None]:
    """Replace the course's secret by a new one; the old one is kept as ``<name>.retired-<UTC time>`` (0600).

    Returns:
        ``(the secret file, the retired file or None when there was no secret)``.

    Raises:
        OSError: the folder cannot be written.
    """
    where = secret_path(path)
    retired = None
    if where.exists():
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        retired = where.with_name(f"{where.name}.retired-{stamp}")
        os.link(where, retired)
        os.chmod(retired, 0o600)
    from ppo_course.atomic_files import atomic_write_text

    _private_folder(where.parent)
    atomic_write_text(where, new_secret_text(), mode=0o600)
    return where, retired


def worker_env() -> dict[str, str]:
    """``{SECRET_ENV: absolute path}`` for a grading worker this process starts (never for a sandboxed child)."""
    return {SECRET_ENV: str(secret_path())}


def secret_problem() -> str | None:
    """Why this process cannot draw hidden inputs (no usable secret), as a sentence for the staff, or None."""
    try:
        load_secret()
    except GraderSecretError as exc:
        return str(exc)
    return None
