"""Extraction strategies: what turns events into candidates.

`extract_offline` is the deterministic, model-free extractor (regular-expression
rules over user turns); its candidates carry `EXTRACTOR_VERSION` as provenance.
"""

from __future__ import annotations

from remem.extract.offline.extractor import EXTRACTOR_VERSION, extract_offline

__all__ = ["EXTRACTOR_VERSION", "extract_offline"]
