"""Basic auth's pure parts: the Authorization header read, the users' stored secrets (`Verifier`),
the web-config file's bcrypt hashes checked at load, and `Verdicts`, the credentials already
checked. The bounded checking itself runs in the server (logins.py).

bcrypt reads at most 72 bytes of a password. Go's bcrypt.CompareHashAndPassword, which the
exporter toolkit calls, checks a longer password on its first 72 bytes (only hashing refuses
more); Python's bcrypt 5 raises ValueError instead. So a password is cut to 72 bytes here,
as Go reads it: a user whose long password was hashed by a tool that cut it (Go before 2023,
older releases of Python's bcrypt) logs in, as with the toolkit.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
import threading
from collections import OrderedDict
from typing import Any, Callable

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError
from kafka_jmx_sidecar.exporter.output.self_metrics import AuthFailure

BCRYPT_MAX_BYTES = 72
# $2a$/$2b$/$2y$, a two-digit cost, 22 characters of salt and 31 of hash in bcrypt's base64
_BCRYPT = re.compile(r"\$(2[aby])\$(\d\d)\$([./A-Za-z0-9]{53})")
_BCRYPT_FIX = ("generate one with `htpasswd -nBC 12 '' | tr -d ':\\n'` or python -c "
               "\"import bcrypt; print(bcrypt.hashpw(b'secret', bcrypt.gensalt()).decode())\"")


class Verifier:
    """Checks a password against one user's stored secret. `identity` names that secret: the
    verdicts remembered for it (Verdicts) hold while it stays, across reloads of the file."""

    __slots__ = ("identity", "check")

    def __init__(self, identity: bytes, check: Callable[[str], bool]):
        self.identity, self.check = identity, check

    def __call__(self, password: str) -> bool:
        return self.check(password)


def bcrypt_verifier(hashed: bytes) -> Verifier:
    def verify(password: str) -> bool:
        import bcrypt

        return bcrypt.checkpw(password.encode()[:BCRYPT_MAX_BYTES], hashed)

    return Verifier(b"bcrypt:" + hashed, verify)


def bcrypt_hash_problem(value: Any) -> str | None:
    """Why `value` is no bcrypt hash Python's bcrypt can check (None: it is one). The toolkit
    takes any text of 59 characters or more with a valid cost; a truncated or mistyped hash
    there fails every login without a word, so here it is refused at load."""
    if not isinstance(value, str) or not value.startswith("$2"):
        return "is not a bcrypt hash"
    prefix = "$" + value[1:].split("$", 1)[0] + "$"
    if prefix not in ("$2a$", "$2b$", "$2y$"):
        return f"has the bcrypt prefix {prefix!r}; only $2a$, $2b$ and $2y$ are checked"
    cost = value[4:7]
    if not (cost[:2].isdigit() and 4 <= int(cost[:2]) <= 31 and cost[2:] == "$"):
        return f"has the cost {cost!r}; a bcrypt cost is two digits from 04 to 31, then $"
    if len(value) != 60:
        return f"has {len(value)} characters where a bcrypt hash has 60 (truncated, or more appended)"
    if _BCRYPT.fullmatch(value) is None:
        return "has characters that are not bcrypt's base64 ([./A-Za-z0-9])"
    return None


def read_users(users: Any, err: Callable[..., ConfigError]) -> dict[str, Verifier]:
    """The web-config file's `basic_auth_users`: user name -> bcrypt hash, each checked."""
    users = users or {}
    if not isinstance(users, dict):
        raise err(("basic_auth_users",), "must map user names to bcrypt hashes", "write `name: $2b$...`")
    out = {}
    for user, hashed in users.items():
        problem = bcrypt_hash_problem(hashed)
        if problem is not None:
            raise err(("basic_auth_users", user), problem, _BCRYPT_FIX)
        out[str(user)] = bcrypt_verifier(hashed.encode())
    return out


def parse_authorization(header: str) -> tuple[str, str] | str:
    """(user, password) of a Basic Authorization header, else why not (an AuthFailure reason).
    The scheme is case-insensitive (RFC 7235, as Go's Request.BasicAuth); base64 padding is
    optional, as for Java's decoder (jmx_exporter); anything else is strict."""
    scheme, _, token = header.partition(" ")
    if not header or scheme.lower() != "basic":
        return AuthFailure.MISSING
    token = token.strip(" ")
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return AuthFailure.MALFORMED
    if not token or ":" not in decoded:
        return AuthFailure.MALFORMED
    user, _, password = decoded.partition(":")
    return user, password


def is_basic(header: str) -> bool:
    return header.partition(" ")[0].lower() == "basic"


class Verdicts:
    """Credentials already checked, by a keyed digest of user, stored secret and password (never
    in clear). The right ones are kept apart, and only another right login can push one out: a
    flood of wrong passwords cannot make a scraper's login slow again. The wrong ones are kept
    too (bounded), so a misconfigured scraper repeating its wrong password costs no hashing."""

    def __init__(self, right: int = 64, wrong: int = 1024):
        self._sizes = {True: right, False: wrong}
        self._kept: dict[bool, OrderedDict] = {True: OrderedDict(), False: OrderedDict()}
        self._lock = threading.Lock()
        self._secret = os.urandom(32)

    def key(self, user: str, identity: bytes, password: str) -> bytes:
        mac = hmac.new(self._secret, digestmod=hashlib.sha256)
        for part in (user.encode(), identity, password.encode()):
            mac.update(len(part).to_bytes(8, "big") + part)
        return mac.digest()

    def get(self, key: bytes) -> bool | None:
        with self._lock:
            for verdict, kept in self._kept.items():
                if key in kept:
                    kept.move_to_end(key)
                    return verdict
        return None

    def put(self, key: bytes, verdict: bool) -> None:
        with self._lock:
            kept = self._kept[verdict]
            kept[key] = True
            kept.move_to_end(key)
            while len(kept) > self._sizes[verdict]:
                kept.popitem(last=False)
