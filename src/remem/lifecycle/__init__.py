"""Lifecycle of memory: deletion jobs with verification, summary regeneration, export."""

from remem.lifecycle.erasure import export, forget, regenerate_summaries

__all__ = ["export", "forget", "regenerate_summaries"]
