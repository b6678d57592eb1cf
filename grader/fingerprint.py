"""The grader's fingerprint: which grader version graded a record (resume and regrades key on it).

TA side. Hashes the source of everything that decides a grade (the
``grader`` package minus its TA-side layers, ``ppo_reference`` and
``ppo_course``), package by package, so that a grader change regrades a class
and an edit to the batch, the report or an export does not.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

# TA-side layers that never change a score (batch, records, report and its analytics, regrade report,
# exports, similarity, the runners and the cluster transport): editing them must not regrade a class.
# Paths relative to the grader package; a folder skips everything under it.
_SKIP_FROM_FINGERPRINT = {"batch.py", "student.py", "fingerprint.py", "records/gradebook.py", "records/outcome.py",
                          "batch_run.py", "records/out_folder.py", "records/faults.py", "records/points_change.py",
                          "environment.py", "intake/attempts.py",
                          "intake/class_list.py"}
_SKIP_DIRS_FROM_FINGERPRINT = {"commands", "runners", "reports", "platforms/gradescope"}


def grader_fingerprint() -> str:
    """SHA-256 (hex, 16 chars) of everything that decides a grade: the grader, the reference, the student runtime
    and the course's secret.

    Hashes the source files of the ``grader`` package (minus the batch
    layer, the report and the CLI commands, which never change a score),
    ``ppo_reference``, ``ppo_course`` (the model, the step harness) and ``sandbox_child`` (the sandbox), and the
    digest of the course's grader secret (``grader.course_secret.secret_digest``,
    never the secret: it draws every hidden input). A change to any of them makes
    a rerun regrade every student.

    Raises:
        grader.course_secret.GraderSecretError: no usable course secret.
    """
    from grader.course_secret import secret_digest

    h = hashlib.sha256()
    for package in ("grader", "ppo_reference", "ppo_course", "sandbox_child"):
        root = package_root(package)
        if root is None:
            h.update(f"missing:{package}".encode())
            continue
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if not path.is_file() or path.suffix in {".pyc", ".pyo"}:
                continue
            if any(part in {"commands", "__pycache__"} or part.startswith(".") for part in rel.parts[:-1]):
                continue
            if package == "grader" and _skipped(rel):
                continue
            h.update(f"{package}/{rel.as_posix()}\0".encode())
            h.update(path.read_bytes())
    h.update(f"secret:{secret_digest()}".encode())
    return h.hexdigest()[:16]


def package_root(package: str) -> Path | None:
    """The folder this Python imports ``package`` from (found with ``importlib.util.find_spec``: nothing is
    imported), or None when it has none. The fingerprint hashes what is there."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _skipped(rel: Path) -> bool:
    """True for a file of the grader's TA-side layers (``rel`` relative to the grader package)."""
    folders = ["/".join(rel.parts[:i]) for i in range(1, len(rel.parts))]
    return rel.as_posix() in _SKIP_FROM_FINGERPRINT or any(f in _SKIP_DIRS_FROM_FINGERPRINT for f in folders)
