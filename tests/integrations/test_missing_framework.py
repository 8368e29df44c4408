"""An adapter whose framework is not installed says what to install when imported."""

from __future__ import annotations

import importlib
import sys

import pytest


@pytest.mark.parametrize(
    ("adapter", "framework", "extra"),
    [
        ("autogen", "autogen_core", "autogen"),
        ("llamaindex", "llama_index", "llamaindex"),
        ("crewai", "crewai", "crewai"),
    ],
)
def test_importing_an_adapter_without_its_framework_names_the_extra(
    adapter: str, framework: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m == framework or m.startswith(framework + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, framework, None)  # import of it raises ImportError
    monkeypatch.delitem(sys.modules, f"remem.integrations.{adapter}", raising=False)
    with pytest.raises(ImportError, match=rf"pip install 'remem\[{extra}\]'"):
        importlib.import_module(f"remem.integrations.{adapter}")
