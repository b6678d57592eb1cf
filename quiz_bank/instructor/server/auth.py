"""Sign-in for the quiz server: a roster CSV and one signed token per student (no passwords).

A token is ``itsdangerous.URLSafeTimedSerializer(secret, salt).dumps({"s": id,
"r": role, "t": issued, "e": expires})``: an HMAC-signed, timestamped payload
that the server verifies with the course's secret (a random 32-byte key in a
file only the TA holds). A token cannot be forged without the secret, and a
token names exactly one student, so one student cannot answer as another.
``role`` is ``"student"`` or ``"instructor"`` (the dashboard).

Tokens expire (``e``, default :data:`DEFAULT_TOKEN_DAYS` days after issue;
never more than :data:`MAX_TOKEN_DAYS`, enforced by the signature's own
timestamp too) and are revocable: ``ppo-course quiz revoke ID`` records a
time in the server's database before which every token of ``ID`` is refused
(``QuizDB.revoke``); a token issued afterwards works.

The roster CSV needs a ``student_id`` column; ``name``, ``section``,
``sis_user_id``, ``sis_login_id``, ``canvas_id`` and ``email`` are optional and
feed the LMS exports (``quiz_bank.instructor.server.gradebook``).
"""

from __future__ import annotations

import functools
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from itsdangerous import BadSignature, URLSafeTimedSerializer

from lms.roster import MAX_ID_LENGTH  # the one roster's limit (lms.roster)

SALT = "ppo-course/quiz-server/v2"
DEFAULT_TOKEN_DAYS = 120.0
MAX_TOKEN_DAYS = 366.0
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
    """Issues and verifies expiring tokens with one secret.

    Args:
        secret: the course's signing secret. revoked_before: ``fn(student_id) -> float | None``,
            the time before which that id's tokens are revoked (the server's database).

    Raises:
        AuthError: from :meth:`issue` for an empty or overlong id, an unknown role or a bad lifetime.

    A token whose signature checked out is remembered (its payload, for the last ``CACHE_SIZE`` tokens),
    so a session's later requests skip the HMAC and the JSON; expiry and revocation are checked on every
    request all the same.
    """

    CACHE_SIZE = 4096

    def __init__(self, secret: bytes, revoked_before=None) -> None:
        self._serializer = URLSafeTimedSerializer(secret, salt=SALT)
        self._revoked_before = revoked_before
        self._payload = functools.lru_cache(maxsize=self.CACHE_SIZE)(self._signed_payload)

    def issue(self, student_id: str, role: str = "student", *, valid_days: float = DEFAULT_TOKEN_DAYS,
              now: float | None = None) -> str:
        """A token for ``student_id`` with ``role``, valid ``valid_days`` days from ``now``."""
        if role not in ROLES:
            raise AuthError(f"unknown role {role!r}; expected one of {ROLES}")
        if not student_id or len(student_id) > MAX_ID_LENGTH:
            raise AuthError(f"a student id must have 1–{MAX_ID_LENGTH} characters")
        if not 0 < valid_days <= MAX_TOKEN_DAYS:
            raise AuthError(f"a token's lifetime must be in (0, {MAX_TOKEN_DAYS:g}] days")
        now = time.time() if now is None else now
        return self._serializer.dumps({"s": student_id, "r": role, "t": now, "e": now + valid_days * 86400})

    def verify(self, token: str, now: float | None = None) -> Identity:
        """The identity a token names.

        Raises:
            AuthError: if the token is malformed, was not signed with this secret, was altered,
                has expired or was revoked.
        """
        if not token or len(token) > 1000:
            raise AuthError("this sign-in token is not valid (empty or far too long)")
        now = time.time() if now is None else now
        data, signed_at = self._payload(token.strip())
        if now >= data["e"] or now > signed_at + MAX_TOKEN_DAYS * 86400:
            raise AuthError("this sign-in token has expired; ask your TA for a new one")
        cutoff = self._revoked_before(data["s"]) if self._revoked_before is not None else None
        if cutoff is not None and data["t"] <= cutoff:
            raise AuthError("this sign-in token was revoked; ask your TA for a new one")
        return Identity(data["s"], data["r"])

    def _signed_payload(self, token: str) -> tuple[dict, float]:
        """(the payload, the signing time in Unix seconds) of a token whose signature is this secret's."""
        try:
            data, signed = self._serializer.loads(token, return_timestamp=True)
        except BadSignature:
            raise AuthError("this sign-in token is not valid: it was altered or issued for another course "
                            "(or before tokens expired: ask your TA for a new one)") from None
        if (not isinstance(data, dict) or not isinstance(data.get("s"), str) or data.get("r") not in ROLES
                or not isinstance(data.get("t"), (int, float)) or not isinstance(data.get("e"), (int, float))):
            raise AuthError("this sign-in token is not valid")
        return data, signed.timestamp()


def read_roster(path: Path | str) -> list[dict[str, str]]:
    """Rows of a roster CSV, read by the course's one roster reader (``lms.roster.read_roster``).

    Returns:
        one dict per student holding exactly ``ROSTER_COLUMNS`` (``""`` for an absent field).

    Raises:
        AuthError: if the file is unreadable, lacks ``student_id``, has an
            empty, overlong or repeated id (the message gives the line).
    """
    from lms.roster import RosterError
    from lms.roster import read_roster as read_course_roster

    try:
        return read_course_roster(path).rows(ROSTER_COLUMNS)
    except RosterError as exc:
        raise AuthError(str(exc)) from None
