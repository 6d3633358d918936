"""Per-agent hook payloads, normalized into one ``HookEvent``.

Every agent memlane hooks into speaks a dialect of the same idea; this module is
the one place that knows the dialects of events (the dialects of tool calls —
names, arguments, results — are :mod:`memlane.capture.dialects`, shared with the
Codex rollout parser):

* **Claude Code** — stdin JSON with ``session_id``, ``transcript_path``, ``cwd``,
  ``hook_event_name``, ``prompt``, ``tool_name`` / ``tool_input`` /
  ``tool_response``, ``source``, ``reason``, ``last_assistant_message``;
  SubagentStop adds ``agent_id`` and ``agent_transcript_path``. Context goes out
  as ``{"hookSpecificOutput": {"hookEventName": E, "additionalContext": …}}``.
* **Codex CLI** — the same shape plus the required ``turn_id`` and ``model``;
  ``transcript_path`` may be null, else it is Codex's rollout (read by
  ``memlane.capture.codex``); SessionStart is always answered with
  ``hookSpecificOutput``. Shell tools arrive as ``Bash`` (older builds:
  ``shell`` / ``exec_command`` with an argv list), patches as ``apply_patch``.
* **Gemini CLI** — events ``SessionStart``, ``BeforeAgent`` (the prompt),
  ``AfterTool``, ``AfterAgent`` (end of a turn), ``PreCompress``, ``SessionEnd``;
  its own tool names (``run_shell_command``, ``write_file``, ``replace``…) and
  tool results (``llmContent``, ``returnDisplay``, ``error``);
  context in ``hookSpecificOutput.additionalContext``.
* **Kiro** — IDE hook files run a shell command with the prompt in the
  ``USER_PROMPT`` environment variable and often nothing on stdin; the CLI's
  agent hooks send camelCase events (``userPromptSubmit``, ``agentSpawn``). Kiro
  gives no session id, so one per project and day is derived. Context is plain
  stdout.
* **Cursor**, **Windsurf**, **Cline** — fields of their own, mapped onto the
  shape above by :mod:`memlane.hooks.payloads`. Cursor and Windsurf take no
  context from a hook (:attr:`HookEvent.injects`); Cline takes
  ``{"cancel": false, "contextModification": …}``.

The agent is named by a prefix of the event argument (``memlane hook
codex:stop``), else guessed from the event name and payload. Payloads are
untrusted: a field of the wrong type raises ``InvalidPayload`` (the dispatcher
logs it and exits 0). Stdlib only: this runs on every prompt.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from memlane.hooks.events import ALIASES, EVENTS, split_event_arg, squash

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Any
AGENTS = ("claude-code", "codex", "gemini", "kiro", "cursor", "windsurf", "cline")
# Agents that take no context from any hook: their hooks only capture.
NO_INJECTION = frozenset(("cursor", "windsurf"))
# Agents whose payloads :mod:`memlane.hooks.payloads` maps onto the common shape, each
# with a field only it sends (how its payload is recognised when the event argument
# names no agent): the module is loaded for these alone.
MAPPED_AGENTS: dict[str, str] = {
    "cursor": "conversation_id",
    "windsurf": "agent_action_name",
    "cline": "clineVersion",
}

# Native event names used in the answer, per agent (others fall back to Claude Code's).
_NATIVE_NAMES: dict[str, dict[str, str]] = {
    "gemini": {
        "user-prompt-submit": "BeforeAgent",
        "post-tool-use": "AfterTool",
        "stop": "AfterAgent",
        "pre-compact": "PreCompress",
    },
}


class InvalidPayload(ValueError):
    """A hook payload that cannot be understood (wrong type, unknown event)."""


@dataclass(frozen=True, slots=True)
class HookEvent:
    """One hook invocation, whatever agent sent it."""

    agent: str
    event: str  # canonical: a key of EVENTS
    session_id: str
    cwd: str | None = None  # the project's directory
    tool_cwd: str | None = None  # where a tool ran, when the agent says (metadata only)
    transcript_path: str | None = None
    prompt: str | None = None
    tool_name: str | None = None
    tool_input: Any = None
    tool_response: Any = None
    source: str | None = None
    reason: str | None = None
    last_assistant_message: str | None = None
    agent_id: str | None = None
    agent_transcript_path: str | None = None
    turn_id: str | None = None
    model: str | None = None
    tool_use_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def injects(self) -> bool:
        """Whether the agent takes context from this hook's answer."""
        return self.agent not in NO_INJECTION

    @property
    def native_event(self) -> str:
        """The event name the agent expects back in ``hookEventName``."""
        return _NATIVE_NAMES.get(self.agent, {}).get(self.event, EVENTS[self.event])


def parse_event_arg(arg: str) -> tuple[str, str | None]:
    """``[agent:]event`` in any spelling → (canonical event, agent or None)."""
    prefix, name = split_event_arg(arg)
    agent = _agent_name(prefix) if prefix is not None else None
    found = ALIASES.get(squash(name))
    if found is None:
        raise InvalidPayload(
            f"unknown hook event {arg!r} (one of: {', '.join(EVENTS)};"
            " prefix an agent as codex:stop)"
        )
    event, hint = found
    return event, agent or hint


def _agent_name(text: str) -> str:
    squashed = squash(text)
    for agent in AGENTS:
        if squash(agent) == squashed or (agent == "claude-code" and squashed == "claude"):
            return agent
    raise InvalidPayload(f"unknown agent {text!r} (one of: {', '.join(AGENTS)})")


def _opt_str(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidPayload(f"hook field {key!r} must be a string, got {type(value).__name__}")
    return value


def _opt_path(payload: dict[str, Any], key: str) -> str | None:
    """A path field: a string without NUL (the OS cannot open such a path)."""
    value = _opt_str(payload, key)
    if value is not None and "\0" in value:
        raise InvalidPayload(f"hook field {key!r} contains a NUL character")
    return value


def normalize(
    event_arg: str,
    payload: dict[str, Any],
    environ: dict[str, str] | None = None,
    *,
    origin: str | None = None,
) -> HookEvent:
    """The ``HookEvent`` for ``memlane hook <event_arg>`` given its stdin ``payload``.

    ``origin``: the directory of a payload that names none, as the hook process saw it
    (default: this process's, :func:`memlane.hooks.relay.origin_directory`; the worker
    passes its client's).
    """
    env = os.environ if environ is None else environ
    event, agent = parse_event_arg(event_arg)
    native = payload.get("hook_event_name")
    if isinstance(native, str) and native and agent is None:
        found = ALIASES.get(squash(native))
        if found is not None and found[1] is not None:
            agent = found[1]
    if agent is None:
        agent = next((name for name, mark in MAPPED_AGENTS.items() if mark in payload), None)
    if agent in MAPPED_AGENTS:
        from memlane.hooks.payloads import translate

        payload = translate(agent, payload)  # Cursor's, Windsurf's and Cline's fields
    if agent is None:
        if "turn_id" in payload:
            agent = "codex"
        elif not payload and env.get("USER_PROMPT") is not None:
            agent = "kiro"
        else:
            agent = "claude-code"
    cwd = _opt_path(payload, "cwd")
    if not cwd:
        from memlane.hooks.relay import origin_directory

        cwd = origin if origin is not None else origin_directory(env)
    prompt = _opt_str(payload, "prompt")
    if agent == "kiro" and prompt is None:
        prompt = env.get("USER_PROMPT")
    session_id = _opt_str(payload, "session_id") or _opt_str(payload, "sessionId")
    if not session_id:
        if agent != "kiro":
            raise InvalidPayload("hook payload has no session_id")
        session_id = _derived_session_id(agent, cwd)
    tool_name = _opt_str(payload, "tool_name")
    tool_input = payload.get("tool_input")
    tool_response = payload.get("tool_response", payload.get("tool_output"))
    if tool_name is not None:
        # Tool events only: the prompt hook does not load the tool tables.
        from memlane.capture.dialects import normalize_tool

        tool_name, tool_input, tool_response = normalize_tool(
            tool_name, tool_input, tool_response, payload.get("mcp_context")
        )
    transcript = _opt_path(payload, "transcript_path") or None
    if agent not in ("claude-code", "codex"):
        # Gemini's chat files are not parsed (Codex rollouts are: memlane.capture.codex).
        transcript = None
    return HookEvent(
        agent=agent,
        event=event,
        session_id=session_id,
        cwd=cwd,
        tool_cwd=_opt_path(payload, "tool_cwd"),
        transcript_path=transcript,
        prompt=prompt,
        tool_name=tool_name,
        tool_input=tool_input,
        tool_response=tool_response,
        source=_opt_str(payload, "source") or _opt_str(payload, "trigger"),
        reason=_opt_str(payload, "reason"),
        last_assistant_message=_opt_str(payload, "last_assistant_message")
        or _opt_str(payload, "prompt_response"),
        agent_id=_opt_str(payload, "agent_id"),
        agent_transcript_path=_opt_path(payload, "agent_transcript_path"),
        turn_id=_opt_str(payload, "turn_id"),
        model=_opt_str(payload, "model"),
        tool_use_id=_opt_str(payload, "tool_use_id") or _opt_str(payload, "call_id"),
    )


def _derived_session_id(agent: str, cwd: str) -> str:
    """Kiro sends no session id: one session per agent, project directory and day."""
    import hashlib
    import time

    digest = hashlib.sha256(os.path.realpath(cwd).encode("utf-8", "replace")).hexdigest()[:10]
    return f"{agent}-{digest}-{time.strftime('%Y%m%d')}"
