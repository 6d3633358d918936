"""Numbered, named migrations; one ordered list per backend, each recorded when applied."""
