"""The all-MiniLM-L6-v2 encoder written as an ONNX graph, from the weights numpy runs.

`build_graph` turns the arrays `remem.embed.minilm.embedder` loads from the safetensors
file into the same BERT encoder as ONNX operators (no torch export, nothing
downloaded): token ids and a padding mask in, hidden states out; pooling and
normalisation stay in numpy, shared with the numpy path. `quantize` rewrites the
weight matmuls to int8. Building imports `onnx` (about a second), so it runs
once and the result is cached on disk by `remem.embed.minilm.onnx_encoder`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from remem.embed.minilm.numpy_encoder import DIM, HEADS

if TYPE_CHECKING:
    from remem.embed.minilm.numpy_encoder import Weights

OPSET = 17  # LayerNormalization is an ONNX operator from 17 on
INPUT_IDS = "input_ids"
MASK = "mask"
HIDDEN = "hidden"

# The matmuls whose right side is a weight; quantisation rewrites only these
# (the attention scores' matmuls multiply two activations).
WEIGHT_MATMUL = "weight_matmul"


def build_graph(model: Weights) -> Any:
    """The encoder as an `onnx.ModelProto` holding `model`'s weights.

    Inputs: `input_ids` (batch, length) int64 and `mask` (batch, length) float32,
    1 for real tokens and 0 for padding. Output: `hidden` (batch, length, dim).
    The operations are those of `remem.embed.minilm.numpy_encoder._encode`, in the same order,
    with the exact erf GELU.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    inits: list[Any] = []
    heads, dim = HEADS, DIM
    head = dim // heads

    def const(name: str, value: Any) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], output: str, name: str = "", **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=name or output, **attrs))
        return output

    def layer_norm(x: str, gain: Any, bias: Any, out: str) -> str:
        g, b = const(f"{out}.g", gain), const(f"{out}.b", bias)
        return node("LayerNormalization", [x, g, b], out, axis=-1, epsilon=1e-12)

    def linear(x: str, weight: Any, bias: Any, out: str) -> str:
        w, b = const(f"{out}.w", weight), const(f"{out}.bias", bias)
        product = node("MatMul", [x, w], f"{out}.mm", name=f"{WEIGHT_MATMUL}.{out}")
        return node("Add", [product, b], out)

    const("word", model.word)
    const("position", model.position)
    const("zero", np.array([0], dtype=np.int64))
    const("one_idx", np.array([1], dtype=np.int64))
    const("one", np.float32(1.0))
    const("big", np.float32(1e30))
    const("qkv_shape", np.array([0, 0, 3, heads, head], dtype=np.int64))
    const("ctx_shape", np.array([0, 0, dim], dtype=np.int64))
    const("bias_axes", np.array([1, 2], dtype=np.int64))
    const("sqrt_half", np.float32(1.0 / math.sqrt(2.0)))
    const("half", np.float32(0.5))

    node("Gather", ["word", INPUT_IDS], "tokens", axis=0)
    node("Shape", [INPUT_IDS], "ids_shape")
    node("Gather", ["ids_shape", "one_idx"], "length", axis=0)
    node("Slice", ["position", "zero", "length", "zero"], "positions")
    node("Add", ["tokens", "positions"], "embedded")
    x = layer_norm("embedded", model.ln_g, model.ln_b, "embedded.ln")
    # Padding keys get a large negative score, as in numpy: (mask - 1) * 1e30.
    node("Sub", [MASK, "one"], "mask_off")
    node("Mul", ["mask_off", "big"], "mask_bias2")
    node("Unsqueeze", ["mask_bias2", "bias_axes"], "mask_bias")

    for n, layer in enumerate(model.layers):
        p = f"l{n}"
        qkv = linear(x, layer.qkv_w, layer.qkv_b, f"{p}.qkv")
        node("Reshape", [qkv, "qkv_shape"], f"{p}.qkv5")
        node("Transpose", [f"{p}.qkv5"], f"{p}.qkvT", perm=[2, 0, 3, 1, 4])
        for i, part in enumerate("qkv"):
            const(f"{p}.{part}.i", np.int64(i))
            node("Gather", [f"{p}.qkvT", f"{p}.{part}.i"], f"{p}.{part}", axis=0)
        node("Transpose", [f"{p}.k"], f"{p}.kT", perm=[0, 1, 3, 2])
        node("MatMul", [f"{p}.q", f"{p}.kT"], f"{p}.scores")
        node("Add", [f"{p}.scores", "mask_bias"], f"{p}.masked")
        node("Softmax", [f"{p}.masked"], f"{p}.weights", axis=-1)
        node("MatMul", [f"{p}.weights", f"{p}.v"], f"{p}.ctx4")
        node("Transpose", [f"{p}.ctx4"], f"{p}.ctxT", perm=[0, 2, 1, 3])
        node("Reshape", [f"{p}.ctxT", "ctx_shape"], f"{p}.ctx")
        attended = linear(f"{p}.ctx", layer.out_w, layer.out_b, f"{p}.attn")
        node("Add", [attended, x], f"{p}.res1")
        x = layer_norm(f"{p}.res1", layer.ln1_g, layer.ln1_b, f"{p}.ln1")
        inner = linear(x, layer.ff1_w, layer.ff1_b, f"{p}.ff1")
        # GELU(x) = 0.5 x (1 + erf(x / sqrt 2)), the form ORT fuses into one kernel.
        node("Mul", [inner, "sqrt_half"], f"{p}.g1")
        node("Erf", [f"{p}.g1"], f"{p}.g2")
        node("Add", [f"{p}.g2", "one"], f"{p}.g3")
        node("Mul", [inner, f"{p}.g3"], f"{p}.g4")
        node("Mul", [f"{p}.g4", "half"], f"{p}.gelu")
        out = linear(f"{p}.gelu", layer.ff2_w, layer.ff2_b, f"{p}.ff2")
        node("Add", [out, x], f"{p}.res2")
        last = n + 1 == len(model.layers)
        x = layer_norm(f"{p}.res2", layer.ln2_g, layer.ln2_b, HIDDEN if last else f"{p}.ln2")

    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info(INPUT_IDS, TensorProto.INT64, ["batch", "length"]),
            helper.make_tensor_value_info(MASK, TensorProto.FLOAT, ["batch", "length"]),
        ],
        [helper.make_tensor_value_info(HIDDEN, TensorProto.FLOAT, ["batch", "length", dim])],
        inits,
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    proto.ir_version = 8
    onnx.checker.check_model(proto)
    return proto


def quantize(source: Path, target: Path) -> None:
    """Write to `target` the graph in `source` with its weight matmuls in int8.

    Dynamic quantisation: weights become int8 per output channel once, and each
    matmul's input is quantised to uint8 as it arrives; embeddings, layer
    norms and attention scores stay float32. Measured against float32 over
    LoCoMo's turns: cosine min 0.956, mean 0.992 (docs/benchmarks.md, "Query embedding").
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    proto = onnx.load(str(source))
    names = [n.name for n in proto.graph.node if n.name.startswith(WEIGHT_MATMUL + ".")]
    quantize_dynamic(
        source,
        target,
        per_channel=True,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul"],
        nodes_to_quantize=names,
    )
