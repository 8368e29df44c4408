"""Which embedder a name, a folder or a URL means: `--embedder`, `embedder="..."` and
the configuration's `[embed]` section all come here.

- a built-in name (`BUILTINS`): default (the best installed all-MiniLM-L6-v2), minilm
  (float32), minilm-int8 (remem[embed]'s), hash (the test double), none (lexical only);
- an http(s) URL: an OpenAI-compatible embeddings server (`remem.embed.server`), its
  settings in the URL's fragment, which is never sent:
  `http://localhost:11434/v1#model=nomic-embed-text&dimensions=768&api_key_env=KEY_VAR`
  (`model` is required; without `dimensions` the server is asked once, with one short
  text, for the length of its vectors);
- a folder: a sentence-transformers model saved there (`remem.embed.folder`).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs

from remem.config.sections import Embed
from remem.embed.base import (
    DEFAULT_EMBEDDER,
    DefaultEmbedder,
    Embedder,
    HashEmbedder,
    checked_embedder,
)
from remem.errors import InvalidInput
from remem.llm.retry import RetryPolicy

BUILTINS = ("default", "minilm", "minilm-int8", "hash", "none")
_URL_KEYS = frozenset({"model", "dimensions", "api_key_env", "batch_size", "timeout", "name"})


def resolve_embedder(
    spec: str | os.PathLike[str], retry: RetryPolicy | None = None
) -> Embedder | DefaultEmbedder | None:
    """The embedder `spec` names (see the module docstring); InvalidInput when it is
    none of a built-in name, an http(s) URL or a folder."""
    text = os.fspath(spec)
    if text in BUILTINS:
        return builtin(text)
    if text.startswith(("http://", "https://")):
        return server_from_url(text, retry)
    path = Path(text).expanduser()
    if path.is_dir():
        from remem.embed.folder import FolderEmbedder

        return FolderEmbedder(path)
    raise InvalidInput(
        f"the embedder {text!r} is none of {', '.join(BUILTINS)}, an http(s) URL of an "
        "embeddings server, or a folder holding a sentence-transformers model"
    )


def builtin(name: str) -> Embedder | DefaultEmbedder | None:
    """A built-in embedder by name (`BUILTINS`); `default` stays the marker, resolved
    lazily by `remem.memory.embedder`."""
    if name == "hash":
        return HashEmbedder()
    if name == "none":
        return None
    if name == "minilm":  # float32: its weights' package or $REMEM_MINILM_DIR
        from remem.embed.minilm.embedder import MiniLMEmbedder

        return MiniLMEmbedder()
    if name == "minilm-int8":
        from remem.embed.minilm.packaged import PackagedMiniLM

        return PackagedMiniLM()
    if name == "default":
        return DEFAULT_EMBEDDER
    raise InvalidInput(f"unknown embedder {name!r}: use one of {', '.join(BUILTINS)}")


def server_from_url(url: str, retry: RetryPolicy | None = None) -> Embedder:
    """The embeddings server of a URL whose fragment holds its settings."""
    from remem.embed.server import ServerEmbedder, ServerSettings, probe_dimensions

    base, _, fragment = url.partition("#")
    given = {k: v[-1] for k, v in parse_qs(fragment, keep_blank_values=True).items()}
    unknown = sorted(set(given) - _URL_KEYS)
    if unknown:
        raise InvalidInput(
            f"the embeddings server URL's fragment names {unknown[0]!r}: it takes "
            f"{', '.join(sorted(_URL_KEYS))}"
        )
    if not given.get("model"):
        raise InvalidInput(
            "name the embeddings server's model in the URL's fragment, such as "
            "http://localhost:11434/v1#model=nomic-embed-text&dimensions=768"
        )
    try:
        dims = int(given["dimensions"]) if "dimensions" in given else None
        batch = int(given.get("batch_size", "64"))
        timeout = float(given.get("timeout", "30"))
    except ValueError:
        raise InvalidInput(
            "dimensions and batch_size in the URL's fragment are whole numbers, timeout is seconds"
        ) from None
    settings = ServerSettings(
        base_url=base,
        model=given["model"],
        dimensions=dims or 1,
        api_key_env=given.get("api_key_env") or None,
        batch_size=batch,
        timeout=timeout,
        name=given.get("name") or None,
    )
    if dims is None:
        from dataclasses import replace

        settings = replace(settings, dimensions=probe_dimensions(settings, retry))
    return ServerEmbedder(settings, retry)


def configured(embed: Embed, retry: RetryPolicy | None = None) -> Embedder | DefaultEmbedder | None:
    """The embedder of a configuration's `[embed]` section: its server, its folder, its
    built-in one, else the marker of the installed default."""
    if embed.base_url is not None:
        from remem.embed.server import ServerEmbedder, ServerSettings

        if embed.model is None or embed.dimensions is None:
            raise InvalidInput("[embed] base_url needs model and dimensions")
        settings = ServerSettings(
            base_url=embed.base_url,
            model=embed.model,
            dimensions=embed.dimensions,
            api_key_env=embed.api_key_env,
            batch_size=embed.batch_size,
            timeout=embed.timeout,
            cooldown_seconds=embed.cooldown_seconds,
            send_dimensions=embed.send_dimensions,
            name=embed.name,
        )
        return ServerEmbedder(settings, retry)
    if embed.path is not None:
        from remem.embed.folder import FolderEmbedder

        return FolderEmbedder(Path(embed.path).expanduser())
    if embed.builtin is not None:
        return builtin(embed.builtin)
    return DEFAULT_EMBEDDER


def chosen(
    embedder: object, embed: Embed, retry: RetryPolicy | None = None
) -> Embedder | DefaultEmbedder | None:
    """What `Memory(embedder=...)` means: a name, folder or URL resolved
    (`resolve_embedder`); the default marker replaced by the `[embed]` section's choice
    (`configured`); an Embedder or None as given (InvalidInput for anything else)."""
    if isinstance(embedder, str | os.PathLike):
        return resolve_embedder(embedder, retry)
    given = checked_embedder(embedder)
    return configured(embed, retry) if isinstance(given, DefaultEmbedder) else given


def for_config(config: str | os.PathLike[str] | None) -> Embedder | None:
    """The embedder a server process runs with: the `[embed]` section of the
    configuration file `config` (default `$REMEM_CONFIG`), else the installed default
    (None when none is installed: lexical only)."""
    from remem.config.config import load_config
    from remem.embed.base import default_embedder

    loaded = load_config(config)
    found = configured(loaded.embed, loaded.retry)
    return default_embedder() if isinstance(found, DefaultEmbedder) else found
