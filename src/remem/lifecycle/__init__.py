"""Lifecycle of memory: deletion jobs with verification, summary regeneration, export."""

from remem.lifecycle.erasure import export, forget, fresh_start, regenerate_summaries

__all__ = ["export", "forget", "fresh_start", "regenerate_summaries"]
