"""A framework that cannot be installed beside the [dev] set gets a virtual environment
of its own, built once from pyproject.toml and kept in a cache directory.

CrewAI is one: every crewai with its unified `Memory` (1.10 on) pins openai<3 (the
[dev] set's openai-agents 0.24 needs openai>=3), 1.15.29+ opentelemetry>=1.45.1
(google-adk 2.13 pins <=1.44), 1.15.20-1.15.28 mcp~=1.28.1 (remem's server needs
>=1.30); 1.7-1.9 pin openai~=1.83. Only 1.0-1.6.1 resolve beside [dev], with the
memory interface CrewAI has since removed (`ExternalMemory`) and, through
instructor's jiter<0.15, openai held back to 3.3 for the whole set. Its tests
run a crew in a child process of that environment (`framework_python`), on remem's
source (`PYTHONPATH`), against the database, server and scripted model the test
started.

The environment holds remem's own dependencies, the named extras and nothing else;
its directory is named by a digest of those requirements and the interpreter, so a
change in pyproject.toml builds a new one. uv installs it (a [dev] dependency: it
resolved and installed CrewAI's 1.1 GB of packages in 13-15 s here, where pip took
3 min 46 s). It is built in a temporary directory and renamed when complete: an
interrupted build is never taken for a finished one. One process builds at a time (a
lock on the cache directory): another (an xdist worker, a second run) waits for it and
takes the environment it built. The cache is `$REMEM_TEST_VENVS`, or `remem-tests` in
the user's cache directory.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import platformdirs

from tests.support import ROOT

# what uv prints when the registry cannot be reached (then the tests are skipped)
OFFLINE = (
    "Temporary failure in name resolution",
    "failed to lookup address",
    "error sending request",
    "Network is unreachable",
    "Connection refused",
    "timed out",
)
INSTALL_SECONDS = 900


class RegistryUnreachable(RuntimeError):
    """uv could not reach the package registry to build the environment."""


def requirements(*extras: str) -> list[str]:
    """remem's own dependencies and those of `extras`, as pyproject.toml states them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in extras:
        reqs += project["optional-dependencies"][extra]
    return reqs


def cache_dir() -> Path:
    """Where the environments are kept."""
    return Path(os.environ.get("REMEM_TEST_VENVS") or platformdirs.user_cache_dir("remem-tests"))


def framework_python(name: str, *extras: str) -> Path:
    """The interpreter of the environment for `extras`, built if there is none yet;
    `RegistryUnreachable` when uv cannot reach the registry, RuntimeError (with
    uv's output) when the install fails otherwise."""
    try:
        from uv import find_uv_bin
    except ImportError as exc:
        raise RuntimeError(f"uv is a [dev] dependency: pip install -e '.[dev]' ({exc})") from exc

    reqs = requirements(*extras)
    key = hashlib.sha256("\n".join([sys.version, *reqs]).encode()).hexdigest()[:16]
    home = cache_dir() / f"{name}-{key}"
    python = home / "bin" / "python"
    if python.exists():
        return python
    home.parent.mkdir(parents=True, exist_ok=True)
    cache = os.open(home.parent, os.O_RDONLY)  # locked while building: no file left behind
    try:
        fcntl.flock(cache, fcntl.LOCK_EX)
        if not python.exists():  # no one built it while this process waited
            _build(home, find_uv_bin(), reqs)
    finally:
        os.close(cache)  # and the lock with it
    return python


def _build(home: Path, uv: str, reqs: list[str]) -> None:
    building = home.with_name(f"{home.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    venv.create(building, with_pip=False)
    # --native-tls: the system's certificates, as pip uses them here
    done = subprocess.run(
        [uv, "pip", "install", "--quiet", "--native-tls",
         "--python", str(building / "bin" / "python"), *reqs],
        capture_output=True, text=True, timeout=INSTALL_SECONDS,
    )  # fmt: skip
    if done.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        said = done.stdout + done.stderr
        if any(sign in said for sign in OFFLINE):
            raise RegistryUnreachable(f"pip could not reach the registry: {said[-500:]}")
        raise RuntimeError(f"installing {reqs} failed:\n{said[-4000:]}")
    try:
        building.rename(home)
    except OSError:  # a process without the lock (an older checkout) finished first
        shutil.rmtree(building, ignore_errors=True)


def run_in(python: Path, *args: str, timeout: float = 300, cwd: Path | None = None) -> str:
    """Run `python args...` (in `cwd`) with remem's source and the repository on
    `PYTHONPATH`, no telemetry leaving the process; its standard output, or
    AssertionError with its standard error when it fails."""
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "OTEL_SDK_DISABLED": "true",
        "HF_HUB_OFFLINE": "1",
    }
    done = subprocess.run(
        [str(python), *args], capture_output=True, text=True, timeout=timeout, env=environ,
        cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 0, f"{args[0]} failed ({done.returncode}):\n{done.stderr[-4000:]}"
    return done.stdout
