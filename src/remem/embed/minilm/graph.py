"""The all-MiniLM-L6-v2 encoder written as an ONNX graph, from the weights numpy runs.

`build_graph` turns the arrays `remem.embed.minilm.embedder` loads from the safetensors
file into the same BERT encoder as ONNX operators (no torch export, nothing
downloaded): token ids and a padding mask in, hidden states out; pooling and
normalisation stay in numpy, shared with the numpy path. `quantize` rewrites the
weight matmuls to int8. Building imports `onnx` (about a second), so it runs
once and the result is cached on disk by `remem.embed.minilm.onnx_encoder`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from remem.embed.minilm.numpy_encoder import DIM, HEADS

if TYPE_CHECKING:
    from remem.embed.minilm.numpy_encoder import Weights

OPSET = 17  # LayerNormalization is an ONNX operator from 17 on
CONTRIB = "com.microsoft"  # ONNX Runtime's own operators: MultiHeadAttention, Gelu
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
    with the exact erf GELU. The attention and the GELU are ONNX Runtime's own operators
    (`CONTRIB`: `MultiHeadAttention`, `Gelu`), where they were plain ones (transposes,
    two matmuls, a softmax; five elementwise nodes), which ONNX Runtime's optimiser left
    as they were: 25 nodes a layer after it, now 9. The vectors are the same to the last bit
    as the plain form's, float32 and int8, on 300 queries; a query of about 10 tokens
    costs 1.62 ms in int8 instead of 1.79 (medians, `docs/decisions/service-speed.md`).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    inits: list[Any] = []
    heads, dim = HEADS, DIM

    def const(name: str, value: Any) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(
        op: str, inputs: list[str], output: str, name: str = "", domain: str = "", **attrs: Any
    ) -> str:
        made = helper.make_node(op, inputs, [output], name=name or output, domain=domain, **attrs)
        nodes.append(made)
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
    const("thirds", np.array([dim, dim, dim], dtype=np.int64))

    node("Gather", ["word", INPUT_IDS], "tokens", axis=0)
    node("Shape", [INPUT_IDS], "ids_shape")
    node("Gather", ["ids_shape", "one_idx"], "length", axis=0)
    node("Slice", ["position", "zero", "length", "zero"], "positions")
    node("Add", ["tokens", "positions"], "embedded")
    x = layer_norm("embedded", model.ln_g, model.ln_b, "embedded.ln")
    # The attention reads the padding as a key padding mask: 1 for a real token.
    node("Cast", [MASK], "key_mask", to=TensorProto.INT32)

    for n, layer in enumerate(model.layers):
        p = f"l{n}"
        qkv = linear(x, layer.qkv_w, layer.qkv_b, f"{p}.qkv")
        parts = [f"{p}.{part}" for part in "qkv"]
        nodes.append(helper.make_node("Split", [qkv, "thirds"], parts, name=f"{p}.split", axis=-1))
        # the query is pre-scaled by 1/sqrt(head size) (`load_weights`): scale 1
        node("MultiHeadAttention", [*parts, "", "key_mask"], f"{p}.ctx",
             domain=CONTRIB, num_heads=heads, scale=1.0)  # fmt: skip
        attended = linear(f"{p}.ctx", layer.out_w, layer.out_b, f"{p}.attn")
        node("Add", [attended, x], f"{p}.res1")
        x = layer_norm(f"{p}.res1", layer.ln1_g, layer.ln1_b, f"{p}.ln1")
        inner = linear(x, layer.ff1_w, layer.ff1_b, f"{p}.ff1")
        node("Gelu", [inner], f"{p}.gelu", domain=CONTRIB)  # the exact erf GELU
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
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid(CONTRIB, 1)]
    proto = helper.make_model(graph, opset_imports=opsets)
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
        # the types of ONNX Runtime's own operators' outputs are not inferred
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
