"""Exact facts: one field's value and an actor's profile, by structured lookup."""
