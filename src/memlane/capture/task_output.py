"""Which background task's output a tool call reads by its file.

Claude Code writes a background command's output to ``…/tasks/<id>.output``; an agent
reads it back with ``TaskOutput`` (:mod:`memlane.capture.launches`), or by the file:
a ``Bash`` command that names it (``tail -30 …/tasks/bd0afab.output``) or a ``Read`` of
it. Such a call's own input does not say what ran, so what it shows is judged by the
launch (a ``pass show`` in the background prints a secret): the transcript's ingest
knows the launch, a PostToolUse hook does not (it records no such call).

Standard library only, nothing compiled before a call names an output file: the
PostToolUse hook asks this for every call.
"""

from __future__ import annotations

_OUTPUT_FILE = r"\btasks[/\\]([\w-]+)\.output\b"


def output_file_task(text: str) -> str:
    """The id of the background task whose output file ``text`` names; '' for none."""
    if ".output" not in text:
        return ""
    import re

    found = re.search(_OUTPUT_FILE, text)
    return found.group(1) if found else ""


def task_read_by_file(tool_name: str, args: object) -> str:
    """The id of the background task whose output file the call reads (a ``Bash``
    command naming it, a ``Read`` of it); '' for none."""
    if not isinstance(args, dict):
        return ""
    key = "command" if tool_name == "Bash" else "file_path" if tool_name == "Read" else ""
    value = args.get(key) if key else None
    return output_file_task(value) if isinstance(value, str) else ""
