"""Is a prompt worth a recall? Cheap checks on the per-prompt hook path."""

from __future__ import annotations

import re

TRIVIAL_PROMPTS = frozenset(
    (
        "ok",
        "okay",
        "yes",
        "y",
        "no",
        "n",
        "thanks",
        "thank you",
        "continue",
        "go on",
        "go ahead",
        "proceed",
        "do it",
        "sure",
        "great",
        "nice",
        "done",
        "next",
        "k",
        "lgtm",
    )
)
TAGS = re.compile(r"<[^>\n]{1,80}>")


def is_meaningful_prompt(prompt: str) -> bool:
    """False for slash commands, tag-only noise and one-word acknowledgements."""
    if not isinstance(prompt, str):
        return False
    text = TAGS.sub(" ", prompt).strip()
    if not text or text.startswith("/"):
        return False
    if text.lower().strip(" .!?") in TRIVIAL_PROMPTS:
        return False
    return len(text) >= 8 or len(text.split()) >= 2
