"""The configuration's sections as plain values, and the strategies it may name.

Shared by `remem.config.config` (which builds the effective `Config` from them) and
`remem.config.file` (the pydantic schema of a TOML file, which takes its
defaults from here), so neither imports the other and the defaults are written
once. No pydantic here: a process run on the defaults never loads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LLM_STRATEGIES = ("semantic", "preference", "summary", "episodic")
OFFLINE_STRATEGIES = ("offline", "offline-summary")
STRATEGIES = (*OFFLINE_STRATEGIES, *LLM_STRATEGIES)


@dataclass(frozen=True, slots=True)
class Consolidation:
    """`[consolidation]`: whether a model consolidates new records, which, how widely."""

    enabled: bool = True
    model: str | None = None
    neighbours: int = 5


@dataclass(frozen=True, slots=True)
class Worker:
    """`[worker]`: how long a claimed job is leased, and how many events a run takes."""

    lease_seconds: float = 120.0
    batch_events: int = 16
    context_events: int = 6


@dataclass(frozen=True, slots=True)
class Events:
    """`[events]`: how far ahead of this machine's clock an event's time may be."""

    max_clock_skew_seconds: float = 3600.0


@dataclass(frozen=True, slots=True)
class Documents:
    """`[documents]`: how many chunks one document may cut into. Adding one embeds and
    indexes every chunk in one transaction (20,000 short chunks took 2.9 s of CPU with
    the hash embedder, about 40 s with all-MiniLM-L6-v2), so a document of many tiny
    sections is refused whole instead of holding the file's write lock that long.

    And what parsing one may take (`remem.documents.bounds.Bounds`): `max_pages` pages
    of a PDF, `max_parse_seconds` of CPU (a PDF of 40 pages sharing one compressed
    content stream took 78 s; pypdf read about 10 ms of an ordinary page)."""

    max_chunks: int = 5000
    max_pages: int = 2000
    max_parse_seconds: float = 10.0


@dataclass(frozen=True, slots=True)
class Recall:
    """`[recall]`: fields looked up exactly and put at the head of every packet."""

    pin: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Embed:
    """`[embed]`: the embedder, when not the installed default (`remem.embed.choose`).

    `base_url` (with `model` and `dimensions`): an OpenAI-compatible embeddings server
    (`remem.embed.server`), its key in the environment variable `api_key_env`; `path`:
    a local sentence-transformers folder (`remem.embed.folder`); `builtin`: one of
    remem's (default, minilm, minilm-int8, hash, none). None of them: the installed
    default. `name` is what a server's vectors are stored under (default
    `server:<model>`)."""

    base_url: str | None = None
    model: str | None = None
    dimensions: int | None = None
    api_key_env: str | None = None
    batch_size: int = 64
    timeout: float = 30.0
    cooldown_seconds: float = 30.0
    send_dimensions: bool = False
    name: str | None = None
    path: str | None = None
    builtin: str | None = None
