"""Exact facts: one field's value and an actor's profile, by structured lookup."""

from __future__ import annotations

from remem.facts.request import FactAsk, ProfileAsk, RecordsAsk

__all__ = ["FactAsk", "ProfileAsk", "RecordsAsk"]
