"""all-MiniLM-L6-v2's encoder on ONNX Runtime, from a graph built once and cached.

The graph (`remem.embed.minilm.graph`, from the same safetensors weights as the
numpy encoder) is written to the cache folder by the first process that needs
it; later processes only open it (0.1-0.15 s, against about 4 s to build).
Its folder's name carries a key made of the weights file's path, size and
modification time, the maximum token count and `GRAPH_VERSION`, so other
weights get a graph of their own. The key is taken from the file's metadata,
not a hash of its 90 MB, which would cost 0.15 s at every start. A cached
graph that fails to load is rebuilt once. Writes go to a temporary folder
renamed into place, so processes building at the same time never read half a
graph; when the cache cannot be written, the float32 graph is built in memory.
Each folder notes the `GRAPH_VERSION` that built it, and a build removes the graphs
of older versions (`sweep`): a version raised leaves no 100-180 MB folder behind.

One session per embedder, on one intra-op thread: a query is about 5 ms where
numpy takes about 10, and two threads gained nothing for single queries and
little for batches on the 2-core machine this was measured on (see docs/benchmarks.md).

ONNX Runtime rewrites a graph (fusions, constant folding) each time a session
opens it. The first process to open a cached graph saves that rewritten form
beside it (`optimized-<onnxruntime version>/`, written to a temporary folder
and renamed, like the graph); later processes open it with the rewriting
switched off, which saves a fresh process part of the session's start-up. Both
run the `ORT_ENABLE_EXTENDED` graph, so every process makes the same vectors.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from remem.embed.minilm.graph import HIDDEN, INPUT_IDS, MASK
from remem.embed.minilm.packaged_session import DATA_FILE, GRAPH_FILE, session_options

if TYPE_CHECKING:
    from remem.embed.minilm.numpy_encoder import Weights

ENV_CACHE = "REMEM_MODEL_CACHE"
"""Environment variable naming the folder for built ONNX graphs."""

GRAPH_VERSION = 2  # 2: attention and GELU as ONNX Runtime's operators (`graph.build_graph`)
"""Raised whenever `minilm_graph.build_graph` changes, so old graphs are not reused."""

VERSION_FILE = "graph-version"  # in each graph's folder: the GRAPH_VERSION that built it
_GRAPH_FOLDER = re.compile(r"all-MiniLM-L6-v2-(float32|int8)-[0-9a-f]{16}")  # `sweep`'s


_log = logging.getLogger("remem.embed")


def cache_dir() -> Path:
    """Where built graphs are kept: `$REMEM_MODEL_CACHE`, else remem's user cache folder."""
    override = os.environ.get(ENV_CACHE)
    if override:
        return Path(override).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("remem")) / "models"


def graph_dir(model_dir: Path, max_tokens: int, *, int8: bool, cache: Path) -> Path:
    """The cached graph's folder for these weights (it may not exist yet).

    It holds `model.onnx` (the operators) and `weights.bin` (the initializers,
    as ONNX external data, which ONNX Runtime maps instead of copying: opening
    takes a third of the time a single 90 MB file does).
    """
    weights = (model_dir / "model.safetensors").resolve()
    st = weights.stat()
    source = f"{GRAPH_VERSION}|{weights}|{st.st_size}|{st.st_mtime_ns}|{max_tokens}"
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    return cache / f"all-MiniLM-L6-v2-{'int8' if int8 else 'float32'}-{key}"


class OnnxEncoder:
    """The encoder as one ONNX Runtime session on one thread."""

    def __init__(
        self,
        graph: Path | bytes,
        *,
        int8: bool,
        optimized: bool = False,
        save_optimized: Path | None = None,
    ) -> None:
        """Open `graph` (a file, or the serialised model); raises what ONNX Runtime raises.

        `optimized`: the graph is one ONNX Runtime already rewrote (see the module
        docstring), opened as it is; `save_optimized`: a folder to write the rewritten
        graph into (`GRAPH_FILE` and its weights, `DATA_FILE`).
        """
        import onnxruntime as ort

        options = session_options(optimized=optimized, save_to=save_optimized)
        source = str(graph) if isinstance(graph, Path) else graph
        self._session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        self.graph = graph if isinstance(graph, Path) else None
        self._runtime = "onnxruntime-int8" if int8 else "onnxruntime"

    @property
    def runtime(self) -> str:
        """onnxruntime, or onnxruntime-int8."""
        return self._runtime

    def encode(
        self, token_ids: npt.NDArray[np.int64], mask: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        """(batch, length) ids and 0/1 mask to (batch, length, 384) hidden states."""
        (hidden,) = self._session.run([HIDDEN], {INPUT_IDS: token_ids, MASK: mask})
        return np.asarray(hidden, dtype=np.float32)


def load_encoder(
    model_dir: Path,
    max_tokens: int,
    weights: Callable[[], Weights],
    *,
    int8: bool = False,
    cache: Path | None = None,
) -> OnnxEncoder:
    """The encoder for the model in `model_dir`, building its graph when none is cached.

    `weights` loads the float32 weights; it is called only to build. Raises
    ImportError when onnxruntime (or, to build, onnx) is not installed, and
    whatever building or loading raises otherwise (the caller falls back to numpy).
    """
    import onnxruntime  # noqa: F401  (ImportError here: not installed)

    folder = cache if cache is not None else cache_dir()
    target = graph_dir(model_dir, max_tokens, int8=int8, cache=folder)
    if (target / GRAPH_FILE).is_file():
        try:
            return _open(target, int8=int8)
        except Exception as exc:  # a damaged or foreign file: build it again
            _log.warning(
                "the cached graph in %s does not load (%s); building it again", target, exc
            )
    float_dir = graph_dir(model_dir, max_tokens, int8=False, cache=folder)
    try:
        _build(target, weights, int8=int8, float_dir=float_dir)
    except OSError as exc:
        if int8:
            raise
        _log.warning("cannot write %s (%s); building the graph in memory", target, exc)
        from remem.embed.minilm.graph import build_graph

        return OnnxEncoder(build_graph(weights()).SerializeToString(), int8=False)
    return _open(target, int8=int8)


def optimized_dir(target: Path) -> Path:
    """Where the graph in `target`, as this ONNX Runtime rewrites it, is kept."""
    import onnxruntime

    return target / f"optimized-{onnxruntime.__version__}"


def _open(target: Path, *, int8: bool) -> OnnxEncoder:
    """The session of the graph in `target`: from its rewritten copy when there is one,
    else from the graph itself, saving the copy on the way (when the folder is writable).
    Raises what ONNX Runtime raises for the graph itself."""
    done = optimized_dir(target)
    if (done / GRAPH_FILE).is_file():
        try:
            return OnnxEncoder(done / GRAPH_FILE, int8=int8, optimized=True)
        except Exception as exc:  # damaged: open the graph itself and write it again
            _log.warning("the optimized graph in %s does not load (%s); rewriting it", done, exc)
    try:
        tmp = Path(tempfile.mkdtemp(dir=target, prefix=f".{done.name}.", suffix=".tmp"))
    except OSError:  # a cache we may read but not write: the graph itself, every time
        return OnnxEncoder(target / GRAPH_FILE, int8=int8)
    try:
        try:
            encoder = OnnxEncoder(target / GRAPH_FILE, int8=int8, save_optimized=tmp)
        except Exception:  # not saved (or the graph is bad: raised again just below)
            return OnnxEncoder(target / GRAPH_FILE, int8=int8)
        for made in (tmp, tmp / GRAPH_FILE, tmp / DATA_FILE):  # readable like any cache
            made.chmod(0o755 if made.is_dir() else 0o644)
        if done.exists():  # a damaged copy: this one takes its place
            shutil.rmtree(done, ignore_errors=True)
        with contextlib.suppress(OSError):  # another process put its copy there first
            os.replace(tmp, done)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return encoder


def _build(target: Path, weights: Callable[[], Weights], *, int8: bool, float_dir: Path) -> None:
    """Write the graph's folder; int8 is quantised from the float32 graph.

    Everything is written into a temporary folder beside `target` and renamed
    into place, so a reader sees either no folder or a complete one.
    """
    import onnx

    from remem.embed.minilm.graph import build_graph, quantize

    target.parent.mkdir(parents=True, exist_ok=True)
    if int8 and not (float_dir / GRAPH_FILE).is_file():
        _build(float_dir, weights, int8=False, float_dir=float_dir)
    _log.info("building the ONNX graph %s", target)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    try:
        if int8:
            quantize(float_dir / GRAPH_FILE, tmp / "single.onnx")
            proto = onnx.load(str(tmp / "single.onnx"))
            (tmp / "single.onnx").unlink()
        else:
            proto = build_graph(weights())
        onnx.save(
            proto,
            str(tmp / GRAPH_FILE),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=DATA_FILE,
            size_threshold=1024,
        )
        (tmp / VERSION_FILE).write_text(f"{GRAPH_VERSION}\n")
        for made in (tmp, tmp / GRAPH_FILE, tmp / DATA_FILE, tmp / VERSION_FILE):
            made.chmod(0o755 if made.is_dir() else 0o644)  # readable like any cache
        if target.exists():  # a damaged graph: set it aside, then take its place
            old = Path(
                tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".old")
            )
            os.replace(target, old / "graph")
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / GRAPH_FILE).is_file():
                raise
            # another process put its complete graph there first: use that one
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sweep(target.parent)


def sweep(cache: Path) -> list[Path]:
    """Remove from `cache` the graphs an older remem built (their `VERSION_FILE` says a
    `GRAPH_VERSION` below this one's; a folder without one was built by version 1), which
    no remem of this version opens again: 100-180 MB each. Those a newer remem built
    stay. Runs after each build, so each version's graphs go once. Returns the folders
    removed."""
    removed = []
    for folder in sorted(cache.glob("all-MiniLM-L6-v2-*")):
        if not _GRAPH_FOLDER.fullmatch(folder.name) or not folder.is_dir():
            continue
        try:
            version = int((folder / VERSION_FILE).read_text().strip())
        except FileNotFoundError:
            version = 1
        except (OSError, ValueError):  # unreadable: not ours to judge
            continue
        if version < GRAPH_VERSION:
            shutil.rmtree(folder, ignore_errors=True)
            _log.info("removed %s, a graph of an older remem (version %d)", folder, version)
            removed.append(folder)
    return removed
