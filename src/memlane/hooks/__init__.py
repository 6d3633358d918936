"""Agent hooks, the client side: ``memlane hook <event>`` for Claude Code, Codex CLI,
Gemini CLI and Kiro.

- ``launch``: the command agents run (``python -S …/launch.py EVENT``), a script that
  calls ``launcher``: it makes the one relay attempt to the worker, then runs the
  hook in-process.
- ``relay``: the relay client and its wire format (the worker's end is
  :mod:`memlane.worker.relay_server`).
- ``dispatch``: stdin → handler → stdout, always exit 0, watchdog, error log.
- ``events``: the table of event spellings per agent.
- ``agents``: per-agent payload normalization (the one place that knows dialects).
- ``handlers``: one thin handler per event, calling the Memory facade.
- ``render``: the injected context and each agent's answer format.
- ``log``: the hooks' rotated one-line error log.
- ``tail``: ``python -m memlane.hooks.tail SESSION`` — the detached ingest that
  SessionEnd hands the rest of the transcript to.

This package imports nothing itself, so a hook pays only for what it uses.
"""
