"""Console sessions under a sign-in flood (issue 33, item 4): FastAPI's TestClient on
`create_app` over a SQLite file (sessions live in the process, not the database).

One tenant's key must never sign another tenant's users out: a key at its own cap
replaces its own oldest session, a tenant or the whole store at its cap refuses the
sign-in (429) instead of dropping anyone's live session, and repeated sign-ins are
slowed by token buckets that answer at once (no waiting on the server).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from remem.console import sessions as console_sessions
from remem.console.sessions import SESSION_SECONDS, Buckets, Sessions
from remem.embed import HashEmbedder
from remem.memory.memory import open_store
from remem.service import keys as keyring
from remem.service.http import create_app
from tests.support.console import csrf as csrf_of
from tests.support.console import error

FLOOD = 10_050  # the figure: past the old store's 10,000 sessions


class Ticks:
    """A clock the test moves (seconds), for sessions and sign-in buckets."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Site:
    client: TestClient
    keys: dict[str, str]

    def sign_in(self, key: str, via: TestClient | None = None) -> httpx.Response:
        """POST the sign-in form with the key named `key` (or a raw secret) from `via`
        (another client address) or the site's client; the answer. Cookies are sent
        by hand, so the jar never mixes two sessions."""
        client = via or self.client
        client.cookies.clear()
        form = client.get("/console/login")
        client.cookies.clear()
        csrf = csrf_of(form)
        response = client.post(
            "/console/login",
            data={"key": self.keys.get(key, key), "csrf": csrf},
            headers={"cookie": f"remem_console_login={csrf}"},
            follow_redirects=False,
        )
        client.cookies.clear()
        return response

    def token(self, key: str) -> str:
        """Sign in with `key` and return the session's token (its cookie's value)."""
        done = self.sign_in(key)
        assert done.status_code == 303, done.text
        found = re.search(r"remem_console=([^;]+);", done.headers["set-cookie"])
        assert found, done.headers
        return found.group(1)

    def page(self, token: str) -> httpx.Response:
        """The Actors page with a session's cookie."""
        self.client.cookies.clear()
        return self.client.get(
            "/console/actors",
            headers={"cookie": f"remem_console={token}"},
            follow_redirects=False,
        )

    def works(self, token: str) -> bool:
        return self.page(token).status_code == 200

    def sign_out(self, token: str) -> None:
        csrf = csrf_of(self.page(token))
        self.client.cookies.clear()
        done = self.client.post(
            "/console/logout",
            data={"csrf": csrf},
            headers={"cookie": f"remem_console={token}"},
            follow_redirects=False,
        )
        assert done.status_code == 303 and done.headers["location"] == "/console/login"
        self.client.cookies.clear()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    """Tenant acme's admin; tenant globex's one-actor agent key and eight more keys."""
    db = str(tmp_path / "console.db")
    store = open_store(db)
    try:
        made = {
            "admin": keyring.create_key(store.keys, tenant="acme", role="admin"),
            "acme2": keyring.create_key(store.keys, tenant="acme", role="admin"),
            "mallory": keyring.create_key(store.keys, tenant="globex", actor="mallory"),
            "initech": keyring.create_key(store.keys, tenant="initech", role="admin"),
        }
        for n in range(8):
            made[f"globex{n}"] = keyring.create_key(store.keys, tenant="globex")
    finally:
        store.close()
    app = create_app(db, embedder=HashEmbedder(), worker=False)
    with TestClient(app) as client:
        yield Site(client, {k: v[1] for k, v in made.items()})


def _small(site: Site, ticks: Ticks, **caps: int) -> Sessions:
    """Give the app a session store with small caps on the test's clock."""
    found = Sessions(clock=ticks, **caps)
    site.client.app.state.console_sessions = found  # type: ignore[attr-defined]
    return found


# -- the flood, with the shipped limits -----------------------------------------


def test_another_tenants_sign_in_flood_signs_no_one_out(site: Site) -> None:
    admin = site.token("admin")
    refused = None
    signed_in = 0
    for _ in range(FLOOD):
        answer = site.sign_in("mallory")
        if answer.status_code != 303:
            refused = answer
            break
        signed_in += 1
    assert site.works(admin), "tenant acme's admin was signed out by globex's sign-ins"
    assert refused is not None, f"{signed_in} sign-ins in a row were all accepted"
    assert refused.status_code == 429
    assert "signed in too often" in error(refused)
    assert int(refused.headers["retry-after"]) >= 1
    assert signed_in <= console_sessions.SIGN_IN_BURST


# -- the caps, small, on the test's clock ----------------------------------------------


def test_a_key_at_its_cap_replaces_only_its_own_oldest_session(site: Site) -> None:
    _small(site, Ticks(), per_key=3, per_tenant=5, total=8)
    admin = site.token("admin")
    mine = [site.token("mallory") for _ in range(3)]
    newest = site.token("mallory")
    assert not site.works(mine[0])  # its own oldest went
    assert all(site.works(t) for t in [*mine[1:], newest, admin])


def test_a_tenant_at_its_cap_is_refused_and_no_one_is_signed_out(site: Site) -> None:
    kept = _small(site, Ticks(), per_key=3, per_tenant=5, total=8)
    admin = site.token("admin")
    globex = [site.token("globex0") for _ in range(3)] + [site.token("globex1") for _ in range(2)]
    refused = site.sign_in("globex2")
    assert refused.status_code == 429
    assert error(refused) == (
        "this tenant has 5 console sessions open, the most it may; sign out of one, "
        "or wait until one expires, then sign in again"
    )
    assert site.sign_in("mallory").status_code == 429  # a one-actor key of the tenant too
    assert all(site.works(t) for t in [admin, *globex])
    # a key with sessions of its own (below its cap) replaces its oldest: still 5
    again = site.token("globex1")
    assert not site.works(globex[3]) and site.works(again)
    assert kept.by_tenant["globex"] == 5
    # acme is not at its cap: its keys sign in
    assert site.works(site.token("acme2"))
    # signing out frees a place
    site.sign_out(globex[0])
    assert not site.works(globex[0])
    assert site.works(site.token("globex2"))


def test_a_full_store_refuses_and_drops_only_expired_sessions(site: Site) -> None:
    ticks = Ticks()
    kept = _small(site, ticks, per_key=3, per_tenant=5, total=8)
    admin = site.token("admin")
    ticks.now += 3600
    others = [site.token("globex0") for _ in range(3)] + [site.token("globex1") for _ in range(2)]
    others += [site.token("initech"), site.token("initech")]
    refused = site.sign_in("acme2")
    assert refused.status_code == 429
    assert error(refused) == (
        "the console has 8 sessions open, the most it keeps; try again when one has ended"
    )
    assert all(site.works(t) for t in [admin, *others])
    # a key with a session of its own replaces its oldest
    again = site.token("initech")
    assert not site.works(others[5]) and site.works(again)
    others[5] = again
    # acme's first session expires: it goes first, and only it
    ticks.now += SESSION_SECONDS - 3600
    assert site.works(site.token("acme2"))
    assert not site.works(admin)
    assert all(site.works(t) for t in others)
    assert len(kept.by_token) == 8
    ticks.now += 3600
    assert not any(site.works(t) for t in others)  # everyone's session expires


# -- sign-ins slowed ----------------------------------------------------------------------


def test_sign_ins_are_slowed_per_key_and_failures_per_address(site: Site) -> None:
    ticks = Ticks()
    _small(site, ticks)
    burst = console_sessions.SIGN_IN_BURST
    for _ in range(burst):
        assert site.sign_in("mallory").status_code == 303
    refused = site.sign_in("mallory")
    assert refused.status_code == 429
    every = console_sessions.SIGN_IN_EVERY
    assert refused.headers["retry-after"] == str(int(every))
    assert error(refused) == (
        f"this API key signed in too often; try again in {int(every)} seconds"
    )
    assert site.sign_in("globex0").status_code == 303  # another key is not slowed
    ticks.now += every
    assert site.sign_in("mallory").status_code == 303
    assert site.sign_in("mallory").status_code == 429

    guess = "rk_" + "x" * 43
    for _ in range(burst):
        assert site.sign_in(guess).status_code == 401
    refused = site.sign_in(guess)
    assert refused.status_code == 429
    assert "too many failed sign-ins from this address" in error(refused)
    assert site.sign_in("admin").status_code == 429  # this address is not heard for now
    elsewhere = TestClient(site.client.app, client=("10.0.0.2", 40000))
    assert site.sign_in("admin", via=elsewhere).status_code == 303
    ticks.now += every
    assert site.sign_in("admin").status_code == 303


def test_buckets_and_notes_stay_bounded() -> None:
    ticks = Ticks()
    buckets = Buckets(2, 10.0, limit=100, clock=ticks)
    for n in range(1000):
        assert buckets.take(f"10.0.{n // 256}.{n % 256}") == 0
    assert len(buckets) == 100
    assert buckets.take("a") == 0 and buckets.take("a") == 0
    assert buckets.take("a") == 10.0 and buckets.wait("a") == 10.0
    ticks.now += 5
    assert buckets.take("a") == 5.0
    assert buckets.wait("never seen") == 0 and "never seen" not in buckets.level

    kept = Sessions(clock=ticks)
    token = kept.open("key_1", "acme")
    for n in range(100):
        kept.note(token, f"line {n}")
    kept.note("no such session", "lost")
    assert kept.take_notes(token) == [
        f"line {n}" for n in range(100 - console_sessions.MAX_NOTES, 100)
    ]
    assert kept.notes == {}


def test_docs_state_the_caps_and_rates() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "guide" / "console.md"
    readme = " ".join(page.read_text().split())
    s = console_sessions
    assert (
        f"at most {s.MAX_SESSIONS_PER_KEY} sessions per key, {s.MAX_SESSIONS_PER_TENANT} per "
        f"tenant and {s.MAX_SESSIONS:,} in all, for {s.SESSION_SECONDS // 3600} hours each"
    ) in readme
    assert (
        f"sign in {s.SIGN_IN_BURST} times in a row, then once every {s.SIGN_IN_EVERY:g} s"
    ) in readme
