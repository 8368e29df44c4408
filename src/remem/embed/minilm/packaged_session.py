"""The int8 all-MiniLM-L6-v2 file on ONNX Runtime, opened fast from the second process on.

ONNX Runtime rewrites a graph each time a session opens it; for this file that means
dequantising its 23 M int8 weights (constant folding), 0.6-0.7 s of every cold start
(a fresh `remem recall`), against 0.07 s to open a graph already rewritten. The first
process to open the file therefore checks it (`check`: its sha256, before it is ever
run), opens it with `ORT_ENABLE_EXTENDED` and saves the rewritten graph (float32
weights as external data, about 90 MB) in the model cache folder
(`onnx_encoder.cache_dir()`), written to a temporary folder and renamed into place;
later processes open that copy with the rewriting switched off, and make the same
vectors. The copy's folder is named by a key of the file's path, size and modification
time and ONNX Runtime's version, so a changed or reinstalled file is checked and
rewritten again. A copy that fails to open is rewritten; a cache that cannot be
written leaves every process to rewrite the file in memory, after checking it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

_log = logging.getLogger("remem.embed")

GRAPH_FILE = "model.onnx"
DATA_FILE = "weights.bin"
RUNTIME = "onnxruntime-int8-packaged"

F32 = npt.NDArray[np.float32]


def session_options(*, optimized: bool, save_to: Path | None) -> Any:
    """ONNX Runtime options for one session on one thread: a graph opened as it is when
    `optimized` (a saved rewritten copy), else rewritten (`ORT_ENABLE_EXTENDED`) and, when
    `save_to` is given, saved there (`GRAPH_FILE`, weights in `DATA_FILE`)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: nothing on a CLI's stderr
    level = ort.GraphOptimizationLevel
    options.graph_optimization_level = (
        level.ORT_DISABLE_ALL if optimized else level.ORT_ENABLE_EXTENDED
    )
    if save_to is not None:
        options.optimized_model_filepath = str(save_to / GRAPH_FILE)
        entry = options.add_session_config_entry
        entry("session.optimized_model_external_initializers_file_name", DATA_FILE)
        entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    return options


class PackagedSession:
    """The model as one ONNX Runtime session on one thread (see `onnx_encoder`)."""

    runtime = RUNTIME

    def __init__(
        self, model: Path, *, optimized: bool = False, save_to: Path | None = None
    ) -> None:
        """Open `model`: as it is when `optimized` (a saved rewritten copy), else
        rewritten (`ORT_ENABLE_EXTENDED`), saving the result in `save_to` when given.
        Raises what ONNX Runtime raises."""
        import onnxruntime as ort

        self._session = ort.InferenceSession(
            str(model),
            session_options(optimized=optimized, save_to=save_to),
            providers=["CPUExecutionProvider"],
        )

    def encode(self, token_ids: npt.NDArray[np.int64], mask: F32) -> F32:
        """(batch, length) ids and 0/1 mask to (batch, length, 384) hidden states."""
        feed = {
            "input_ids": token_ids,
            "attention_mask": mask.astype(np.int64),
            "token_type_ids": np.zeros_like(token_ids),
        }
        (hidden,) = self._session.run(["last_hidden_state"], feed)
        return np.asarray(hidden, dtype=np.float32)


def saved_dir(model: Path, name: str, cache: Path) -> Path:
    """Where the rewritten copy of `model` is kept (it may not exist yet)."""
    import onnxruntime

    resolved = model.resolve()
    st = resolved.stat()
    source = f"{resolved}|{st.st_size}|{st.st_mtime_ns}|{onnxruntime.__version__}"
    return cache / f"{name}-{hashlib.sha256(source.encode()).hexdigest()[:16]}"


def open_session(model: Path, name: str, cache: Path, check: Callable[[], None]) -> PackagedSession:
    """The session of `model`: its saved rewritten copy, or `model` itself once `check`
    passed (it raises when the file is not the expected one), saving the copy."""
    done = saved_dir(model, name, cache)
    if (done / GRAPH_FILE).is_file():
        try:
            return PackagedSession(done / GRAPH_FILE, optimized=True)
        except Exception as exc:  # damaged: check and rewrite the file again
            _log.warning("the saved graph in %s does not load (%s); rewriting it", done, exc)
    check()
    try:
        done.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=done.parent, prefix=f".{done.name}.", suffix=".tmp"))
    except OSError:  # a cache we cannot write: rewritten in memory, every time
        return PackagedSession(model)
    try:
        try:
            session = PackagedSession(model, save_to=tmp)
        except Exception:  # not saved (or the file is bad: raised again just below)
            return PackagedSession(model)
        for made in (tmp, tmp / GRAPH_FILE, tmp / DATA_FILE):  # readable like any cache
            made.chmod(0o755 if made.is_dir() else 0o644)
        if done.exists():  # a damaged copy: this one takes its place
            shutil.rmtree(done, ignore_errors=True)
        with contextlib.suppress(OSError):  # another process put its copy there first
            os.replace(tmp, done)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return session
