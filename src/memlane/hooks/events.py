"""Hook event names in every agent's spelling, and the stdin cap: the shared vocabulary.

Imports nothing: the launcher (``python -S``) and the relay client read it on
every prompt, and :mod:`memlane.hooks.agents`, the dispatcher and the worker use
the same table, so an event is named the same way everywhere.
"""

# Largest stdin a hook reads; larger input is refused, not parsed.
MAX_STDIN_BYTES = 8 * 1024 * 1024

# Canonical events (the CLI spelling) and their Claude Code names.
EVENTS: dict[str, str] = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "post-tool-use": "PostToolUse",
    "stop": "Stop",
    "subagent-stop": "SubagentStop",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
}

# The events whose capture only the hook's input may hold, and what it is (a prompt, a
# tool call, a reply): what the spool keeps when the hook gives up before storing it
# (memlane.hooks.spool.capture_kind decides per event; the dispatcher replays before them).
SPOOL_KINDS: dict[str, str] = {
    "user-prompt-submit": "prompt",
    "post-tool-use": "tool",
    "stop": "reply",
}
# How a spool file's name ends (memlane.hooks.spool): see is_spooled_capture.
SPOOL_SUFFIX = ".json"

# Every spelling we accept, squashed (lower case, no '-' or '_'), → (event, agent hint).
ALIASES: dict[str, tuple[str, str | None]] = {
    "sessionstart": ("session-start", None),
    "userpromptsubmit": ("user-prompt-submit", None),
    "posttooluse": ("post-tool-use", None),
    "stop": ("stop", None),
    "subagentstop": ("subagent-stop", None),
    "precompact": ("pre-compact", None),
    "sessionend": ("session-end", None),
    # Gemini CLI
    "beforeagent": ("user-prompt-submit", "gemini"),
    "aftertool": ("post-tool-use", "gemini"),
    "afteragent": ("stop", "gemini"),
    "precompress": ("pre-compact", "gemini"),
    # Kiro (IDE triggers and CLI agent hooks)
    "promptsubmit": ("user-prompt-submit", "kiro"),
    "agentstop": ("stop", "kiro"),
    "agentspawn": ("session-start", "kiro"),
}


# A database's captures are in ``spool/<the first SPOOL_TAG_CHARS of its database_key>``.
SPOOL_TAG_CHARS = 16


def database_key(database: str) -> str:
    """What names the ``database`` a spooled capture belongs to (a digest: a URL may hold a
    password)."""
    from memlane.digest import sha256_hex

    return sha256_hex(database.encode("utf-8", "surrogateescape"))


def is_spooled_capture(name: str) -> bool:
    """Whether ``name``, in a spool folder, names a capture: not a temporary file, the
    replay's lock or the ``rejected`` folder (the spool and the dispatcher's look)."""
    return name.endswith(SPOOL_SUFFIX) and not name.startswith(".")


def squash(text: str) -> str:
    """Lower case without '-' and '_' (``User_Prompt-Submit`` → ``userpromptsubmit``)."""
    return text.replace("-", "").replace("_", "").lower()


def split_event_arg(arg: str) -> tuple[str | None, str]:
    """``[agent:]event`` → (the agent prefix as written or None, the event part)."""
    name = arg.strip()
    if ":" in name:
        prefix, name = name.split(":", 1)
        return prefix, name
    return None, name


def lookup(arg: str) -> tuple[str, str | None] | None:
    """(canonical event, agent hint) of ``[agent:]event``; None for an unknown event."""
    return ALIASES.get(squash(split_event_arg(arg)[1]))
