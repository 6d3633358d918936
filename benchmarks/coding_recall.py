"""Coding recall through the real hooks: is the fact in what the prompt hook injects?

Run: ``.venv/bin/python benchmarks/coding_recall.py [--show 5] [--json] [--diagnose]``

Printed, not asserted (a benchmark, not a test). Data: ``benchmarks/data/coding_recall.json``
— hand-written questions about the real Claude Code transcripts in
``shared/fixtures/claude-code-transcripts`` (each with key phrases: the fact itself) and
prompts about unrelated coding work. Each question has a split: ``dev`` (tune on these),
``holdout``, ``fresh`` and ``fresh2`` (report them, never tune on them; ``fresh`` was written
later, by someone else, and is read only as a total; ``fresh2`` is a second held-out set,
written by a third author from the transcripts alone, who never ran the system on it, also
read only as a total). The ``fresh`` questions were read one by one on 2 December,
after their first total, and count as tuned on since. ``dev2`` is a second tuning set,
written on 6 December by a fourth author from the transcripts alone (blind to the code and
its results), when the first dev set had been tuned on for weeks. Unrelated prompts have a
split too: the dev ones (tuned against; a second, same-stack dev group was added with
fresh2), the dev2 author's and the fresh2 author's, reported apart in the table.

What it does, per capture mode × recall mode, each in its own temporary ``HOME`` and
``MEMLANE_HOME`` (nothing of the user's is read or written):

1. ``memlane setup`` writes the Claude Code hooks into ``$HOME/.claude/settings.json``; the
   exact command lines it wrote are read back and every hook below runs through them, in a
   shell, with the stdin JSON Claude Code sends (DESIGN §7), from a project directory.
2. **Capture.** ``live`` replays each transcript as Claude Code would have fired the hooks
   while it was written: SessionStart (startup) → UserPromptSubmit per typed prompt (queued
   prompts included; task notifications and local commands are not prompts) → PostToolUse
   per successful tool call with Claude Code's ``tool_response`` (the transcript's
   ``toolUseResult``; failed calls fire PostToolUseFailure, which memlane does not hook) →
   SubagentStop before a Task result whose subagent transcript exists → PreCompact and
   SessionStart (compact) around an auto-compaction → Stop at the end of each turn the user
   did not interrupt, with ``transcript_path`` on a copy of the transcript grown up to that
   line and ``last_assistant_message`` → SessionEnd. ``transcript`` (transcript-only):
   SessionStart, one Stop with the whole transcript, SessionEnd; the session's subagent
   transcripts lie next to the copy (``<session>/subagents/``) from the start, as Claude
   Code keeps them whether hooks ran or not. Paths under the session's
   original working directory are mapped to the replay's project directory, and every
   ``timestamp`` in the transcripts is moved by one offset so that the newest session ends
   when the replay starts: the hooks date what they store by the clock (now), and a live
   session's transcript is written at that same time, so transcript units and the
   observations of the same calls must not be months apart (the sessions keep their order
   and spacing; ``--original-dates`` keeps the dates they were recorded at). Hooks that
   Claude Code runs asynchronously run one after another here, so the result does not
   depend on timing; the benchmark then waits for the detached processes hooks start.
3. **Recall.** The captured database is copied for each recall mode. ``keyword``: no
   worker, and ``MEMLANE_WORKER_AUTOSTART=0`` so SessionStart cannot start one (the relay
   finds no worker; hooks run in their own process with keyword recall). ``hybrid``:
   ``memlane embed --backfill``, then ``memlane serve``; the benchmark waits until the
   worker takes this environment's hooks (``memlane status``: "relayed to the worker") and
   its embedding loop is ``idle`` (hybrid search warmed, nothing pending: until then the
   worker recalls in keyword mode). The worker is stopped at the end, also on Ctrl-C,
   SIGTERM or an error, and any process the run started is ended by pid.
   ``--later N`` first imports N chat turns of the LongMemEval haystacks (``shared/benchmarks``)
   into the project with ``memlane import jsonl`` (README's plain JSONL records): months of
   later work, newer than every captured session, that shares everyday words with the
   questions and holds none of their facts. Long-term memory must still answer.
4. **Ask.** Each question in a new session: SessionStart (its pack is kept), then
   UserPromptSubmit with the question. A question is answered when one of its key phrases
   is in the injected text (``hookSpecificOutput.additionalContext`` or plain stdout),
   case-insensitive, whitespace-normalised, as a whole phrase. An unrelated prompt counts
   when anything is injected. After each ask the worker's deferred writes are awaited and
   the access counts the hook recorded are reset, so every prompt meets the captured
   database (``--keep-access``: let them accumulate; injected memories then rank higher
   for the next prompts). The hook's search is then repeated in this process with the
   hook's arguments: "injection = this mode's ranking" counts the prompts whose injection
   is what that mode ranks first (or nothing when nothing clears the floor) — it confirms
   the recall mode, since a relayed prompt that misses its 250 ms falls back to keyword
   recall in its own process (``--relay-timeout-ms`` on a loaded machine).

5. **Feedback** (``--no-feedback`` skips it; a table of its own). A simulated user then
   marks noise, with the real ``memlane feedback ID --noise --injection N``, every memory
   injected for an unrelated prompt and for a question whose injection missed the fact (the
   entries and the memories they showed are read back with ``memlane log --json``), and asks
   every prompt again in a new session: "noise suppressed on re-ask" counts the marked
   (prompt, memory) pairs whose memory is not injected again for the very prompt it was
   marked for (the mark holds for prompts sharing at least half of the words, so the same
   prompt is the easiest case: a marked memory can still come back as the neighbour of
   another unit), "unrelated injected" the unrelated prompts that get something before and
   after the marks (after: other memories), "answered after marks" the questions answered
   before that still are (marks for one prompt must not cost another its answer), "missed:
   now" the missed ones answered now (another memory moved up), and "injected, not logged"
   the injections the log has no entry for (should be 0).

Reported per combination: answered (per split and all), unrelated prompts with an
injection, mean and max injected characters (over prompts that got an injection), p50 wall
time of the prompt hook; whether the next SessionStart pack holds each session's summary
(task, outcomes, learnings: marker phrases in the data file) and its size. ``--show N``
prints N examples per combination (failures first). ``--diagnose`` runs ``memlane search``
for each failed question and says where the fact sits (rank, score, why it was not
injected). ``--json`` writes everything to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "coding_recall.json"
RESULTS = ROOT / "benchmarks" / "results"
CAPTURES = ("live", "transcript")
RECALLS = ("keyword", "hybrid")
PROJECT = "spotter"
MODEL = "claude-opus-4-6"
# The kinds Memory.recall searches (service.py), for the diagnosis.
RECALL_KINDS = ("observation", "turn", "knowledge", "summary", "note")
# Environment of every memlane process the benchmark starts (beyond HOME and MEMLANE_HOME).
# Maintenance would otherwise start a detached run on the first Stop whose timing decides
# what the questions see; --maintenance turns it back on.
BASE_ENV = {"MEMLANE_WORKER_AUTOSTART": "0"}
NO_MAINTENANCE = {"MEMLANE_MAINTENANCE_ENABLED": "0"}
WAIT_S = 120.0
PROMPT_RELAY_TIMEOUT_S = 0.25  # memlane.hooks.relay.TIMEOUTS_S["user-prompt-submit"]


def find_fixtures() -> Path | None:
    """``shared/fixtures/claude-code-transcripts`` next to this checkout or above it."""
    for base in ROOT.parents:
        candidate = base / "shared" / "fixtures" / "claude-code-transcripts"
        if candidate.is_dir():
            return candidate
    return None


def sandbox_root() -> Path:
    """A new private directory ``memlane-coding-recall-<8 hex digits>`` in the temp dir.

    The replay's paths are stored in memories, so the name is part of what search ranks:
    ``mkdtemp``'s random part may hold ``_``, which splits it into a varying number of
    words and moves every length-normalised score a little from run to run. Eight hex
    digits are always one word, so two runs of the same code inject the same texts.
    """
    base = Path(tempfile.gettempdir())
    while True:
        candidate = base / f"memlane-coding-recall-{uuid.uuid4().hex[:8]}"
        try:
            candidate.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return candidate


def write_later_records(path: Path, count: int, seed: int = 7) -> int:
    """``count`` plain JSONL records (README, "JSONL records") of chat turns from the
    LongMemEval dev150 haystacks (``shared/benchmarks``, found and read as
    ``retrieval_longmemeval.py`` does), at least 80 characters each, distinct, in a seeded
    order: months of later work in the project that shares everyday words with the
    questions and holds none of their facts. Returns how many were written."""
    import random

    from retrieval_longmemeval import DEFAULT_DATA, load_questions

    items = load_questions(DEFAULT_DATA)  # a clear exit when the data is absent
    turns = list(
        dict.fromkeys(
            turn["content"]
            for item in items
            for session in item["haystack_sessions"]
            for turn in session
            if len(turn["content"]) >= 80
        )
    )
    random.Random(seed).shuffle(turns)
    chosen = turns[:count]
    with path.open("w", encoding="utf-8") as out:
        for number, text in enumerate(chosen):
            record = {
                "id": f"later-{number}",
                "session": f"later-{number // 20}",
                "role": "user" if number % 2 == 0 else "assistant",
                "text": text[:1500],
            }
            out.write(json.dumps(record) + "\n")
    return len(chosen)


# -- data -------------------------------------------------------------------------------


SPLITS = ("dev", "dev2", "holdout", "fresh", "fresh2")


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    key: tuple[str, ...]
    transcript: str
    kind: str
    split: str


@dataclass(frozen=True)
class Unrelated:
    prompt: str
    split: str  # who wrote it: "dev" (tuned against) or a held-out split


@dataclass(frozen=True)
class Data:
    questions: tuple[Question, ...]
    unrelated: tuple[Unrelated, ...]
    summary_markers: dict[str, dict[str, tuple[str, ...]]]


def load_data(path: Path) -> Data:
    raw = json.loads(path.read_text(encoding="utf-8"))
    questions = tuple(
        Question(
            id=item["id"],
            question=item["question"],
            key=tuple(item["key"]),
            transcript=item["transcript"],
            kind=item["kind"],
            split=item["split"],
        )
        for item in raw["questions"]
    )
    ids = Counter(q.id for q in questions)
    if dupes := [name for name, n in ids.items() if n > 1]:
        raise SystemExit(f"{path}: duplicate question ids {dupes}")
    if bad := [q.id for q in questions if q.split not in SPLITS or not q.key]:
        raise SystemExit(f"{path}: questions without key or with a bad split: {bad}")
    markers = {
        name: {part: tuple(phrases) for part, phrases in parts.items()}
        for name, parts in raw.get("summary_markers", {}).items()
    }
    unrelated = tuple(
        Unrelated(item, "dev")
        if isinstance(item, str)
        else Unrelated(item["prompt"], item["split"])
        for item in raw["unrelated"]
    )
    if bad_prompts := [u.prompt for u in unrelated if u.split not in SPLITS]:
        raise SystemExit(f"{path}: unrelated prompts with a bad split: {bad_prompts}")
    return Data(questions, unrelated, markers)


def normalise(text: str) -> str:
    return " ".join(text.split()).lower()


def phrase_pattern(phrase: str) -> re.Pattern[str]:
    """``phrase`` as a whole phrase: no word character glued to either end."""
    body = re.escape(normalise(phrase))
    head = r"(?<!\w)" if re.match(r"\w", phrase.strip()) else ""
    tail = r"(?!\w)" if re.search(r"\w$", phrase.strip()) else ""
    return re.compile(head + body + tail)


def found_key(text: str, keys: Sequence[str]) -> str | None:
    """The first key phrase found in ``text`` (normalised), or None."""
    flat = normalise(text)
    for key in keys:
        if phrase_pattern(key).search(flat):
            return key
    return None


def transcript_text(path: Path) -> str:
    """Every string value of a JSONL transcript, joined: what a key must be found in."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                walk(json.loads(line))
    return "\n".join(parts)


def check_keys(data: Data, fixtures: Path) -> None:
    """Each question's key is in its transcript and not in the question itself."""
    texts: dict[str, str] = {}
    problems: list[str] = []
    for q in data.questions:
        if q.transcript not in texts:
            texts[q.transcript] = transcript_text(fixtures / q.transcript)
        if found_key(texts[q.transcript], q.key) is None:
            problems.append(f"{q.id}: no key phrase of {list(q.key)} in {q.transcript}")
        if (leak := found_key(q.question, q.key)) is not None:
            problems.append(f"{q.id}: the question contains its own key {leak!r}")
    if problems:
        raise SystemExit("bad question data:\n  " + "\n  ".join(problems))


# -- replay: a transcript as the hook calls Claude Code makes ------------------------------


@dataclass
class Step:
    """One hook call: fired when the transcript copy holds ``grow_to`` lines."""

    event: str  # Claude Code's name: SessionStart, UserPromptSubmit, …
    payload: dict[str, Any]
    grow_to: int
    subagent: Path | None = None  # a subagent transcript to copy before the call


@dataclass
class Session:
    """A transcript to replay: its lines, where its copy goes, its subagents."""

    source: Path
    session_id: str
    original_cwd: str
    lines: list[str]
    first_timestamp: str
    subagents: dict[str, Path]  # agent id → subagent transcript


def read_session(path: Path) -> Session:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    session_id = cwd = stamp = ""
    for line in lines:
        record = json.loads(line)
        session_id = session_id or record.get("sessionId") or ""
        cwd = cwd or record.get("cwd") or ""
        stamp = stamp or record.get("timestamp") or ""
    folder = path.with_suffix("") / "subagents"
    subagents = {}
    if folder.is_dir():
        for sub in sorted(folder.glob("agent-*.jsonl")):
            subagents[sub.stem.removeprefix("agent-")] = sub
    return Session(path, session_id, cwd, lines, stamp, subagents)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            block.get("text", "")
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""


def _typed_prompt(text: str) -> str | None:
    """What the user typed, for a user message (None: not a prompt Claude Code hooks)."""
    stripped = text.strip()
    if not stripped or stripped.startswith("[Request interrupted"):
        return None
    for harness in ("<task-notification>", "<local-command-", "<system-reminder>"):
        if stripped.startswith(harness):
            return None
    name = re.search(r"<command-name>(.*?)</command-name>", stripped, re.S)
    if name:
        args = re.search(r"<command-args>(.*?)</command-args>", stripped, re.S)
        command = name.group(1).strip()
        if not command.startswith("/"):
            command = "/" + command
        return f"{command} {args.group(1).strip() if args else ''}".strip()
    return stripped


def live_steps(session: Session, base: dict[str, Any]) -> list[Step]:
    """The hooks Claude Code fires while ``session`` is written (see the module docstring)."""
    steps = [Step("SessionStart", {**base, "source": "startup", "model": MODEL}, 0)]
    tools: dict[str, tuple[str, Any]] = {}
    last_text = ""
    in_turn = False

    def stop(at: int) -> None:
        payload = {**base, "stop_hook_active": False, "last_assistant_message": last_text}
        steps.append(Step("Stop", payload, at))

    for number, line in enumerate(session.lines, 1):
        record = json.loads(line)
        kind = record.get("type")
        if kind == "queue-operation" and record.get("operation") == "enqueue":
            prompt = _typed_prompt(str(record.get("content") or ""))
            if prompt:  # typed while the agent worked: submitted into the running turn
                steps.append(Step("UserPromptSubmit", {**base, "prompt": prompt}, number - 1))
        elif kind == "system" and record.get("subtype") == "compact_boundary":
            payload = {**base, "trigger": "auto", "custom_instructions": ""}
            steps.append(Step("PreCompact", payload, number - 1))
        elif kind == "assistant":
            in_turn = True
            for block in record["message"].get("content") or []:
                if block.get("type") == "tool_use":
                    tools[block["id"]] = (block["name"], block.get("input"))
                elif block.get("type") == "text" and block.get("text", "").strip():
                    last_text = block["text"].strip()
        elif kind == "user":
            content = record["message"].get("content")
            results = [
                block
                for block in (content if isinstance(content, list) else [])
                if isinstance(block, dict) and block.get("type") == "tool_result"
            ]
            if record.get("isCompactSummary"):
                payload = {**base, "source": "compact", "model": MODEL}
                steps.append(Step("SessionStart", payload, number))
            elif results:
                steps.extend(_tool_steps(session, base, record, results, tools, number))
            elif not record.get("isMeta"):
                text = _text_of(content)
                if text.strip().startswith("[Request interrupted"):
                    in_turn = False  # Claude Code fires no Stop for an interrupted turn
                    continue
                prompt = _typed_prompt(text)
                if prompt is None and not text.strip().startswith("<task-notification>"):
                    continue  # local command output: no turn
                if in_turn:
                    stop(number - 1)
                if prompt is not None:
                    steps.append(Step("UserPromptSubmit", {**base, "prompt": prompt}, number - 1))
                in_turn, last_text = True, ""
    if in_turn:
        stop(len(session.lines))
    steps.append(Step("SessionEnd", {**base, "reason": "other"}, len(session.lines)))
    return steps


def _tool_steps(
    session: Session,
    base: dict[str, Any],
    record: dict[str, Any],
    results: list[dict[str, Any]],
    tools: dict[str, tuple[str, Any]],
    number: int,
) -> list[Step]:
    steps: list[Step] = []
    for block in results:
        name, tool_input = tools.get(block["tool_use_id"], ("", None))
        response = record.get("toolUseResult") if len(results) == 1 else None
        if response is None:
            response = block.get("content")
        agent = response.get("agentId") if isinstance(response, dict) else None
        if name in ("Task", "Agent") and agent in session.subagents and isinstance(response, dict):
            payload = {
                **base,
                "stop_hook_active": False,
                "agent_id": agent,
                "agent_type": (tool_input or {}).get("subagent_type", ""),
                "agent_transcript_path": "",  # filled in when the copy is made
                "last_assistant_message": _text_of(response.get("content")),
            }
            steps.append(Step("SubagentStop", payload, number - 1, session.subagents[agent]))
        if block.get("is_error") or not name:
            continue  # Claude Code fires PostToolUseFailure: memlane has no hook for it
        payload = {
            **base,
            "tool_name": name,
            "tool_input": tool_input,
            "tool_response": response,
            "tool_use_id": block["tool_use_id"],
        }
        steps.append(Step("PostToolUse", payload, number))
    return steps


def transcript_only_steps(session: Session, base: dict[str, Any]) -> list[Step]:
    """SessionStart, one Stop over the whole transcript, SessionEnd."""
    whole = len(session.lines)
    last = ""
    for line in session.lines:
        record = json.loads(line)
        if record.get("type") == "assistant":
            text = _text_of(record["message"].get("content")).strip()
            last = text or last
    return [
        Step("SessionStart", {**base, "source": "startup", "model": MODEL}, whole),
        Step("Stop", {**base, "stop_hook_active": False, "last_assistant_message": last}, whole),
        Step("SessionEnd", {**base, "reason": "other"}, whole),
    ]


# -- the sandbox: temporary HOME and MEMLANE_HOME, the installed hook commands --------------


@dataclass
class HookRun:
    event: str
    seconds: float
    stdout: str
    stderr: str
    returncode: int

    @property
    def injected(self) -> str:
        """The context the agent would receive (additionalContext, else plain stdout)."""
        text = self.stdout.strip()
        if not text:
            return ""
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return text
        if isinstance(data, dict):
            specific = data.get("hookSpecificOutput")
            if isinstance(specific, dict):
                return str(specific.get("additionalContext") or "")
        return text


class Sandbox:
    """A home for one capture or recall run; every memlane process started here is tracked."""

    def __init__(self, root: Path, name: str, extra_env: dict[str, str]) -> None:
        self.dir = root / name
        self.home = self.dir / "home"
        self.state = self.dir / "memlane"
        self.project = root / "projects" / PROJECT  # shared: one project for every run
        for folder in (self.home, self.state, self.project):
            folder.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
        env.update(
            HOME=str(self.home),
            MEMLANE_HOME=str(self.state),
            CLAUDE_PROJECT_DIR=str(self.project),
            **BASE_ENV,
            **extra_env,
        )
        env.pop("XDG_STATE_HOME", None)
        env.pop("XDG_DATA_HOME", None)
        env.pop("XDG_CONFIG_HOME", None)
        self.env = env
        self.commands: dict[str, str] = {}
        self.runs: list[HookRun] = []
        self.ask_sessions: set[str] = set()

    @property
    def db(self) -> Path:
        return self.state / "memlane.db"  # MEMLANE_HOME holds the database itself

    def memlane(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memlane", *args],
            env=self.env,
            cwd=self.project,
            capture_output=True,
            text=True,
            check=check,
            timeout=900,
        )

    def setup_hooks(self) -> None:
        """``memlane setup``, then read back the command lines it wrote."""
        self.memlane("setup")
        settings = json.loads((self.home / ".claude" / "settings.json").read_text())
        for event, groups in settings["hooks"].items():
            for group in groups:
                for hook in group["hooks"]:
                    if "memlane" in hook["command"]:
                        self.commands[event] = hook["command"]
        missing = {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"} - set(self.commands)
        if missing:
            raise SystemExit(f"memlane setup wrote no hook for {sorted(missing)}")

    def enter(self, project: Path) -> None:
        """Run the hooks in ``project`` from now on (its folder names the project)."""
        project.mkdir(parents=True, exist_ok=True)
        self.project = project
        self.env["CLAUDE_PROJECT_DIR"] = str(project)

    def transcript_dir(self) -> Path:
        slug = re.sub(r"[^A-Za-z0-9]", "-", str(self.project))
        return self.home / ".claude" / "projects" / slug

    def hook(self, event: str, payload: dict[str, Any]) -> HookRun:
        """Run the installed command for ``event`` in a shell, as Claude Code does."""
        body = json.dumps({**payload, "hook_event_name": event}).encode("utf-8")
        start = time.perf_counter()
        done = subprocess.run(
            self.commands[event],
            shell=True,
            input=body,
            env=self.env,
            cwd=self.project,
            capture_output=True,
            timeout=120,
        )
        run = HookRun(
            event,
            time.perf_counter() - start,
            done.stdout.decode("utf-8", "replace"),
            done.stderr.decode("utf-8", "replace"),
            done.returncode,
        )
        self.runs.append(run)
        return run

    def base_payload(self, session_id: str, transcript: Path) -> dict[str, Any]:
        return {
            "session_id": session_id,
            "transcript_path": str(transcript),
            "cwd": str(self.project),
            "permission_mode": "default",
        }


def own_processes(marker: str) -> list[int]:
    """Processes (not this one) whose environment holds ``marker``: the ones we caused."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ:
            found.append(int(entry.name))
    return found


def wait_for_detached(marker: str, timeout: float = WAIT_S) -> None:
    """Wait for the detached processes hooks started (transcript tails, maintenance)."""
    deadline = time.monotonic() + timeout
    while own_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.2)


def end_processes(marker: str) -> list[int]:
    """Terminate, by pid, whatever memlane process of this run is still alive."""
    pids = own_processes(marker)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while own_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in own_processes(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


# -- capture ---------------------------------------------------------------------------


@dataclass
class CaptureReport:
    mode: str
    seconds: float
    calls: dict[str, int]
    hook_errors: list[str]
    stop_seconds_max: float
    memories: dict[str, int] = field(default_factory=dict)


class TranscriptCopy:
    """The transcript file Claude Code would be writing, grown line by line."""

    def __init__(
        self, session: Session, path: Path, project: Path, shift: dt.timedelta = dt.timedelta()
    ) -> None:
        self.session = session
        self.path = path
        self.project = str(project)
        self.shift = shift
        self.written = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")

    def rewrite(self, line: str) -> str:
        cwd = self.session.original_cwd
        return shift_timestamps(line.replace(cwd, self.project) if cwd else line, self.shift)

    def grow(self, lines: int) -> None:
        if lines <= self.written:
            return
        with self.path.open("a", encoding="utf-8") as handle:
            for line in self.session.lines[self.written : lines]:
                handle.write(self.rewrite(line) + "\n")
        self.written = lines

    def copy_subagent(self, source: Path) -> Path:
        target = self.path.with_suffix("") / "subagents" / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8")
        cwd = self.session.original_cwd
        text = text.replace(cwd, self.project) if cwd else text
        target.write_text(shift_timestamps(text, self.shift), encoding="utf-8")
        return target


_TIMESTAMP = re.compile(r'("timestamp"\s*:\s*")([0-9]{4}-[0-9]{2}-[0-9]{2}T[^"]+)(")')


def _parse_stamp(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def shift_timestamps(text: str, shift: dt.timedelta) -> str:
    """``text`` with every JSON ``timestamp`` value moved by ``shift`` (same format)."""
    if not shift:
        return text

    def moved(match: re.Match[str]) -> str:
        stamp = (_parse_stamp(match.group(2)) + shift).astimezone(dt.UTC)
        return (
            match.group(1)
            + stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            + match.group(3)
        )

    return _TIMESTAMP.sub(moved, text)


def replay_shift(sessions: Sequence[Session], now: dt.datetime) -> dt.timedelta:
    """The offset that makes the newest of ``sessions`` end at ``now`` (see the docstring)."""
    stamps = [
        _parse_stamp(m.group(2))
        for session in sessions
        for line in session.lines[-50:]
        for m in _TIMESTAMP.finditer(line)
    ]
    return now - max(stamps) if stamps else dt.timedelta()


def capture(
    box: Sandbox,
    sessions: Sequence[Session],
    mode: str,
    *,
    original_dates: bool = False,
    maintained: bool = False,
) -> CaptureReport:
    start = time.perf_counter()
    before = len(box.runs)
    shift = dt.timedelta() if original_dates else replay_shift(sessions, dt.datetime.now(dt.UTC))
    for session in sorted(sessions, key=lambda s: s.first_timestamp):
        copy = TranscriptCopy(
            session, box.transcript_dir() / f"{session.session_id}.jsonl", box.project, shift
        )
        base = box.base_payload(session.session_id, copy.path)
        if mode == "live":
            steps = live_steps(session, base)
        else:
            steps = transcript_only_steps(session, base)
            for subagent in session.subagents.values():
                copy.copy_subagent(subagent)
        for step in steps:
            copy.grow(step.grow_to)
            payload = dict(step.payload)
            if step.subagent is not None:
                payload["agent_transcript_path"] = str(copy.copy_subagent(step.subagent))
            payload = json.loads(copy.rewrite(json.dumps(payload)))
            box.hook(step.event, payload)
    wait_for_detached(str(box.state))
    if maintained:  # what a day's scheduled run does to everything captured
        box.memlane("maintain", "--json")
    runs = box.runs[before:]
    errors = [
        f"{run.event}: exit {run.returncode} {run.stderr.strip()[:200]}"
        for run in runs
        if run.returncode != 0 or run.stderr.strip()
    ]
    stops = [run.seconds for run in runs if run.event == "Stop"]
    return CaptureReport(
        mode=mode,
        seconds=time.perf_counter() - start,
        calls=dict(Counter(run.event for run in runs)),
        hook_errors=errors,
        stop_seconds_max=max(stops, default=0.0),
        memories=count_kinds(box.db),
    )


def count_kinds(db: Path) -> dict[str, int]:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute("SELECT kind, count(*) FROM memories GROUP BY kind").fetchall()
    return {str(kind): int(n) for kind, n in rows}


def copy_database(source: Path, target: Path) -> None:
    """SQLite online backup of the captured database into another home."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with (
        contextlib.closing(sqlite3.connect(source)) as src,
        contextlib.closing(sqlite3.connect(target)) as dst,
    ):
        src.backup(dst)
    target.chmod(0o600)


# -- recall modes ----------------------------------------------------------------------


class Worker:
    """``memlane serve`` for a sandbox: started, checked warm and relayed, always stopped."""

    def __init__(self, box: Sandbox) -> None:
        self.box = box
        self.process: subprocess.Popen[bytes] | None = None
        self.log = box.dir / "worker.log"
        self.ready: dict[str, Any] = {}

    def __enter__(self) -> Worker:
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "memlane", "serve"],
                env=self.box.env,
                cwd=self.box.project,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def status(self) -> dict[str, Any]:
        done = self.box.memlane("status", "--json", check=False)
        try:
            return dict(json.loads(done.stdout))
        except json.JSONDecodeError:
            return {}

    def embedding_stats(self, url: str) -> dict[str, Any]:
        import urllib.request

        token = (self.box.state / "token").read_text().strip()
        request = urllib.request.Request(
            url.rstrip("/") + "/api/embeddings/stats",
            headers={"Authorization": f"Bearer {token}"},
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            return dict(json.loads(reply.read()))

    def wait_ready(self) -> None:
        deadline = time.monotonic() + WAIT_S
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise SystemExit(f"memlane serve exited: see {self.log}")
            last = self.status()
            if last.get("healthy") and last.get("hook_relay") == "relayed to the worker":
                stats = self.embedding_stats(str(last["url"]))
                # "idle": hybrid search is warm (model and vectors loaded), nothing pending;
                # before that the worker recalls in keyword mode.
                if stats.get("state") == "idle" and stats.get("pending") == 0:
                    self.ready = {"status": last, "embeddings": stats}
                    return
            time.sleep(0.5)
        raise SystemExit(f"the worker did not become ready within {WAIT_S:.0f} s: {last}")

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.process = None


# -- ask -------------------------------------------------------------------------------


@dataclass
class Ask:
    id: str
    split: str  # one of SPLITS, or unrelated
    kind: str
    prompt: str
    keys: list[str]
    injected: str
    seconds: float
    hit: str | None
    pack_chars: int
    pack_hit: str | None
    same_ranking: bool | None = None  # the injection is what this mode's ranking gives
    diagnosis: dict[str, Any] | None = None
    written_by: str = ""  # an unrelated prompt's split: who wrote it


class Asker:
    """Asks prompts in new sessions of one sandbox, each against the same database state.

    After every ask the relayed writes are awaited (``flush``), a failed question is
    diagnosed on the spot, and the access counts the hook recorded for what it injected are
    reset — otherwise a memory injected for one question ranks higher for the next (the
    frequency signal) and the result would depend on the order of the questions.
    """

    def __init__(self, box: Sandbox, recall: str, *, diagnose: bool, reset: bool) -> None:
        from memlane.config import KEYWORD_RECALL_MARGIN, load_settings

        self.box = box
        self.recall = recall
        self.diagnose = diagnose
        self.reset = reset
        settings, _ = load_settings(environ=box.env)  # what the sandbox's hooks see
        self.settings = settings
        self.limit = settings.recall_limit
        self.candidates = min(max(settings.recall_limit, 1) * 3, 20)  # as the prompt hook
        self.floor = settings.min_relevance_score
        if recall == "keyword":
            self.floor = min(1.0, self.floor + KEYWORD_RECALL_MARGIN)
        self._memory: Any = None
        self.last_session = ""

    def close(self) -> None:
        if self._memory is not None:
            self._memory.close()
            self._memory = None

    def ask(self, prompt: str) -> tuple[HookRun, HookRun]:
        session_id = self.last_session = str(uuid.uuid4())
        self.box.ask_sessions.add(session_id)
        base = self.box.base_payload(session_id, self.box.transcript_dir() / f"{session_id}.jsonl")
        start = self.box.hook("SessionStart", {**base, "source": "startup", "model": MODEL})
        prompted = self.box.hook("UserPromptSubmit", {**base, "prompt": prompt})
        self.settle()
        return start, prompted

    def settle(self) -> None:
        """Wait for the worker's deferred writes of the hooks relayed so far."""
        if self.recall == "hybrid":
            from memlane.hooks.relay import flush

            if not flush(environ=self.box.env, timeout_s=5.0):
                raise SystemExit("the worker stopped taking this sandbox's hooks")

    def question(self, q: Question) -> Ask:
        start, run = self.ask(q.question)
        hit = found_key(run.injected, q.key)
        result = Ask(
            q.id,
            q.split,
            q.kind,
            q.question,
            list(q.key),
            run.injected,
            run.seconds,
            hit,
            len(start.injected),
            found_key(start.injected, q.key),
        )
        self.reset_access()  # first: the checks must see what the hook saw
        hits = self.search(q.question, self.candidates)
        result.same_ranking = self.same_ranking(q.question, hits, run.injected)
        if hit is None and self.diagnose:
            result.diagnosis = self.diagnosis(q.question, q.key, hits, run.injected)
            self.reset_access()  # `memlane search` counts an access for what it shows
        return result

    def unrelated(self, number: int, item: Unrelated) -> Ask:
        prompt = item.prompt
        start, run = self.ask(prompt)
        self.reset_access()
        hits = self.search(prompt, self.candidates)
        return Ask(
            f"unrelated-{number}",
            "unrelated",
            "unrelated",
            prompt,
            [],
            run.injected,
            run.seconds,
            None,
            len(start.injected),
            None,
            self.same_ranking(prompt, hits, run.injected),
            written_by=item.split,
        )

    def same_ranking(self, prompt: str, hits: Sequence[dict[str, Any]], injected: str) -> bool:
        """Whether the hook injected what this mode's ranking selects first (its relevance
        in the injection log, or nothing when nothing is selected: the floor and the
        visible-evidence rule of ``memlane.search.selection``): confirms the mode the hook
        recalled in."""
        from types import SimpleNamespace

        from memlane.search.queries import RECALL_KINDS
        from memlane.search.selection import holds_word, select_recall

        shown = self.first_injected_score() if injected else None
        above = [SimpleNamespace(**h) for h in hits if float(h["score"]) >= self.floor]
        assert self._memory is not None  # opened by self.search, which gave ``hits``
        store = self._memory.store

        def known(name: str) -> bool:
            return holds_word(store, name, RECALL_KINDS)

        chosen = select_recall(prompt, above, session_id=None, limit=self.limit, known=known)  # type: ignore[arg-type]
        if not chosen:
            return shown is None
        best = float(chosen[0].score)
        return shown is not None and abs(shown - best) <= 0.006

    def first_injected_score(self) -> float | None:
        """The relevance of the first memory the last prompt got, as the injection log
        (``memlane log``) has it."""
        with contextlib.closing(sqlite3.connect(self.box.db, timeout=30)) as conn:
            row = conn.execute(
                "SELECT m.score FROM injected_memories m JOIN injections i"
                " ON i.id = m.injection_id WHERE i.session_id = ? AND i.event = ?"
                " ORDER BY i.id DESC, m.rank LIMIT 1",
                (self.last_session, "user-prompt-submit"),
            ).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def reset_access(self) -> None:
        if not self.reset:
            return
        with contextlib.closing(sqlite3.connect(self.box.db, timeout=30)) as conn:
            conn.execute(
                "UPDATE memories SET access_count = 0, last_accessed_at = NULL"
                " WHERE access_count > 0"
            )
            conn.commit()

    def pack(self, data: Data) -> dict[str, Any]:
        """A new session's SessionStart pack: its size and each session's summary markers."""
        start, _ = self.ask("status of the spotter work")
        self.reset_access()
        text = start.injected
        found = {
            name: {part: found_key(text, phrases) for part, phrases in parts.items()}
            for name, parts in data.summary_markers.items()
        }
        return {"chars": len(text), "markers": found, "text": text}

    # -- diagnosis of a failed question --------------------------------------------------

    def diagnosis(
        self, prompt: str, keys: Sequence[str], hits: Sequence[dict[str, Any]], injected: str
    ) -> dict[str, Any]:
        """Where the fact sits, and why the prompt hook did not inject it.

        ``hook``: the hook's own search, repeated with its arguments (recall kinds, its
        candidate limit and keyword scan, this mode; floor 0 so every score shows) on the
        database as the hook saw it: the rank and score of the first hit holding a key
        decide the failure kind. ``deep``: the same with 50 candidates, when the hook's
        did not hold it (scores differ a little: the reranked pool grows with the limit).
        ``memlane_search``: what ``memlane search`` shows a person (every kind, prompts
        included). The benchmark's own question prompts are left out of every ranking.
        """
        hook = first_with_key(hits, keys, self.box.ask_sessions, injected)
        found: dict[str, Any] = {"in_database": keys_in_database(self.box.db, keys), "hook": hook}
        if hook["rank"] is None:
            deep_hits = self.search(prompt, 50)
            found["deep"] = first_with_key(deep_hits, keys, self.box.ask_sessions)
            if found["deep"]["rank"] is None:
                found["group"] = first_group_with_key(self.box.db, deep_hits, keys)
        done = self.box.memlane(
            "search", prompt, "--limit", "50", "--mode", self.recall, "--min-score", "0", "--json"
        )
        cli = first_with_key(json.loads(done.stdout or "[]"), keys, self.box.ask_sessions)
        found["memlane_search"] = {k: cli.get(k) for k in ("rank", "score", "kind", "above")}
        found["failure"] = self.failure_kind(found)
        return found

    def search(self, prompt: str, limit: int) -> list[dict[str, Any]]:
        from memlane.search.queries import RECALL_ALPHA, RECALL_KEYWORD_SCAN

        if self._memory is None or self.recall == "keyword":
            import memlane

            # Keyword recall runs in a new hook process each time, which counts the words
            # afresh; a kept engine would reuse counts while the store grows by the asked
            # prompts, and pick other rare words near the bound (engine.rare_words).
            if self._memory is not None:
                self._memory.close()
            self._memory = memlane.open(str(self.box.db), settings=self.settings)
        hits = self._memory.search(
            prompt,
            project=PROJECT,
            limit=limit,
            mode=self.recall,
            kinds=RECALL_KINDS,
            min_score=1e-6,
            keyword_scan=RECALL_KEYWORD_SCAN,
            alpha=RECALL_ALPHA,
        )
        return [
            {"kind": h.kind, "type": h.type, "title": h.title, "content": h.content}
            | {"score": h.score, "session_id": h.session_id, "id": h.id, "members": h.members}
            | {"files": h.files, "call": h.call, "created_at": h.created_at}
            for h in hits
        ]

    def failure_kind(self, found: dict[str, Any]) -> str:
        """One name per failure: not captured / not retrieved / in a hit whose shown piece
        lacks it (a split block ranked by another piece) / below the floor / outranked /
        injected but the key cut off."""
        hook = found["hook"]
        if not found["in_database"]:
            return "not captured"
        if hook["rank"] is None:
            deep = found["deep"]
            if deep["rank"] is not None:
                return "outranked"
            if found.get("group", {}).get("rank") is not None:
                return "in a hit of the top 50, another of its pieces shown"
            return "not retrieved (top 50)"
        if hook["score"] < self.floor:
            return "below the floor"
        if hook["rank"] > self.limit:
            return "outranked"
        if not hook["shown"]:
            # Ranked and scored to be injected, but the selection passed it over: its
            # passage shows too few of the prompt's words, or it repeats one chosen.
            return "passed over by the selection"
        return "injected, key cut off"


def prompt_entries(box: Sandbox) -> dict[str, list[dict[str, Any]]]:
    """The injection log's prompt entries of ``box``, per prompt text, oldest first."""
    done = box.memlane("log", "--json", "--all-projects", "--last", "10000")
    found: dict[str, list[dict[str, Any]]] = {}
    for entry in json.loads(done.stdout)["injections"]:
        if entry["event"] == "user-prompt-submit" and entry["prompt"]:
            found.setdefault(entry["prompt"], []).append(entry)
    return found


def feedback_round(asker: Asker, asks: Sequence[Ask], data: Data) -> dict[str, Any]:
    """Mark noise, ask again (step 5 of the module docstring); counts for the report."""
    box = asker.box
    keys = {q.question: q.key for q in data.questions}
    before = prompt_entries(box)
    marked: dict[str, set[int]] = {}
    unlogged = 0  # injected, yet no log entry: the log missed an injection
    for ask in asks:
        if not ask.injected or ask.hit is not None:
            continue  # nothing shown, or the fact was there: nothing to call noise
        entries = before.get(ask.prompt.strip())
        if not entries:
            unlogged += 1
            continue
        entry = entries[-1]
        for memory in entry["memories"]:
            box.memlane(
                "feedback", str(memory["memory_id"]), "--noise", "--injection", str(entry["id"])
            )
        marked[ask.prompt.strip()] = {m["memory_id"] for m in entry["memories"]}
    unrelated_again = 0
    now_answered: set[str] = set()
    for ask in asks:
        _start, run = asker.ask(ask.prompt)
        asker.reset_access()
        if ask.split == "unrelated":
            unrelated_again += bool(run.injected)
        elif found_key(run.injected, keys[ask.prompt]) is not None:
            now_answered.add(ask.prompt)
    after = prompt_entries(box)
    again = 0
    for prompt, ids in marked.items():
        new = after.get(prompt, [])[len(before.get(prompt, [])) :]
        shown = {m["memory_id"] for entry in new for m in entry["memories"]}
        again += len(ids & shown)
    total = sum(len(ids) for ids in marked.values())
    answered = {a.prompt for a in asks if a.split != "unrelated" and a.hit is not None}
    missed = {a.prompt for a in asks if a.split != "unrelated" and a.hit is None}
    unrelated = [a for a in asks if a.split == "unrelated"]
    return {
        "marked_prompts": len(marked),
        "marked": total,
        "suppressed": total - again,
        "unlogged": unlogged,
        "unrelated_before": (sum(bool(a.injected) for a in unrelated), len(unrelated)),
        "unrelated_after": (unrelated_again, len(unrelated)),
        "still_answered": (len(answered & now_answered), len(answered)),
        "newly_answered": (len(missed & now_answered), len(missed)),
    }


def print_feedback(rows: Sequence[dict[str, Any]]) -> None:
    """The feedback round's table (rows run with ``--no-feedback`` are left out)."""
    marked = [row for row in rows if row.get("feedback")]
    if not marked:
        return
    print(
        "\n| capture | recall | marked noise (prompts) | noise suppressed on re-ask |"
        " unrelated injected: before | after marks | answered after marks | missed: now |"
        " injected, not logged |"
    )
    print("| --- " * 9 + "|")
    for row in marked:
        fb = row["feedback"]
        print(
            f"| {row['capture']} | {row['recall']} | {fb['marked']} ({fb['marked_prompts']}) |"
            f" {fraction((fb['suppressed'], fb['marked']))} |"
            f" {fraction(fb['unrelated_before'])} | {fraction(fb['unrelated_after'])} |"
            f" {fraction(fb['still_answered'])} | {fraction(fb['newly_answered'])} |"
            f" {fb['unlogged']} |"
        )


def shown_in(text: str, injected: str) -> bool:
    """Whether a line of ``text`` long enough to tell it apart (20 characters) is in the
    ``injected`` text: the memory was one of the items."""
    flat = normalise(injected)
    lines = (normalise(line) for line in text.splitlines())
    return any(len(line) >= 20 and line in flat for line in lines)


def first_with_key(
    hits: Sequence[dict[str, Any]],
    keys: Sequence[str],
    skip_sessions: set[str],
    injected: str = "",
) -> dict[str, Any]:
    """Rank (1-based, skipping ``skip_sessions``), score and place of the first key hit,
    and whether a line of it is in the ``injected`` text (``shown``)."""
    above: Counter[str] = Counter()
    kept = [h for h in hits if h.get("session_id") not in skip_sessions]
    best = max((float(h["score"]) for h in kept), default=0.0)
    for rank, hit in enumerate(kept, 1):
        text = f"{hit.get('title') or ''}\n{hit.get('content') or ''}"
        key = found_key(text, keys)
        if key is not None:
            flat = normalise(text)
            where = phrase_pattern(key).search(flat)
            return {
                "rank": rank,
                "score": round(float(hit["score"]), 3),
                "best_score": round(best, 3),
                "kind": f"{hit['kind']}/{hit['type']}",
                "chars": len(flat),
                "key_offset": where.start() if where else None,
                "above": dict(above),
                "shown": shown_in(text, injected),
            }
        above[f"{hit['kind']}/{hit['type']}"] += 1
    return {"rank": None, "best_score": round(best, 3), "above": dict(above)}


def first_group_with_key(
    db: Path, hits: Sequence[dict[str, Any]], keys: Sequence[str]
) -> dict[str, Any]:
    """The rank of the first hit one of whose other pieces holds a key: a split block
    (a long Read) that search ranked by a piece without the fact (``members``)."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        for rank, hit in enumerate(hits, 1):
            others = [m for m in hit.get("members") or () if m != hit.get("id")]
            for member in others:
                row = conn.execute(
                    "SELECT coalesce(title,'') || ' ' || content FROM memories WHERE id = ?",
                    (member,),
                ).fetchone()
                if row is not None and found_key(row[0], keys) is not None:
                    return {"rank": rank, "pieces": len(others) + 1}
    return {"rank": None}


def keys_in_database(db: Path, keys: Sequence[str]) -> bool:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        for (text,) in conn.execute("SELECT coalesce(title,'') || ' ' || content FROM memories"):
            if found_key(text, keys) is not None:
                return True
    return False


# -- report ----------------------------------------------------------------------------


def summarise(asks: Sequence[Ask]) -> dict[str, Any]:
    def share(split: str | None) -> tuple[int, int]:
        chosen = [a for a in asks if a.split != "unrelated" and split in (None, a.split)]
        return sum(a.hit is not None for a in chosen), len(chosen)

    unrelated = [a for a in asks if a.split == "unrelated"]
    sizes = [len(a.injected) for a in asks if a.injected]
    questions = [a for a in asks if a.split != "unrelated"]
    present = {a.split for a in asks}
    return {
        **{split: share(split) for split in SPLITS if split in present},
        "all": share(None),
        "with_pack": (
            sum(a.hit is not None or a.pack_hit is not None for a in questions),
            len(questions),
        ),
        "unrelated": (sum(bool(a.injected) for a in unrelated), len(unrelated)),
        "unrelated_by_split": {
            split: (sum(bool(a.injected) for a in group), len(group))
            for split in SPLITS
            if (group := [a for a in unrelated if a.written_by == split])
        },
        "mean_chars": statistics.fmean(sizes) if sizes else 0.0,
        "max_chars": max(sizes, default=0),
        "p50_ms": 1000 * statistics.median(a.seconds for a in asks),
        # A relayed prompt answers within the relay timeout or not at all: a slower prompt
        # hook ran in its own process (keyword recall) after the worker did not answer.
        "slow": sum(a.seconds >= PROMPT_RELAY_TIMEOUT_S for a in asks),
        "same_ranking": sum(bool(a.same_ranking) for a in asks),
        "asked": len(asks),
        "questions_injected": sum(bool(a.injected) for a in questions),
    }


def fraction(pair: Sequence[int]) -> str:
    hit, total = pair
    return f"{hit}/{total} ({100 * hit / total:.0f}%)" if total else "-"


def print_table(rows: Sequence[dict[str, Any]]) -> None:
    splits = [split for split in SPLITS if any(split in row["summary"] for row in rows)]
    print(
        "\n| capture | recall | "
        + "".join(f"answered {split} | " for split in splits)
        + "all | all, prompt or pack | unrelated injected | mean chars | max chars |"
        " p50 prompt hook | prompt hooks ≥ 250 ms | injection = this mode's ranking |"
    )
    print("| --- " * (10 + len(splits)) + "|")
    for row in rows:
        s = row["summary"]
        print(
            f"| {row['capture']} | {row['recall']} |"
            + "".join(f" {fraction(s.get(split, (0, 0)))} |" for split in splits)
            + f" {fraction(s['all'])} | {fraction(s['with_pack'])} |"
            f" {fraction(s['unrelated'])}{_by_split(s)} |"
            f" {s['mean_chars']:.0f} | {s['max_chars']} |"
            f" {s['p50_ms']:.0f} ms | {s['slow']}/{s['asked']} |"
            f" {s['same_ranking']}/{s['asked']} |"
        )


def _by_split(summary: dict[str, Any]) -> str:
    """`` (dev 3/72, fresh2 1/23)``: the unrelated prompts by who wrote them."""
    parts = summary.get("unrelated_by_split", {})
    if len(parts) < 2:
        return ""
    return " (" + ", ".join(f"{split} {k}/{n}" for split, (k, n) in parts.items()) + ")"


def show_examples(asks: Sequence[Ask], n: int) -> None:
    questions = [a for a in asks if a.split != "unrelated"]
    chosen = [a for a in questions if a.hit is None][:n]
    chosen += [a for a in questions if a.hit is not None][: n - len(chosen)]
    for a in chosen:
        verdict = f"HIT ({a.hit})" if a.hit else "MISS"
        print(f"\n--- {a.id} [{a.split}] {verdict}")
        print(f"Q: {a.prompt}\nkey: {a.keys}")
        if a.diagnosis:
            print(f"diagnosis: {json.dumps(a.diagnosis)}")
        print(f"injected ({len(a.injected)} chars):")
        print(a.injected or "(nothing)")


def run_recall(
    root: Path,
    captured: Sandbox,
    capture_mode: str,
    recall: str,
    data: Data,
    args: argparse.Namespace,
    extra_env: dict[str, str],
) -> dict[str, Any]:
    box = Sandbox(root, f"{capture_mode}-{recall}", extra_env)
    box.setup_hooks()
    shutil.copytree(captured.home / ".claude" / "projects", box.home / ".claude" / "projects")
    copy_database(captured.db, box.db)
    row: dict[str, Any] = {"capture": capture_mode, "recall": recall}
    if args.later_records is not None:
        imported = box.memlane(
            "import", "jsonl", str(args.later_records), "--project", PROJECT, "--json"
        )
        row["later"] = json.loads(imported.stdout or "{}")
    worker: contextlib.AbstractContextManager[Any]
    if recall == "hybrid":
        embedded = box.memlane("embed", "--backfill", "--json")
        row["embed"] = json.loads(embedded.stdout or "{}")
        worker = Worker(box)
    else:
        worker = contextlib.nullcontext()
    with worker as running:
        if running is not None:
            row["worker"] = running.ready
        else:
            status = box.memlane("status", "--json", check=False)
            row["worker"] = json.loads(status.stdout or "{}")
            if row["worker"].get("running"):
                raise SystemExit("a worker runs in the keyword sandbox: keyword-only is not")
        asker = Asker(box, recall, diagnose=args.diagnose, reset=not args.keep_access)
        try:
            row["pack"] = asker.pack(data)
            asks = [asker.question(q) for q in data.questions]
            asks += [asker.unrelated(n, p) for n, p in enumerate(data.unrelated, 1)]
            if args.feedback:
                row["feedback"] = feedback_round(asker, asks, data)
        finally:
            asker.close()
    if recall == "keyword":
        row["worker_after"] = json.loads(box.memlane("status", "--json", check=False).stdout)
    row["summary"] = summarise(asks)
    row["asks"] = [asdict(a) for a in asks]
    wait_for_detached(str(box.state), timeout=30)
    return row


def print_capture(report: CaptureReport) -> None:
    calls = ", ".join(f"{event} {n}" for event, n in sorted(report.calls.items()))
    print(
        f"capture {report.mode}: {report.seconds:.1f} s; hook calls: {calls};"
        f" slowest Stop {report.stop_seconds_max:.2f} s; memories {report.memories}"
    )
    for error in report.hook_errors[:10]:
        print(f"  hook broke its contract: {error}")


def print_pack(row: dict[str, Any]) -> None:
    pack = row["pack"]
    parts = []
    for name, markers in pack["markers"].items():
        have = [part for part, hit in markers.items() if hit]
        parts.append(f"{name}: {', '.join(have) or 'nothing'}")
    print(
        f"  SessionStart pack after {row['capture']} capture ({row['recall']}):"
        f" {pack['chars']} chars; summary markers found — {'; '.join(parts)}"
    )


def print_diagnoses(row: dict[str, Any]) -> None:
    failed = [a for a in row["asks"] if a.get("diagnosis")]
    if not failed:
        return
    kinds = Counter(a["diagnosis"]["failure"] for a in failed)
    print(
        f"  failures {row['capture']}/{row['recall']}: "
        + ", ".join(f"{kind} {n}" for kind, n in kinds.most_common())
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--transcripts", type=Path, default=None)
    parser.add_argument("--capture", default=",".join(CAPTURES))
    parser.add_argument("--recall", default=",".join(RECALLS))
    parser.add_argument(
        "--split",
        choices=(*SPLITS, "all"),
        default="all",
        help="questions to ask (experiments: dev only)",
    )
    parser.add_argument("--show", type=int, default=0, help="examples per combination")
    parser.add_argument("--diagnose", action="store_true", help="search each failed question")
    parser.add_argument("--json", action="store_true", help="write benchmarks/results/…json")
    parser.add_argument("--maintenance", action="store_true", help="leave maintenance on")
    parser.add_argument(
        "--maintained",
        action="store_true",
        help="run `memlane maintain` once after capture (a scheduled run over all of it)",
    )
    parser.add_argument(
        "--relay-timeout-ms",
        type=int,
        default=None,
        help="MEMLANE_RELAY_TIMEOUT_MS for the hooks (a loaded machine: the prompt hook"
        " otherwise falls back to keyword recall when the worker needs more than 250 ms)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="MEMLANE_KEY=VALUE",
        help="extra setting for every sandbox (e.g. MEMLANE_MIN_RELEVANCE_SCORE=0.3)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument(
        "--original-dates",
        action="store_true",
        help="replay the transcripts at the dates they were recorded (hooks still store now)",
    )
    parser.add_argument(
        "--no-feedback",
        dest="feedback",
        action="store_false",
        help="skip the feedback round (noise marks, then every prompt asked again)",
    )
    parser.add_argument(
        "--later",
        type=int,
        default=0,
        metavar="N",
        help="before asking, import N LongMemEval chat turns into the project with `memlane"
        " import jsonl`: newer memories that share everyday words with the questions",
    )
    parser.add_argument(
        "--keep-access",
        action="store_true",
        help="let access counts accumulate from question to question (order-dependent)",
    )
    return parser.parse_args(argv)


@contextlib.contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, so the worker and detached processes are stopped."""

    def raise_interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    fixtures = args.transcripts or find_fixtures()
    if fixtures is None or not fixtures.is_dir():
        print("no shared/fixtures/claude-code-transcripts found (use --transcripts DIR)")
        return 2
    data = load_data(args.data)
    check_keys(data, fixtures)
    if args.split != "all":
        chosen = tuple(q for q in data.questions if q.split == args.split)
        data = Data(chosen, data.unrelated, data.summary_markers)
    captures = [c for c in args.capture.split(",") if c]
    recalls = [r for r in args.recall.split(",") if r]
    if bad := sorted(set(captures) - set(CAPTURES)) + sorted(set(recalls) - set(RECALLS)):
        print(f"unknown mode(s) {bad}: capture is {CAPTURES}, recall {RECALLS}")
        return 2
    sessions = [read_session(path) for path in sorted(fixtures.glob("*.jsonl"))]
    extra_env = {} if args.maintenance else dict(NO_MAINTENANCE)
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key.startswith("MEMLANE_"):
            print(f"--env {item!r}: expected MEMLANE_KEY=VALUE")
            return 2
        extra_env[key] = value
    if args.relay_timeout_ms is not None:
        extra_env["MEMLANE_RELAY_TIMEOUT_MS"] = str(args.relay_timeout_ms)
    per_split = Counter(q.split for q in data.questions)  # after --split
    print(
        f"{len(data.questions)} questions ("
        + ", ".join(f"{per_split[split]} {split}" for split in SPLITS if per_split[split])
        + "),"
        f" {len(data.unrelated)} unrelated prompts; {len(sessions)} transcripts;"
        f" maintenance {'on' if args.maintenance else 'off'}"
        + "".join(f"; {k}={v}" for k, v in extra_env.items() if k not in NO_MAINTENANCE)
    )
    root = sandbox_root()
    args.later_records = None
    if args.later:
        args.later_records = root / "later.jsonl"
        try:
            written = write_later_records(args.later_records, args.later)
        except SystemExit:
            shutil.rmtree(root, ignore_errors=True)
            raise
        print(f"later memories: {written} LongMemEval chat turns, imported before asking")
    rows: list[dict[str, Any]] = []
    captures_out: list[dict[str, Any]] = []
    try:
        with terminated_as_interrupt():
            for capture_mode in captures:
                box = Sandbox(root, f"capture-{capture_mode}", extra_env)
                box.setup_hooks()
                report = capture(
                    box,
                    sessions,
                    capture_mode,
                    original_dates=args.original_dates,
                    maintained=args.maintained,
                )
                print_capture(report)
                captures_out.append(asdict(report))
                for recall in recalls:
                    row = run_recall(root, box, capture_mode, recall, data, args, extra_env)
                    rows.append(row)
                    print_pack(row)
                    print_diagnoses(row)
    except KeyboardInterrupt:
        print("interrupted: the worker and every process of this run are stopped")
        return 130
    finally:
        left = end_processes(str(root))
        if left:
            print(f"stopped {len(left)} leftover process(es): {left}")
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print_table(rows)
    print_feedback(rows)
    if args.show:
        for row in rows:
            print(f"\n=== examples: capture {row['capture']}, recall {row['recall']}")
            show_examples([Ask(**a) for a in row["asks"]], args.show)
    if args.json:
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / f"coding_recall-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.write_text(json.dumps({"captures": captures_out, "rows": rows}, indent=1))
        print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
