"""The memory configuration file: effective values, env fallbacks, refusals with a line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.cli.main import main
from remem.config.config import load_config
from remem.errors import ConfigError, InvalidInput
from remem.extract.llm import prompt_for


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "remem.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_no_file_means_the_offline_extractor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REMEM_CONFIG", raising=False)
    monkeypatch.delenv("REMEM_LLM_BASE_URL", raising=False)
    config = load_config()
    assert config.strategy_names == ("offline",) and config.llm is None


def test_an_endpoint_from_the_environment_enables_the_four_strategies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("REMEM_CONFIG", raising=False)
    monkeypatch.setenv("REMEM_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("REMEM_LLM_MODEL", "llama3.1")
    monkeypatch.setenv("REMEM_LLM_API_KEY", "sk-secret-value")
    config = load_config()
    assert config.strategy_names == ("semantic", "preference", "summary", "episodic")
    assert config.llm is not None and config.llm.model == "llama3.1"
    shown = json.dumps(config.as_dict())
    assert "sk-secret-value" not in shown and '"api_key": "set"' in shown


def test_a_file_sets_models_namespaces_prompts_and_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", "k-123")
    (tmp_path / "facts.md").write_text("Only extract facts about pets.", encoding="utf-8")
    path = _write(
        tmp_path,
        """
[llm]
base_url = "http://localhost:11434/v1"
model = "llama3.1"
api_key_env = "MY_KEY"

[strategies.semantic]
model = "qwen2.5"
prompt_file = "facts.md"

[strategies.preference]
namespace = "/tenants/{tenant}/actors/{actor}/likes"
prompt_append = "Also note favourite brands."

[strategies.summary]
enabled = false

[retry]
attempts = 6
""",
    )
    config = load_config(path)
    assert config.strategy_names == ("semantic", "preference")
    assert config.llm is not None and config.llm.api_key == "k-123"
    assert config.retry.attempts == 6
    semantic = config.strategy("semantic")
    text, version = prompt_for("semantic", semantic)
    assert text == "Only extract facts about pets." and version.startswith("semantic/custom-")
    text, version = prompt_for("preference", config.strategy("preference"))
    assert text.endswith("Also note favourite brands.\n") and version.startswith("preference/1+")
    assert config.as_dict()["strategies"]["semantic"]["model"] == "qwen2.5"


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("[llm]\nbase_url = 'http://x/v1'\nmodel = 'm'\ntimeout = -1\n", 4, "greater than 0"),
        ("[llm]\nbase_url = 'http://x/v1'\nmodle = 'm'\n", 3, "Extra inputs"),
        ("[strategies.semantik]\n", 1, "unknown strategy 'semantik'"),
        ("[llm]\nbase_url = 'http://x/v1'\nmodel = 'm'\n[strategies.semantic]\n"
         "namespace = '/tenants/{tenant}/actors/{other}/x'\n", 5, "unknown placeholder"),
        ("[llm]\nbase_url = 'http://x/v1'\nmodel = 'm'\n[strategies.semantic]\n"
         "namespace = '/tenants/{tenant}/shared'\n", 5, "must start with"),
        ("[retry]\nattempts = 'many'\n", 2, "valid integer"),
        ("[llm\nmodel = 1\n", 1, "invalid TOML"),
    ],
)  # fmt: skip
def test_an_invalid_file_is_refused_with_its_line_and_reason(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert f"line {line}" in str(err.value) and reason in str(err.value)


def test_a_strategy_without_a_model_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REMEM_LLM_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="needs a language model"):
        load_config(_write(tmp_path, "[strategies.semantic]\n"))


def test_config_show_prints_the_effective_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("REMEM_LLM_BASE_URL", raising=False)
    path = _write(tmp_path, "[llm]\nbase_url = 'http://x/v1'\nmodel = 'm'\napi_key = 'sk-abc'\n")
    assert main(["--config", str(path), "--json", "config", "show"]) == 0
    out = capsys.readouterr().out
    data = json.loads(out)
    assert data["llm"]["model"] == "m" and data["llm"]["api_key"] == "set"
    assert "sk-abc" not in out
    assert list(data["strategies"]) == ["semantic", "preference", "summary", "episodic"]
    bad = _write(tmp_path, "[llm]\ntimeout = 0\n")
    assert main(["--config", str(bad), "--json", "config", "show"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "config_error" and "line 2" in error["message"]


def test_a_base_url_with_credentials_is_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    from remem.llm.client import ChatModel
    from remem.llm.settings import LLMSettings

    with pytest.raises(InvalidInput) as refused:
        LLMSettings(base_url="ftp://bob:hunter2@models.internal/v1", model="m")
    assert "hunter2" not in str(refused.value) and "http(s) URL" in str(refused.value)
    monkeypatch.delenv("REMEM_CONFIG", raising=False)
    monkeypatch.setenv("REMEM_LLM_BASE_URL", "https://bob:hunter2@models.internal/v1?key=tok9")
    monkeypatch.setenv("REMEM_LLM_MODEL", "llama3.1")
    config = load_config()
    assert config.llm is not None
    shown = json.dumps(config.as_dict()) + repr(ChatModel(config.llm))
    assert "hunter2" not in shown and "tok9" not in shown and "bob" not in shown
    assert "https://***@models.internal/v1?***" in shown
    assert config.llm.base_url.endswith("?key=tok9")  # what is used stays whole
