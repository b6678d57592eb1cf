"""``ppo-course quiz backup FILE`` and ``quiz restore FILE``: the quiz store to and from one JSON file.

One dialect-neutral format for SQLite and PostgreSQL (a backup of either
restores into either): a JSON object ``{"format": FORMAT, "revision": …,
"tables": {name: {"columns": [...], "rows": [[...], ...]}}, "counts": {...}}``
with every row of every table of ``quiz_bank.instructor.server.schema`` and of the LTI tool's tables
(``lms.lti.tables``: the passback record, the links to the LMS's line items, the used
nonces, the courses served, the registrations and the tool's private signing keys), so that a restored
store neither posts a score twice nor accepts a replayed launch. The file holds private keys and
students' answers: it is written mode 0600 (the owner only).

- **Consistent while the server runs.** Every table is read in one read
  transaction: PostgreSQL's ``REPEATABLE READ`` (one snapshot for all
  statements), SQLite's WAL read transaction (one snapshot from its first
  read). An answer is in the backup exactly when its transaction committed
  before the snapshot, and the answer's attempt and completion come with it.
- **Atomic.** The file is written by the project's atomic writer
  (``ppo_course.atomic_files.atomic_write_text``: temporary file, fsync, rename): a
  crash while backing up leaves the previous backup whole.
- **Restore** goes into an empty store only (a fresh SQLite file or an empty
  PostgreSQL database; ``--force`` replaces what is there), migrated to the
  newest schema first, all rows in one transaction, and checks the counts.

Engine-native tools (``pg_dump``, SQLite's ``.backup``) remain the choice for
whole-server disaster recovery; this format is what moves a course between the
two engines and what the tests restore after a ``kill -9``.
"""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import delete, func, select, text

from quiz_bank.instructor.server import database
from quiz_bank.instructor.server.db import QuizDB
from lms.lti import tables as lti_tables
from quiz_bank.instructor.server.schema import TABLES as QUIZ_TABLES
from quiz_bank.instructor.server.schema import answers, stop_attempts

#: Every table a backup holds, in insertion order (the quiz's, then the LTI tool's; both made by the migrations).
TABLES = (*QUIZ_TABLES, *lti_tables.TABLES)

FORMAT = "ppo-course quiz store backup, version 1"
_CHUNK = 5000


class BackupError(Exception):
    """A backup file that cannot be restored, or a store that is not empty; the message says which."""


def snapshot(db: QuizDB) -> dict:
    """Every row of every table, read in one consistent snapshot (see the module docstring)."""
    with db.engine.connect() as conn:
        if db.dialect == "postgresql":
            conn = conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
        with conn.begin():
            revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
            tables = {}
            for table in TABLES:
                rows = conn.execute(select(table).order_by(*table.primary_key.columns)).all()
                tables[table.name] = {"columns": [c.name for c in table.columns], "rows": [list(r) for r in rows]}
    return {"format": FORMAT, "revision": revision, "tables": tables,
            "counts": {name: len(t["rows"]) for name, t in tables.items()}}


def backup(db: QuizDB, path: Path | str) -> dict[str, int]:
    """Write the store to ``path`` atomically; returns the row count of each table."""
    from ppo_course.atomic_files import atomic_write_text

    data = snapshot(db)
    atomic_write_text(Path(path), json.dumps(data, separators=(",", ":")) + "\n", mode=0o600)
    return data["counts"]


def _read(path: Path | str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BackupError(f"{path}: not a readable quiz backup: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BackupError(f"{path}: not a quiz store backup (expected format {FORMAT!r})")
    if data.get("revision") != database.head_revision():
        raise BackupError(f"{path}: a backup of schema revision {data.get('revision')!r}; this code restores "
                          f"{database.head_revision()!r} (restore it with the version that wrote it, then upgrade)")
    for table in TABLES:
        got = data["tables"].get(table.name, {})
        if got.get("columns") != [c.name for c in table.columns] or len(got.get("rows", ())) != data["counts"][table.name]:
            raise BackupError(f"{path}: table {table.name} does not match the schema or its count (a damaged file?)")
    return data


def restore(db: QuizDB, path: Path | str, *, force: bool = False) -> dict[str, int]:
    """Load a backup into ``db`` (migrated to the newest schema) in one transaction; returns the row counts.

    Raises:
        BackupError: the file is not a backup of this schema, or the store already holds attempts
            (and ``force`` is false).
    """
    data = _read(path)
    database.migrate(db.engine)
    with db.transaction() as conn:
        if not force and conn.execute(select(func.count()).select_from(stop_attempts)).scalar():
            raise BackupError("the target store already holds attempts: restore into a fresh --db (or use --force)")
        for table in reversed(TABLES):
            conn.execute(delete(table))
        for table in TABLES:
            rows = [dict(zip(data["tables"][table.name]["columns"], r)) for r in data["tables"][table.name]["rows"]]
            for i in range(0, len(rows), _CHUNK):
                conn.execute(table.insert(), rows[i:i + _CHUNK])
        stored = conn.execute(select(func.count()).select_from(answers)).scalar()
        if stored != data["counts"]["answers"]:  # rolls the whole restore back
            raise BackupError(f"restored {stored} answers, the backup holds {data['counts']['answers']}")
    return data["counts"]
