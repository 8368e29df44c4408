"""The Dockerfile and docker-compose.yml run only valid `remem` invocations (issue 38,
item 5). No container runtime is reachable here, so nothing is built or started: every
command they give remem is parsed by the click CLI exactly as `remem` would parse it
(options, types, choices, subcommands), without running it."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

import click
import pytest
import yaml

from remem.cli.main import cli
from remem.store.open import is_server_url
from tests.support import ROOT

DOCKERFILE = (ROOT / "Dockerfile").read_text()
COMPOSE_TEXT = (ROOT / "docker-compose.yml").read_text()
COMPOSE: dict[str, Any] = yaml.safe_load(COMPOSE_TEXT)


def parse(args: list[str]) -> str:
    """Parse `remem ARGS` down to the command that would run, without running it; the
    command's path. A bad option, value or command is click's UsageError."""
    ctx = cli.make_context("remem", list(args))
    command: click.Command = cli
    path = ["remem"]
    while isinstance(command, click.Group):
        rest = [*ctx._protected_args, *ctx.args]  # click 8.2+: the command and its args
        if not rest:
            raise click.UsageError(f"{' '.join(path)} needs a command")
        name, sub, rest = command.resolve_command(ctx, rest)
        assert name is not None and sub is not None
        ctx = sub.make_context(name, rest, parent=ctx)
        command, path = sub, [*path, name]
    return " ".join(path)


def _instruction(name: str) -> list[str]:
    (line,) = re.findall(rf"^{name} (\[.*\])$", DOCKERFILE, re.MULTILINE)
    found: list[str] = json.loads(line)
    return found


def _remem_services() -> dict[str, dict[str, Any]]:
    """The services that run the image built from the Dockerfile."""
    return {n: s for n, s in COMPOSE["services"].items() if "build" in s}


def invocations() -> list[tuple[str, list[str]]]:
    """Every remem command line the two files run, and the ones their comments tell."""
    entry = _instruction("ENTRYPOINT")
    assert entry == ["remem"]
    found = [("Dockerfile CMD", _instruction("CMD"))]
    for name, service in _remem_services().items():
        assert "entrypoint" not in service, name  # the image's: remem
        found.append((f"compose {name}", list(service["command"])))
    for told in re.findall(r"`docker compose run --rm api ([^`]+)`", COMPOSE_TEXT):
        found.append(("compose comment", told.split()))
    return found


@pytest.mark.parametrize("where,args", invocations(), ids=lambda x: str(x))
def test_every_remem_command_they_run_is_valid(where: str, args: list[str]) -> None:
    assert parse(args).startswith("remem "), where


def test_a_wrong_invocation_is_caught() -> None:
    """The check can fail: what remem would refuse, it refuses."""
    for bad in (["serve", "--port", "http"], ["serve", "--no-such"], ["migrate", "x"], ["keys"]):
        with pytest.raises(click.UsageError):
            parse(bad)
    assert parse(["keys", "create", "--tenant", "acme"]) == "remem keys create"


def test_the_services_deploy_as_docs_operations_says() -> None:
    services = _remem_services()
    commands = {n: s["command"] for n, s in services.items()}
    assert commands["migrate"] == ["migrate"]
    assert {"--no-worker", "--no-migrate"} <= set(commands["api"])
    assert commands["worker"] == ["worker"]
    for name in ("api", "worker"):  # after the migrations, never beside them
        assert services[name]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )
    db = services["api"]["environment"]["REMEM_DB"]
    assert is_server_url(db) and "pgvector/pgvector" in COMPOSE["services"]["db"]["image"]
    # remem connects as an ordinary role: a superuser bypasses row-level security
    role = re.match(r"postgresql://([^:]+):", db)
    assert role is not None and role[1] != "postgres"
    init = (ROOT / "deploy" / "initdb.sql").read_text()
    assert f"CREATE ROLE {role[1]} LOGIN" in init
    assert "CREATE EXTENSION IF NOT EXISTS vector" in init


def test_the_image_installs_extras_that_exist_and_copies_files_that_do() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    (wanted,) = re.findall(r'pip install "\.\[([a-z0-9,-]+)\]"', DOCKERFILE)
    assert set(wanted.split(",")) <= set(extras)
    assert {"server", "postgres", "embed"} <= set(wanted.split(","))
    for line in re.findall(r"^COPY (.+) \S+$", DOCKERFILE, re.MULTILINE):
        for name in line.split():
            assert (ROOT / name).exists(), name
