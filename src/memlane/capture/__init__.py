"""Rule-based capture: transcript parsing, chunking, tool-event typing, summaries.

Pure functions with no storage and no LLM calls. The submodules are imported
directly (``from memlane.capture.classify import classify_tool_event``); this
package imports nothing so that a hook pays only for the module it uses.

- ``transcript``: streaming parser of Claude Code JSONL transcripts into turns.
- ``chunker``: turns into chunks of at most 512 estimated tokens.
- ``metadata``: file paths, tool names and error messages found in text.
- ``classify``: PostToolUse tool events into typed observations.
- ``dialects``: other agents' tool calls (Codex, Gemini, Kiro) in Claude Code's shape.
- ``summarize``: rule-based session summary and checkpoint.
"""
