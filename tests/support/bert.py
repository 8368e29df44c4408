"""A tiny BERT of random weights, saved in a folder as sentence-transformers saves one:
what the folder embedder (`remem.embed.folder`) tests run, with no model installed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

WORDS = ["the", "a", "dog", "cat", "likes", "hiking", "in", "alps", "coffee", "tea",
         "green", "##s", "##ing", "morning", "i", "love", "pizza", "paris", "is", "cold",
         ".", ",", "!"]  # fmt: skip
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
HIDDEN, HEADS, LAYERS, INNER, POSITIONS = 32, 4, 2, 64, 40


def tiny_bert(folder: Path, *, pooling: str = "mean", normalise: bool = True) -> Path:
    """A BERT of random weights saved as sentence-transformers saves one."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(7)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    tensors = {
        "embeddings.word_embeddings.weight": w(len(VOCAB), HIDDEN),
        "embeddings.position_embeddings.weight": w(POSITIONS, HIDDEN),
        "embeddings.token_type_embeddings.weight": w(2, HIDDEN),
        "embeddings.LayerNorm.weight": 1 + w(HIDDEN),
        "embeddings.LayerNorm.bias": w(HIDDEN),
    }
    for n in range(LAYERS):
        p = f"encoder.layer.{n}."
        for name, (out, inp) in {
            "attention.self.query": (HIDDEN, HIDDEN),
            "attention.self.key": (HIDDEN, HIDDEN),
            "attention.self.value": (HIDDEN, HIDDEN),
            "attention.output.dense": (HIDDEN, HIDDEN),
            "intermediate.dense": (INNER, HIDDEN),
            "output.dense": (HIDDEN, INNER),
        }.items():
            tensors[f"{p}{name}.weight"] = w(out, inp)
            tensors[f"{p}{name}.bias"] = w(out)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[f"{p}{norm}.weight"] = 1 + w(HIDDEN)
            tensors[f"{p}{norm}.bias"] = w(HIDDEN)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / "model.safetensors"))
    config = {
        "architectures": ["BertModel"], "model_type": "bert", "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
        "intermediate_size": INNER, "hidden_act": "gelu", "max_position_embeddings": POSITIONS,
        "type_vocab_size": 2, "vocab_size": len(VOCAB), "layer_norm_eps": 1e-12,
        "pad_token_id": 0, "position_embedding_type": "absolute",
    }  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"do_lower_case": True, "tokenizer_class": "BertTokenizer"})
    )
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 32}))
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"},
    ]  # fmt: skip
    if normalise:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                        "type": "sentence_transformers.models.Normalize"})  # fmt: skip
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": HIDDEN,
        "pooling_mode_cls_token": pooling == "cls",
        "pooling_mode_mean_tokens": pooling == "mean",
        "pooling_mode_max_tokens": pooling == "max",
        "pooling_mode_mean_sqrt_len_tokens": False,
    }))  # fmt: skip
    return folder
