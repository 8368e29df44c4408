"""The console's sign-in sessions, bounded per key, per tenant and in all, and sign-ins
slowed, so that no key can sign anyone else out.

A session is opaque: the cookie holds a random token, and this process's memory
keeps what it stands for (the key's id and tenant, a CSRF token, an expiry
SESSION_SECONDS after sign-in). Each `remem serve` process has its own store; a
restart signs everyone out. The store holds at most:

    MAX_SESSIONS_PER_KEY     10  sessions of one key
    MAX_SESSIONS_PER_TENANT 500  of one tenant's keys
    MAX_SESSIONS         10,000  in all

Expired sessions are dropped first. A sign-in that would pass a cap replaces the
key's own oldest session when it has one, and is refused otherwise
(SignInRefused, 429): a live session ends only by signing out, by its key's
revocation, or by a newer sign-in of the same key. That last rule costs no one
else anything (whoever holds a key may already do all that its sessions may),
and a person whose old cookies are gone (another browser, a private window) is
not locked out until they expire.

Sign-ins are slowed by token buckets (`Buckets`), each answering at once: a key
may sign in SIGN_IN_BURST times in a row, then once every SIGN_IN_EVERY seconds;
a client address may fail (an unknown or revoked key) as often, and past that
is refused before its key is looked up. A refusal says when to try again (429
with Retry-After); nothing waits on the server.
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

SESSION_SECONDS = 8 * 3600
MAX_SESSIONS = 10_000
MAX_SESSIONS_PER_TENANT = 500
MAX_SESSIONS_PER_KEY = 10
MAX_NOTES = 20  # lines kept for a session's next page; older ones are dropped
SIGN_IN_BURST = 10
SIGN_IN_EVERY = 6.0  # seconds per sign-in once the burst is spent: 10 a minute
MAX_BUCKETS = 10_000  # names a bucket set tracks; past it the least recently used goes


class SignInRefused(Exception):
    """A sign-in refused for now (429): a cap is reached or a bucket is empty."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Session:
    """What a session cookie stands for; `expires` is on the store's clock."""

    key_id: str
    tenant: str
    csrf: str
    expires: float


class Buckets:
    """Token buckets by name (a key's id, a client's address): each holds up to `burst`
    tokens and gains one every `every` seconds. At most `limit` names are tracked;
    past that, the least recently used is forgotten (it starts full again, as it
    likely is already: a bucket refills in `burst` * `every` seconds)."""

    def __init__(
        self,
        burst: int = SIGN_IN_BURST,
        every: float = SIGN_IN_EVERY,
        *,
        limit: int = MAX_BUCKETS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.burst, self.every, self.limit, self.clock = burst, every, limit, clock
        self.level: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tokens, at
        self.lock = threading.Lock()

    def wait(self, name: str) -> float:
        """Seconds until `name` has a token (0: it has one now); nothing is taken."""
        with self.lock:
            return self._wait(self._tokens(name))

    def take(self, name: str) -> float:
        """Take a token for `name`: 0 when taken, else the seconds until one is there."""
        with self.lock:
            tokens = self._tokens(name)
            if tokens >= 1:
                self._keep(name, tokens - 1)
                return 0.0
            return self._wait(tokens)

    def __len__(self) -> int:
        return len(self.level)

    def _tokens(self, name: str) -> float:
        tokens, at = self.level.get(name, (float(self.burst), 0.0))
        return min(float(self.burst), tokens + (self.clock() - at) / self.every)

    def _wait(self, tokens: float) -> float:
        return 0.0 if tokens >= 1 else (1 - tokens) * self.every

    def _keep(self, name: str, tokens: float) -> None:
        self.level.pop(name, None)
        while len(self.level) >= self.limit:
            self.level.popitem(last=False)  # the least recently used: the likeliest full
        self.level[name] = (tokens, self.clock())


class Sessions:
    """The console's sessions in this process's memory, within their caps (see the module)."""

    def __init__(
        self,
        *,
        per_key: int = MAX_SESSIONS_PER_KEY,
        per_tenant: int = MAX_SESSIONS_PER_TENANT,
        total: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_key, self.per_tenant, self.total, self.clock = per_key, per_tenant, total, clock
        # oldest first: every session lives SESSION_SECONDS, so the expired lead
        self.by_token: OrderedDict[str, Session] = OrderedDict()
        self.by_key: dict[str, list[str]] = {}  # a key's tokens, oldest first
        self.by_tenant: dict[str, int] = {}
        self.notes: dict[str, list[str]] = {}  # shown once, on the session's next page
        self.sign_ins = Buckets(clock=clock)  # by key id
        self.failures = Buckets(clock=clock)  # by client address
        self.lock = threading.Lock()

    def open(self, key_id: str, tenant: str) -> str:
        """A new session for the key; its token (the cookie's value). SignInRefused when
        the tenant or the store is at its cap (a key at its own cap replaces its oldest)."""
        with self.lock:
            self._drop_expired()
            mine = self.by_key.get(key_id, [])
            tenant_full = self.by_tenant.get(tenant, 0) >= self.per_tenant
            store_full = len(self.by_token) >= self.total
            if len(mine) >= self.per_key or (mine and (tenant_full or store_full)):
                self._remove(mine[0])
            elif tenant_full:
                raise SignInRefused(
                    f"this tenant has {self.per_tenant} console sessions open, the most it "
                    "may; sign out of one, or wait until one expires, then sign in again"
                )
            elif store_full:
                raise SignInRefused(
                    f"the console has {self.total} sessions open, the most it keeps; "
                    "try again when one has ended"
                )
            token = secrets.token_urlsafe(32)
            expires = self.clock() + SESSION_SECONDS
            self.by_token[token] = Session(key_id, tenant, secrets.token_urlsafe(32), expires)
            self.by_key.setdefault(key_id, []).append(token)
            self.by_tenant[tenant] = self.by_tenant.get(tenant, 0) + 1
        return token

    def get(self, token: str | None) -> Session | None:
        """The live session of a token, or None."""
        if not token:
            return None
        with self.lock:
            found = self.by_token.get(token)
            if found is not None and found.expires <= self.clock():
                self._remove(token)
                found = None
        return found

    def close(self, token: str | None) -> None:
        """End a session (signing out)."""
        with self.lock:
            self._remove(token or "")

    def note(self, token: str, line: str) -> None:
        """A line to show on the session's next page (the last MAX_NOTES are kept)."""
        with self.lock:
            if token in self.by_token:
                lines = self.notes.setdefault(token, [])
                lines.append(line)
                del lines[:-MAX_NOTES]

    def take_notes(self, token: str) -> list[str]:
        """The lines waiting for the session's next page (then gone)."""
        with self.lock:
            return self.notes.pop(token, [])

    def admit(self, client: str) -> None:
        """SignInRefused when `client` has failed too often to be heard now."""
        wait = self.failures.wait(client)
        if wait > 0:
            raise SignInRefused(_again("too many failed sign-ins from this address", wait), wait)

    def failed(self, client: str) -> None:
        """Count a failed sign-in (an unknown or revoked key) against `client`."""
        self.failures.take(client)

    def signing_in(self, key_id: str) -> None:
        """Count a sign-in of the key; SignInRefused when it signs in too often."""
        wait = self.sign_ins.take(key_id)
        if wait > 0:
            raise SignInRefused(_again("this API key signed in too often", wait), wait)

    def _remove(self, token: str) -> None:
        found = self.by_token.pop(token, None)
        self.notes.pop(token, None)
        if found is None:
            return
        mine = self.by_key.get(found.key_id, [])
        if token in mine:
            mine.remove(token)
        if not mine:
            self.by_key.pop(found.key_id, None)
        left = self.by_tenant.get(found.tenant, 1) - 1
        if left > 0:
            self.by_tenant[found.tenant] = left
        else:
            self.by_tenant.pop(found.tenant, None)

    def _drop_expired(self) -> None:
        now = self.clock()
        while self.by_token:
            token, oldest = next(iter(self.by_token.items()))
            if oldest.expires > now:
                break
            self._remove(token)


def _again(what: str, wait: float) -> str:
    return f"{what}; try again in {math.ceil(wait)} seconds"
