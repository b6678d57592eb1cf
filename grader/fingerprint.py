"""The grader's fingerprint: which grader version graded a record (resume and regrades key on it).

TA side. Hashes the source of everything that decides a grade (the
``grader`` package minus its TA-side layers, ``ppo_reference`` and
``ppo_course``), package by package, so that a grader change regrades a class
and an edit to the batch, the report or an export does not.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

# TA-side layers that never change a score (batch, report and its analytics, regrade report,
# exports, similarity, the cluster transport): editing them must not regrade a class.
_SKIP_FROM_FINGERPRINT = {"batch.py", "records.py", "outcome.py", "workers.py", "worker_process.py", "warm.py",
                          "fingerprint.py", "report.py", "analytics.py", "regrade.py", "export.py", "similarity.py",
                          "cluster.py", "cluster_worker.py", "roster.py", "attempts.py", "lms.py",
                          "code_loading.py", "class_list.py", "out_folder.py", "progress.py"}
_SKIP_DIRS_FROM_FINGERPRINT = {"commands", "gradescope", "__pycache__"}


def grader_fingerprint() -> str:
    """SHA-256 (hex, 16 chars) of everything that decides a grade: the grader, the reference and the student runtime.

    Hashes the source files of the ``grader`` package (minus the batch
    layer, the report and the CLI commands, which never change a score),
    ``ppo_reference`` and ``ppo_course`` (the sandbox, the model). A change to
    any of them makes a rerun regrade every student.
    """
    import importlib

    h = hashlib.sha256()
    for package in ("grader", "ppo_reference", "ppo_course"):
        try:
            mod = importlib.import_module(package)
        except ImportError:
            h.update(f"missing:{package}".encode())
            continue
        root = Path(mod.__file__).parent
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if not path.is_file() or path.suffix in {".pyc", ".pyo"}:
                continue
            if any(part in _SKIP_DIRS_FROM_FINGERPRINT or part.startswith(".") for part in rel.parts[:-1]):
                continue
            if package == "grader" and len(rel.parts) == 1 and rel.name in _SKIP_FROM_FINGERPRINT:
                continue
            h.update(f"{package}/{rel.as_posix()}\0".encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]
