"""Shapes that are secrets wherever they appear: vendor key and token formats, JWTs,
`Bearer` tokens, credentials in URLs, PEM private keys; and keys that are a shape only
next to something (`0x` + 64 hex digits, an AWS secret beside its access key id)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from remem.policy.detectors.base import (
    IGNORECASE,
    TOKEN_END,
    TOKEN_START,
    Hit,
)

# -- shapes: secrets wherever they appear -----------------------------------------------------

SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
    ),
    # OpenAI sk-..., sk-proj-..., Anthropic sk-ant-...
    ("api_key", re.compile(TOKEN_START + r"sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}")),
    ("api_key", re.compile(TOKEN_START + r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}" + TOKEN_END)),
    ("api_key", re.compile(TOKEN_START + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("api_key", re.compile(TOKEN_START + r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])")),
    # remem's own API keys: "rk_" + secrets.token_urlsafe(32), 43 characters of mixed case
    (
        "api_key",
        re.compile(
            TOKEN_START + r"rk_(?=[A-Za-z0-9_-]*[a-z])(?=[A-Za-z0-9_-]*[A-Z])[A-Za-z0-9_-]{43}"
            r"(?![A-Za-z0-9_-])"
        ),
    ),
    # npm "npm_" + 36, Hugging Face "hf_" + 34 or more letters and digits, of mixed case
    (
        "access_token",
        re.compile(TOKEN_START + r"npm_(?=[a-z0-9]*[A-Z])[A-Za-z0-9]{36}" + TOKEN_END),
    ),
    (
        "access_token",
        re.compile(TOKEN_START + r"hf_(?=[a-z0-9]*[A-Z])[A-Za-z0-9]{34,}" + TOKEN_END),
    ),
    ("access_token", re.compile(TOKEN_START + r"gh[pousr]_[A-Za-z0-9]{36,255}" + TOKEN_END)),
    # vendors' prefixed tokens: SendGrid, Shopify, DigitalOcean, PyPI, Docker Hub, Twilio,
    # Slack app-level, Google OAuth, Mailgun, Databricks, Postman, Atlassian, Linear,
    # Stripe webhook secrets, Square, Supabase, Grafana, New Relic, Groq, Replicate,
    # Perplexity, Telegram bots; each a prefix and a body long enough to be a secret
    (
        "api_key",
        re.compile(TOKEN_START + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + TOKEN_END),
    ),
    ("access_token", re.compile(TOKEN_START + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + TOKEN_END)),
    ("access_token", re.compile(TOKEN_START + r"do[opr]_v1_[a-f0-9]{64}" + TOKEN_END)),
    ("api_key", re.compile(TOKEN_START + r"pypi-AgE[A-Za-z0-9_-]{50,}")),
    ("access_token", re.compile(TOKEN_START + r"dckr_pat_[A-Za-z0-9_-]{27,}")),
    ("api_key", re.compile(TOKEN_START + r"SK(?=[a-f]*[0-9])[0-9a-f]{32}" + TOKEN_END)),
    ("access_token", re.compile(TOKEN_START + r"xapp-[0-9]-[A-Za-z0-9-]{20,}")),
    ("access_token", re.compile(TOKEN_START + r"ya29\.[A-Za-z0-9_-]{20,}")),
    ("api_key", re.compile(TOKEN_START + r"key-(?=[a-f]*[0-9])[0-9a-f]{32}" + TOKEN_END)),
    ("access_token", re.compile(TOKEN_START + r"dapi(?=[a-f]*[0-9])[0-9a-f]{32}" + TOKEN_END)),
    ("api_key", re.compile(TOKEN_START + r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}" + TOKEN_END)),
    ("access_token", re.compile(TOKEN_START + r"ATATT3[A-Za-z0-9_=-]{100,}")),
    ("api_key", re.compile(TOKEN_START + r"lin_(?:api|oauth)_[A-Za-z0-9]{40,}" + TOKEN_END)),
    ("api_key", re.compile(TOKEN_START + r"whsec_[A-Za-z0-9+/=]{24,}")),
    ("access_token", re.compile(TOKEN_START + r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}")),
    ("access_token", re.compile(TOKEN_START + r"sbp_[a-f0-9]{40}" + TOKEN_END)),
    ("access_token", re.compile(TOKEN_START + r"glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}" + TOKEN_END)),
    ("api_key", re.compile(TOKEN_START + r"NRAK-[A-Z0-9]{27}" + TOKEN_END)),
    ("api_key", re.compile(TOKEN_START + r"gsk_[A-Za-z0-9]{48,}" + TOKEN_END)),
    ("api_key", re.compile(TOKEN_START + r"r8_[A-Za-z0-9]{37}" + TOKEN_END)),
    ("api_key", re.compile(TOKEN_START + r"pplx-[A-Za-z0-9]{40,}" + TOKEN_END)),
    ("access_token", re.compile(r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{30,40}" + TOKEN_END)),
    # an Azure storage connection string's key
    ("api_key", re.compile(r"\bAccountKey=(?P<v>[A-Za-z0-9+/]{40,}={0,2})", IGNORECASE)),
    ("access_token", re.compile(TOKEN_START + r"github_pat_[A-Za-z0-9_]{22,255}")),
    # GitLab: personal, pipeline trigger, deploy, runner, feed, SCIM and OAuth tokens
    (
        "access_token",
        re.compile(TOKEN_START + r"gl(?:pat|ptt|dt|rt|ft|soat|oas|cbt|imt)-[A-Za-z0-9_-]{20,}"),
    ),
    ("access_token", re.compile(TOKEN_START + r"xox[baprse]-[A-Za-z0-9-]{10,}")),
    ("access_token", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+")),
    (
        "access_token",
        re.compile(TOKEN_START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    ),
    (
        "access_token",
        re.compile(
            r"\bbearer\s+(?P<v>(?=[A-Za-z0-9._~+/-]*[0-9])[A-Za-z0-9._~+/-]{16,}=*)", IGNORECASE
        ),
    ),
    (
        "password",
        re.compile(r"\bauthorization\s*:\s*basic\s+(?P<v>[A-Za-z0-9+/]{8,}={0,2})", IGNORECASE),
    ),
    # scheme://user:password@host
    ("password", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:(?P<v>[^\s:/@]+)@", IGNORECASE)),
    # US SSN; area 000, 666 and 9xx, group 00 and serial 0000 are never issued.
    (
        "government_id",
        re.compile(
            r"(?<![A-Za-z0-9_-])(?!000|666|9)[0-9]{3}-(?!00)[0-9]{2}-(?!0000)[0-9]{4}"
            r"(?![A-Za-z0-9_]|-[0-9])"
        ),
    ),
)


# -- keys that are shapes only next to something ------------------------------------------------

HEX_KEY = re.compile(r"(?<![0-9A-Za-z])0x[0-9a-fA-F]{64}(?![0-9A-Za-z])")
# what a public 32-byte value is called when it is not a key
_PUBLIC_HEX = re.compile(
    r"\b(?:tx|txn|transaction|hash|block|commit|digest|sha-?256|checksum|address|id)"
    r"(?:\s+(?:hash|id))?\s*[:=#]?\s*$",
    IGNORECASE,
)
AWS_ID = re.compile(TOKEN_START + r"(?:AKIA|ASIA)[0-9A-Z]{16}" + TOKEN_END)
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_NEAR = 80  # characters between an access key id and its secret


def hex_keys(text: str) -> Iterator[Hit]:
    """`0x` + 64 hex digits, unless introduced as a transaction, block, hash or id."""
    for m in HEX_KEY.finditer(text):
        if not _PUBLIC_HEX.search(text, max(0, m.start() - 30), m.start()):
            yield ("private_key", m.start(), m.end())


def aws_secrets(text: str) -> Iterator[Hit]:
    """A 40-character secret access key within a short distance of an access key id."""
    for m in AWS_ID.finditer(text):
        lo, hi = max(0, m.start() - _AWS_NEAR), min(len(text), m.end() + _AWS_NEAR)
        for s in _AWS_SECRET.finditer(text, lo, hi):
            value = s.group()
            mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
            if mixed and any(c.isdigit() or c in "/+" for c in value):
                yield ("api_key", s.start(), s.end())
