"""Where ``../shared``'s real Claude Code transcripts are, for the benchmarks that read them."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = next(
    (
        base / "shared" / "fixtures" / "claude-code-transcripts"
        for base in (ROOT.parent, ROOT.parents[1])  # a checkout, or a git worktree under wt/
        if (base / "shared" / "fixtures" / "claude-code-transcripts").is_dir()
    ),
    ROOT.parent / "shared" / "fixtures" / "claude-code-transcripts",
)
# The largest real session (2.7 MB): the ingest benchmarks' transcript.
FIXTURE = FIXTURES / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
