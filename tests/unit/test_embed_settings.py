"""The embedder's settings and the checks on an embeddings answer, without a network:
the `[embed]` section, an embeddings server's URL, and `checked_vectors`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from remem.config.config import load_config
from remem.embed.choose import configured, resolve_embedder
from remem.embed.server import ServerEmbedder, checked_vectors
from remem.errors import ConfigError, EmbedderBadOutput, InvalidInput


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "remem.toml"
    path.write_text(text)
    return path


def test_the_embed_section_makes_a_server_embedder(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, """
[embed]
base_url = "http://user:pw@localhost:11434/v1"
model = "nomic-embed-text"
dimensions = 768
api_key_env = "MY_KEY"
batch_size = 16
timeout = 5
"""))  # fmt: skip
    emb = configured(config.embed, config.retry)
    assert isinstance(emb, ServerEmbedder)
    assert (emb.name, emb.dim, emb.settings.batch_size) == ("server:nomic-embed-text", 768, 16)
    shown = config.as_dict()["embed"]
    assert shown["base_url"] == "http://***@localhost:11434/v1" and shown["api_key_env"] == "MY_KEY"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[embed]\nbase_url = "http://h/v1"\nmodel = "m"\ndimensions = 8\napi_key = "sk-x"\n',
         "embed.api_key: Extra inputs are not permitted"),
        ('[embed]\nbase_url = "http://h/v1"\nmodel = "m"\n', "needs model and dimensions"),
        ('[embed]\nbase_url = "http://h/v1"\nmodel = "m"\ndimensions = 8\npath = "/m"\n',
         "give one of base_url"),
        ('[embed]\nbase_url = "ftp://h"\nmodel = "m"\ndimensions = 8\n', "http(s) URL"),
        ('[embed]\nbase_url = "http://h/v1"\nmodel = "m"\ndimensions = 8\nbatch_size = 5000\n',
         "batch_size"),
        ('[embed]\napi_key_env = "not a name"\n', "api_key_env"),
        ('[embed]\nbuiltin = "bert"\n', "builtin"),
    ],
)  # fmt: skip
def test_an_embed_section_that_cannot_work_is_refused(tmp_path: Path, text: str, said: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_config(tmp_path, text))
    assert said in str(err.value) and "line" in str(err.value)
    assert "sk-x" not in str(err.value)


def test_a_url_carries_its_settings_in_the_fragment_and_sends_none() -> None:
    emb = resolve_embedder("http://127.0.0.1:9/v1#model=bge&dimensions=384&batch_size=8")
    assert isinstance(emb, ServerEmbedder)
    assert emb.settings.base_url == "http://127.0.0.1:9/v1"
    assert (emb.name, emb.dim, emb.settings.batch_size) == ("server:bge", 384, 8)
    with pytest.raises(InvalidInput, match="whole numbers"):
        resolve_embedder("http://127.0.0.1:9/v1#model=bge&dimensions=many")


def _body(rows: list[object], indexes: list[object] | None = None) -> bytes:
    data = [
        {"index": i if indexes is None else indexes[i], "embedding": r} for i, r in enumerate(rows)
    ]
    return json.dumps({"data": data}).encode()


def test_an_answer_is_put_back_in_input_order_and_normalised() -> None:
    out = checked_vectors(_body([[0.0, 2.0], [3.0, 4.0]], [1, 0]), 2, 2)
    assert np.allclose(out, [[0.6, 0.8], [0.0, 1.0]])


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (_body([[1.0, 0.0], [1.0, 0.0]], [0, 0]), "index 0 twice"),
        (_body([[1.0, 0.0], [1.0, 0.0]], [0, 2]), "no valid index"),
        (_body([[1.0, 0.0], [1.0, 0.0]], [0, True]), "no valid index"),
        (_body([[1.0, math.inf], [1.0, 0.0]]), "not a usable vector"),
        (_body([[0.0, 0.0], [1.0, 0.0]]), "not a usable vector"),
        (_body([[1.0, "x"], [1.0, 0.0]]), "holds a non-number"),
        (_body([[True, False], [1.0, 0.0]]), "holds a non-number"),
        (_body(["AAAA", [1.0, 0.0]]), "base64 is not asked for"),
        (b'{"data": {"0": [1, 0]}}', "no `data` list"),
        (b"[1, 2]", "no `data` list"),
    ],
)
def test_an_answer_of_the_wrong_shape_says_what_is_wrong(body: bytes, said: str) -> None:
    with pytest.raises(EmbedderBadOutput, match=said.replace("(", r"\(")):
        checked_vectors(body, 2, 2)
