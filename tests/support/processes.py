"""Child processes and ports: a light environment for a child `remem`, a free loopback
port, what is left running, and stopping a server the test started."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path


def child_env() -> dict[str, str]:
    """The environment of a child `remem`: no embedding model (lexical recall, a light
    and fast child)."""
    return {**os.environ, "REMEM_MINILM_DIR": "/nonexistent", "HF_HUB_OFFLINE": "1"}


def free_port() -> int:
    """A loopback port no one listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def left_running(marker: str) -> list[str]:
    """Command lines of live processes that mention `marker` (Linux /proc)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmd and str(os.getpid()) != proc.name:
            found.append(cmd)
    return found


def stop(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """End a server the test started: terminate it, and kill it if it has not ended
    within 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
