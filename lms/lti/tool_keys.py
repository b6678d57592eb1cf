"""The tool's own RSA key pair: it signs client assertions and deep-linking responses.

Platforms fetch the public half from the tool's JWKS endpoint (``GET /lti/jwks``) or
are given it at registration. The private keys live in one JSON Web Key Set file,
mode 0600, newest first: the newest key signs, older keys stay published until
``retire`` drops them, so a rotation never breaks a platform that cached the old
JWKS (1EdTech Security Framework 1.0 §6: key rotation through the JWKS).
Key generation, serialisation and signatures are joserfc's (over ``cryptography``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from ppo_course.atomic_files import atomic_write_text

ALGORITHM = "RS256"


class ToolKeys:
    """The tool's key set, loaded from (or created at) ``path``.

    Args:
        path: the private JWKS file; created with one new 2048-bit RSA key when missing.

    Raises:
        ValueError: if the file exists but holds no RSA private key.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if self.path.exists():
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self._keys = [RSAKey.import_key(k) for k in data.get("keys", [])]
            if not self._keys or not all(k.is_private for k in self._keys):
                raise ValueError(f"{self.path}: expected a JWKS of RSA private keys")
        else:
            self._keys = []
            self.rotate()

    @property
    def signing_key(self) -> RSAKey:
        """The newest key: the one that signs."""
        return self._keys[0]

    @property
    def kids(self) -> list[str]:
        """Key ids, newest first."""
        return [k.kid for k in self._keys]

    def public_jwks(self) -> dict:
        """The public JWKS the tool publishes: ``{"keys": [...]}`` with ``kid``, ``alg`` and ``use`` set."""
        keys = []
        for key in self._keys:
            public = key.as_dict(private=False)
            public.update({"alg": ALGORITHM, "use": "sig"})
            keys.append(public)
        return {"keys": keys}

    def rotate(self) -> str:
        """Generate a new signing key (kept first); older keys stay published. Returns the new kid."""
        key = RSAKey.generate_key(2048, auto_kid=True)
        self._keys.insert(0, key)
        self._write()
        return key.kid

    def retire(self, keep: int = 1) -> list[str]:
        """Drop all but the ``keep`` newest keys from the set (and the JWKS); returns the retired kids."""
        if keep < 1:
            raise ValueError("keep at least the signing key")
        retired = [k.kid for k in self._keys[keep:]]
        self._keys = self._keys[:keep]
        self._write()
        return retired

    def sign(self, claims: dict, *, lifetime_s: int = 300) -> str:
        """A compact RS256 JWT of ``claims`` with ``iat``/``exp`` (now, now + lifetime) and the signing ``kid``."""
        now = int(time.time())
        body = {"iat": now, "exp": now + lifetime_s, **claims}
        return jwt.encode({"alg": ALGORITHM, "kid": self.signing_key.kid, "typ": "JWT"}, body, self.signing_key)

    def key_set(self) -> KeySet:
        """Every key (private) as a joserfc KeySet, for tests that verify what the tool signed."""
        return KeySet(list(self._keys))

    def _write(self) -> None:
        text = json.dumps({"keys": [k.as_dict(private=True) for k in self._keys]})
        atomic_write_text(self.path, text, mode=0o600)  # private keys: the owner only
