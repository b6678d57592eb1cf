"""Sign-in for the quiz server: a roster CSV and one signed token per student (no passwords).

A token is ``itsdangerous.URLSafeSerializer(secret, salt).dumps({"s": id, "r": role})``:
an HMAC-SHA1-signed payload that the server verifies with the course's secret
(a random 32-byte key in a file only the TA holds). Nothing is stored per
student but the roster; a token cannot be forged without the secret, and a
token names exactly one student, so one student cannot answer as another.
``role`` is ``"student"`` or ``"instructor"`` (the dashboard).

The roster CSV needs a ``student_id`` column; ``name``, ``section``,
``sis_user_id``, ``sis_login_id``, ``canvas_id`` and ``email`` are optional and
feed the LMS exports (``quiz_bank.server.gradebook``).
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from itsdangerous import BadSignature, URLSafeSerializer

from grader.roster import MAX_ID_LENGTH  # the one roster's limit (grader.roster)

SALT = "ppo-course/quiz-server/v1"
ROLES = ("student", "instructor")
ROSTER_COLUMNS = ("student_id", "name", "section", "sis_user_id", "sis_login_id", "canvas_id", "email")


class AuthError(Exception):
    """A token that does not verify, or a roster/secret file that cannot be used; the message says which."""


@dataclass(frozen=True)
class Identity:
    """Who a verified token names."""

    student_id: str
    role: str

    @property
    def is_instructor(self) -> bool:
        """True for an instructor token (dashboard access)."""
        return self.role == "instructor"


def load_secret(path: Path | str, *, create: bool = False) -> bytes:
    """The signing secret stored in ``path`` (hex text); with ``create`` a new one is written (mode 0600).

    Raises:
        AuthError: if the file is missing (and ``create`` is false), unreadable or too short.
    """
    path = Path(path)
    if not path.exists():
        if not create:
            raise AuthError(f"{path}: no secret file; run `ppo-course quiz tokens` first (it creates one)")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32) + "\n")
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise AuthError(f"{path}: cannot read the secret: {exc}") from None
    if len(text) < 32:
        raise AuthError(f"{path}: the secret is too short (at least 32 characters)")
    return text.encode("ascii")


class TokenSigner:
    """Issues and verifies tokens with one secret.

    Raises:
        AuthError: from :meth:`issue` for an empty or overlong id or an unknown role.
    """

    def __init__(self, secret: bytes) -> None:
        self._serializer = URLSafeSerializer(secret, salt=SALT)

    def issue(self, student_id: str, role: str = "student") -> str:
        """A token for ``student_id`` with ``role``."""
        if role not in ROLES:
            raise AuthError(f"unknown role {role!r}; expected one of {ROLES}")
        if not student_id or len(student_id) > MAX_ID_LENGTH:
            raise AuthError(f"a student id must have 1–{MAX_ID_LENGTH} characters")
        return self._serializer.dumps({"s": student_id, "r": role})

    def verify(self, token: str) -> Identity:
        """The identity a token names.

        Raises:
            AuthError: if the token is malformed, was not signed with this secret, or was altered.
        """
        if not token or len(token) > 1000:
            raise AuthError("this sign-in token is not valid (empty or far too long)")
        try:
            data = self._serializer.loads(token.strip())
        except BadSignature:
            raise AuthError("this sign-in token is not valid: it was altered or issued for another course") from None
        if not isinstance(data, dict) or not isinstance(data.get("s"), str) or data.get("r") not in ROLES:
            raise AuthError("this sign-in token is not valid")
        return Identity(data["s"], data["r"])


def read_roster(path: Path | str) -> list[dict[str, str]]:
    """Rows of a roster CSV, read by the course's one roster reader (``grader.roster.read_roster``).

    Returns:
        one dict per student holding exactly ``ROSTER_COLUMNS`` (``""`` for an absent field).

    Raises:
        AuthError: if the file is unreadable, lacks ``student_id``, has an
            empty, overlong or repeated id (the message gives the line).
    """
    from grader.roster import RosterError
    from grader.roster import read_roster as read_course_roster

    try:
        return read_course_roster(path).rows(ROSTER_COLUMNS)
    except RosterError as exc:
        raise AuthError(str(exc)) from None
