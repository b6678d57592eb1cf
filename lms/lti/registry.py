"""Platform registrations: which LMS may launch the tool, and where its endpoints are.

One JSON file (``lti/platforms.json`` beside the quiz store by default) holds a list of
:class:`PlatformRegistration`; ``ppo-course lti register`` adds or replaces one, and the
launch refuses any issuer/client pair that is not in it (LTI Core 1.3 §5.1.2: the tool
keeps, per platform, the issuer, the client id, the deployment ids, the OIDC
authorization endpoint, the token endpoint and the JWKS URL).
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from urllib.parse import urlsplit

import pydantic

from ppo_course.atomic_files import atomic_write_text


def is_loopback_url(url: str) -> bool:
    """True when ``url``'s host is this machine: ``localhost``, ``*.localhost``, 127.0.0.0/8 or ::1.

    These are the hosts a browser treats as potentially trustworthy over plain http
    (W3C Secure Contexts §3.1); the host is parsed, so ``http://localhost.evil.example``
    or ``http://127.0.0.1.evil.example`` is not one.
    """
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class RegistryError(Exception):
    """A registration file that cannot be read, or a registration that is not valid; the message says which."""


class PlatformRegistration(pydantic.BaseModel):
    """One platform (LMS) the tool trusts.

    Attributes:
        name: a label for people ("Canvas, Fall term").
        issuer: the platform's ``iss`` (an https URL; http only for a loopback test platform).
        client_id: the client id the platform gave this tool (the id_token's ``aud``).
        deployment_ids: the deployment ids the platform may send (``.../claim/deployment_id``).
        auth_login_url: the platform's OIDC authorization endpoint (the tool redirects the browser there).
        auth_token_url: the platform's OAuth 2 token endpoint (client-credentials grant, for AGS/NRPS).
        jwks_url: where the platform publishes the public keys that sign its id_tokens.
        token_audience: the ``aud`` of the tool's client assertion; the token URL when empty.
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    issuer: str
    client_id: str = pydantic.Field(min_length=1)
    deployment_ids: tuple[str, ...] = pydantic.Field(min_length=1)
    auth_login_url: str
    auth_token_url: str
    jwks_url: str
    token_audience: str = ""

    @pydantic.field_validator("issuer", "auth_login_url", "auth_token_url", "jwks_url")
    @classmethod
    def _https(cls, value: str) -> str:
        if value.startswith("https://") or (value.startswith("http://") and is_loopback_url(value)):
            return value.rstrip("/") if value.count("/") <= 3 else value
        raise ValueError(f"{value!r} is not an https URL (plain http is accepted only on loopback, for a test platform)")

    @property
    def assertion_audience(self) -> str:
        """The ``aud`` of the client assertion sent to the token endpoint (1EdTech Security Framework §4.1.1)."""
        return self.token_audience or self.auth_token_url


class Registry:
    """The registrations in one JSON file, read at construction and written atomically on change.

    Raises:
        RegistryError: if the file exists but is not a valid registration list.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._platforms: list[PlatformRegistration] = []
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self._platforms = [PlatformRegistration.model_validate(p) for p in data.get("platforms", [])]
            except (ValueError, AttributeError, pydantic.ValidationError) as exc:
                raise RegistryError(f"{self.path}: not a valid platform registration file: {exc}") from None

    @property
    def platforms(self) -> tuple[PlatformRegistration, ...]:
        """Every registration, in the order added."""
        return tuple(self._platforms)

    def find(self, issuer: str, client_id: str | None = None) -> PlatformRegistration | None:
        """The registration for ``issuer`` (and ``client_id`` when given); None when unknown or ambiguous."""
        matches = [p for p in self._platforms if p.issuer == issuer.rstrip("/") or p.issuer == issuer]
        if client_id is not None:
            matches = [p for p in matches if p.client_id == client_id]
        return matches[0] if len(matches) == 1 else None

    def add(self, registration: PlatformRegistration) -> None:
        """Add ``registration``, replacing one with the same issuer and client id; writes the file."""
        kept = [p for p in self._platforms
                if (p.issuer, p.client_id) != (registration.issuer, registration.client_id)]
        self._platforms = kept + [registration]
        self._write()

    def remove(self, issuer: str, client_id: str) -> bool:
        """Remove one registration; True when one was removed."""
        before = len(self._platforms)
        self._platforms = [p for p in self._platforms if (p.issuer, p.client_id) != (issuer, client_id)]
        if len(self._platforms) != before:
            self._write()
            return True
        return False

    def _write(self) -> None:
        text = json.dumps({"platforms": [p.model_dump(mode="json") for p in self._platforms]}, indent=2)
        atomic_write_text(self.path, text + "\n", mode=0o600)
