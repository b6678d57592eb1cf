"""Registrations and the tool's signing keys in the quiz store: every server machine behind it has the same ones.

:class:`StoreRegistry` and :class:`StoreToolKeys` have the interface of the folder's
``Registry`` (``platforms.json``) and ``ToolKeys`` (``tool_keys.json``) and keep their
rows in the tables ``lti_platform`` and ``lti_tool_key``
(``lms.lti.tables``), read on every use, so a registration or a key
rotation made by ``ppo-course lti --db STORE`` on one machine is what every server
process uses at its next launch, without files copied between machines.

Key rotation (1EdTech Security Framework 1.0 §6.3: a key stays in the JWKS while
tokens it signed may still be presented): :meth:`StoreToolKeys.rotate` makes a new
signing key and marks every older key to leave the JWKS :data:`RETIRE_AFTER_S` seconds
later, the longest lifetime of a token the tool signs (:data:`MAX_TOKEN_LIFETIME_S`)
plus the platforms' usual clock leeway. Key generation and signatures are joserfc's.

:func:`import_folder` copies a tool folder's ``platforms.json`` and ``tool_keys.json``
into the store once (then renames them ``*.imported``), as the folder's ``lti.sqlite``
is imported (``lms.lti.tables.import_folder_file``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey
from sqlalchemy import Engine, delete, or_, select, update

from lms.lti import tables
from lms.lti.registry import PlatformRegistration, RegistryError

ALGORITHM = "RS256"
MAX_TOKEN_LIFETIME_S = 300  # a client assertion or deep linking response is valid at most this long
RETIRE_AFTER_S = MAX_TOKEN_LIFETIME_S + 60  # plus the platforms' clock leeway


class StoreRegistry:
    """The platform registrations, rows of ``lti_platform``; the interface of ``registry.Registry``."""

    path = "the quiz store (table lti_platform)"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @property
    def platforms(self) -> tuple[PlatformRegistration, ...]:
        """Every registration, in the order added (or last replaced).

        Raises:
            RegistryError: a stored row that is not a valid registration.
        """
        t = tables.lti_platform
        with self.engine.connect() as conn:
            rows = conn.execute(select(t.c.registration).order_by(t.c.updated, t.c.issuer, t.c.client_id)).scalars()
            try:
                return tuple(PlatformRegistration.model_validate_json(r) for r in rows)
            except ValueError as exc:
                raise RegistryError(f"{self.path}: a stored registration is not valid: {exc}") from None

    def find(self, issuer: str, client_id: str | None = None) -> PlatformRegistration | None:
        """The registration for ``issuer`` (and ``client_id`` when given); None when unknown or ambiguous."""
        matches = [p for p in self.platforms if p.issuer in (issuer, issuer.rstrip("/"))]
        if client_id is not None:
            matches = [p for p in matches if p.client_id == client_id]
        return matches[0] if len(matches) == 1 else None

    def add(self, registration: PlatformRegistration) -> None:
        """Add ``registration``, replacing one with the same issuer and client id."""
        row = {"issuer": registration.issuer, "client_id": registration.client_id,
               "registration": registration.model_dump_json(), "updated": time.time()}
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            tables.upsert(conn, tables.lti_platform, row, ("issuer", "client_id"))

    def remove(self, issuer: str, client_id: str) -> bool:
        """Remove one registration; True when one was removed."""
        t = tables.lti_platform
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            gone = conn.execute(delete(t).where(t.c.issuer == issuer, t.c.client_id == client_id)
                                .returning(t.c.issuer)).first()
        return gone is not None


class StoreToolKeys:
    """The tool's RSA keys, rows of ``lti_tool_key``; the interface of ``tool_keys.ToolKeys``.

    A store with no key gets one 2048-bit key at construction.

    Args:
        engine: the engine holding the tool's tables.
        clock: seconds since the epoch (tests pass a fake one).
    """

    def __init__(self, engine: Engine, clock=time.time, *, create: bool = True) -> None:
        self.engine, self.clock = engine, clock
        if create and not self._rows():
            self._add(RSAKey.generate_key(2048, auto_kid=True), self.clock(), None)

    def adopt(self, keys: list[RSAKey]) -> int:
        """Add ``keys`` (newest first, e.g. a folder's file); returns how many were new.

        Into a store without keys, the first signs and the others retire after ``RETIRE_AFTER_S``;
        into a store with keys, all of them retire then (they may have signed a token still presented).
        """
        now, had = self.clock(), bool(self._rows())
        added = 0
        for age, key in enumerate(keys):  # creation times keep the given order, older than what is stored
            added += self._add(key, now - age - (1 if had else 0), now + RETIRE_AFTER_S if had or age else None)
        return added

    def _rows(self) -> list[tuple[RSAKey, float | None]]:
        """The published keys, newest first, each with when it leaves the JWKS (None: not retiring)."""
        t = tables.lti_tool_key
        with self.engine.connect() as conn:
            rows = conn.execute(select(t.c.jwk, t.c.retire_after)
                                .where(or_(t.c.retire_after.is_(None), t.c.retire_after > self.clock()))
                                .order_by(t.c.created.desc(), t.c.kid)).all()
        return [(RSAKey.import_key(json.loads(jwk)), retire) for jwk, retire in rows]

    def _add(self, key: RSAKey, created: float, retire_after: float | None) -> bool:
        row = {"kid": key.kid, "jwk": json.dumps(key.as_dict(private=True)), "created": created,
               "retire_after": retire_after}
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            return tables.insert_or_keep(conn, tables.lti_tool_key, row)

    @property
    def signing_key(self) -> RSAKey:
        """The newest key that is not retiring: the one that signs."""
        rows = self._rows()
        live = [k for k, retire in rows if retire is None]
        return (live or [k for k, _ in rows])[0]

    @property
    def kids(self) -> list[str]:
        """Key ids in the JWKS, newest first."""
        return [k.kid for k, _ in self._rows()]

    def public_jwks(self) -> dict:
        """The public JWKS: the signing key and the keys still within their retirement delay."""
        keys = []
        for key, _ in self._rows():
            public = key.as_dict(private=False)
            public.update({"alg": ALGORITHM, "use": "sig"})
            keys.append(public)
        return {"keys": keys}

    def rotate(self) -> str:
        """A new signing key; every older key leaves the JWKS ``RETIRE_AFTER_S`` seconds from now. Returns the kid."""
        now = self.clock()
        key = RSAKey.generate_key(2048, auto_kid=True)
        t = tables.lti_tool_key
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            conn.execute(update(t).where(t.c.retire_after.is_(None)).values(retire_after=now + RETIRE_AFTER_S))
        self._add(key, now, None)
        return key.kid

    def retire(self, keep: int = 1) -> list[str]:
        """Drop all but the ``keep`` newest published keys now; returns the retired kids.

        Raises:
            ValueError: if ``keep`` < 1.
        """
        if keep < 1:
            raise ValueError("keep at least the signing key")
        retired = [k.kid for k, _ in self._rows()[keep:]]
        t = tables.lti_tool_key
        with self.engine.connect().execution_options(**tables.WRITE) as conn, conn.begin():
            conn.execute(delete(t).where(t.c.kid.in_(retired)))
        return retired

    def sign(self, claims: dict, *, lifetime_s: int = MAX_TOKEN_LIFETIME_S) -> str:
        """A compact RS256 JWT of ``claims`` with ``iat``/``exp`` and the signing ``kid``.

        Raises:
            ValueError: if ``lifetime_s`` exceeds ``MAX_TOKEN_LIFETIME_S`` (the JWKS would drop its key too early).
        """
        if lifetime_s > MAX_TOKEN_LIFETIME_S:
            raise ValueError(f"a token of the tool lives at most {MAX_TOKEN_LIFETIME_S} s")
        key, now = self.signing_key, int(self.clock())
        body = {"iat": now, "exp": now + lifetime_s, **claims}
        return jwt.encode({"alg": ALGORITHM, "kid": key.kid, "typ": "JWT"}, body, key)

    def key_set(self) -> KeySet:
        """Every published key (private) as a joserfc KeySet, for tests that verify what the tool signed."""
        return KeySet([k for k, _ in self._rows()])


def import_folder(folder: Path | str, engine: Engine) -> dict[str, int]:
    """Copy ``folder``'s ``platforms.json`` and ``tool_keys.json`` into the store, then rename them ``*.imported``.

    A registration from the file replaces the stored one with the same issuer and client id (the
    file was written after the last import). The file's keys join the store's; when the store
    already had keys, the file's retire after ``RETIRE_AFTER_S`` (they may have signed a token).

    Returns:
        how many registrations and keys were read (``{"platforms": n, "keys": m}``; 0 for a missing file).

    Raises:
        RegistryError / ValueError: a file that is not a valid registration list or key set (nothing renamed).
    """
    from lms.lti.registry import Registry
    from lms.lti.tool_keys import ToolKeys

    folder, counts = Path(folder), {"platforms": 0, "keys": 0}
    platforms, keys = folder / "platforms.json", folder / "tool_keys.json"
    if platforms.exists():
        stored = StoreRegistry(engine)
        for registration in Registry(platforms).platforms:
            stored.add(registration)
            counts["platforms"] += 1
        _set_aside(platforms)
    if keys.exists():
        file_keys = list(ToolKeys(keys).key_set().keys)
        StoreToolKeys(engine, create=False).adopt(file_keys)
        counts["keys"] = len(file_keys)
        _set_aside(keys)
    return counts


def _set_aside(path: Path) -> None:
    try:
        path.rename(path.with_name(path.name + ".imported"))
    except FileNotFoundError:
        pass  # another process of the same server imported it at the same moment
