"""all-MiniLM-L6-v2: the embedder (`embedder`), its encoder in numpy and on ONNX Runtime,
and the ONNX graph built from the numpy weights (`graph`)."""
