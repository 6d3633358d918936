"""The secret corpus through every entry point, then a grep of the database file bytes.

Entry points: the facade (content, title, tags, files, metadata), `memlane
save`, `memlane import jsonl`, the PostToolUse and UserPromptSubmit hooks (a
real `memlane hook` process per event), the HTTP API (a real uvicorn server)
and the MCP save tools (an in-process MCP client). Afterwards the raw bytes of
the database, its WAL and shared-memory files must contain no secret — as
stored, lower-cased (how FTS keeps terms) or JSON-escaped. The ordinary corpus
must come back unchanged from the same facade.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from memlane.mcp_server import build_server
from memlane.models import MemoryFilter
from memlane.service import Memory
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_web_support import LiveServer

DATA = Path(__file__).parent / "data" / "privacy"
P = "leaky"


def _load(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


SECRETS = _load("secrets.jsonl")
ORDINARY = _load("ordinary.jsonl")


def leaked(db: Path, secrets: list[str]) -> dict[str, list[str]]:
    """{file name: secrets found in its bytes} over the database, WAL and SHM files."""
    found: dict[str, list[str]] = {}
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        if not path.exists():
            continue
        data = path.read_bytes()
        lowered = data.lower()
        hits = []
        for secret in secrets:
            forms = {secret.encode(), json.dumps(secret)[1:-1].encode()}
            if any(form in data or form.lower() in lowered for form in forms):
                hits.append(secret)
        if hits:
            found[path.name] = hits
    return found


def _batches(items: list[dict[str, str]], size: int) -> Iterator[list[dict[str, str]]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _facade(memory: Memory) -> int:
    for n, item in enumerate(SECRETS):
        text = item["text"]
        memory.save(
            text,
            project=P,
            type="note",
            title=text[:150],
            # Whole texts: a bare random value without its context is undetectable.
            tags=[text],
            files=[text],
            metadata={"command": text, "nested": [{"output": text}], "n": n},
        )
    return len(SECRETS)


def _cli(home: Path, tmp_path: Path) -> int:
    """`memlane save -` in real processes, six secrets per call.

    Not click's CliRunner: a second store opened in this process, next to the
    test's own, would be the "second store in one process" hazard reported in
    the issue (POSIX locks dropped by ensure_private_file), not what users run.
    """
    env = run_env(home)
    calls = 0
    for batch in _batches(SECRETS, 6):
        text = "\n\n".join(item["text"] for item in batch)
        out = subprocess.run(
            [*MEMLANE_CMD, "save", "-", "--project", f"{P}-cli", "--title", batch[0]["text"][:80]],
            input=text, env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        calls += 1
    return calls


def _jsonl(home: Path, tmp_path: Path) -> int:
    path = tmp_path / "secrets.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for n, item in enumerate(SECRETS):
            record: dict[str, Any] = {
                "text": item["text"],
                "id": f"secret-{n}",
                "session": f"import-{n % 5}",
                "project": f"{P}-jsonl",
                "title": item["text"][:120],
                "tags": [item["text"]],
                "metadata": {"raw": item["text"]},
            }
            handle.write(json.dumps(record) + "\n")
    out = subprocess.run([*MEMLANE_CMD, "import", "jsonl", str(path)], env=run_env(home),
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return len(SECRETS)


def _hooks(home: Path, tmp_path: Path) -> int:
    """Three secrets per PostToolUse event (command, description, output), prompts too."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = run_env(home)
    events = 0
    for n, batch in enumerate(_batches(SECRETS, 3)):
        texts = [item["text"] for item in batch] + ["", ""]
        payload = {
            "session_id": f"hook-{n // 10}",
            "cwd": str(work),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": texts[0], "description": texts[1]},
            "tool_response": {"stdout": texts[2], "stderr": texts[1], "exit_code": 1},
        }
        out = subprocess.run([*MEMLANE_CMD, "hook", "post-tool-use"], input=json.dumps(payload),
                             env=env, cwd=work, capture_output=True, text=True)  # fmt: skip
        assert out.returncode == 0 and out.stdout == "", out.stderr
        events += 1
    for n, item in enumerate(SECRETS[::6]):
        payload = {
            "session_id": "hook-prompts",
            "cwd": str(work),
            "hook_event_name": "UserPromptSubmit",
            "prompt": f"please check this {n}: {item['text']}",
        }
        out = subprocess.run([*MEMLANE_CMD, "hook", "user-prompt-submit"],
                             input=json.dumps(payload), env=env, cwd=work,
                             capture_output=True, text=True)  # fmt: skip
        assert out.returncode == 0, out.stderr
        events += 1
    return events


def _http(memory: Memory) -> int:
    live = LiveServer(memory).start()
    try:
        with httpx.Client(base_url=live.base_url, headers=live.auth(), timeout=10) as client:
            for n, item in enumerate(SECRETS):
                body = {
                    "content": item["text"],
                    "project": f"{P}-http",
                    "type": "discovery" if n % 2 else "note",
                    "title": item["text"][:150],
                    "tags": [item["text"][:100]] if len(item["text"]) <= 100 else [],
                    "metadata": {"raw": item["text"]},
                }
                response = client.post("/api/observations", json=body)
                assert response.status_code in (200, 201), response.text
    finally:
        live.stop()
    return len(SECRETS)


def _mcp(memory: Memory) -> int:
    server = build_server(lambda: memory, default_project=f"{P}-mcp")

    async def main() -> None:
        async with Client(server) as client:
            for n, item in enumerate(SECRETS):
                tool = "save_knowledge" if n % 2 else "save_observation"
                # No title: the server pre-parses a JSON-looking `str | None` title into
                # an object and rejects it (reported on the issue).
                args: dict[str, Any] = {"content": item["text"]}
                if tool == "save_knowledge":
                    args["type"] = "lesson"
                result = await client.call_tool(tool, args)
                assert not result.is_error, result.content

    anyio.run(main)
    return len(SECRETS)


@pytest.mark.slow
def test_no_secret_reaches_the_database_file_through_any_entry_point(
    memory: Memory, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(SECRETS) >= 100
    counts = {
        "facade": _facade(memory),
        "cli": _cli(home, tmp_path),
        "jsonl": _jsonl(home, tmp_path),
        "hooks": _hooks(home, tmp_path),
        "http": _http(memory),
        "mcp": _mcp(memory),
    }
    stored = memory.store.count_memories(MemoryFilter())
    db = Path(memory.store.location)
    memory.close()
    # Every entry point really stored something (the test greps a populated file).
    with __import__("sqlite3").connect(db) as conn:
        projects = {row[0] for row in conn.execute("SELECT DISTINCT project FROM memories")}
    assert {P, f"{P}-cli", f"{P}-jsonl", "work", f"{P}-http", f"{P}-mcp"} <= projects
    found = leaked(db, [item["secret"] for item in SECRETS])
    with capsys.disabled():
        print(
            f"\nsecret corpus: {len(SECRETS)} secrets through {counts}, {stored} memories"
            f" stored, {sum(len(v) for v in found.values())} found in the database files"
        )
    assert found == {}


def test_leak_check_finds_a_planted_secret(memory: Memory) -> None:
    """The grep above can fail: a secret stored on purpose through the raw store is found."""
    from memlane.models import NewMemory, utcnow

    secret = SECRETS[0]["secret"]
    memory.store.insert_memory(
        NewMemory(project=P, kind="note", type="note", content=f"x {secret} y",
                  normalized_hash="h", created_at=utcnow())
    )  # fmt: skip
    db = Path(memory.store.location)
    assert secret in leaked(db, [secret]).get(db.name + "-wal", []) + leaked(db, [secret]).get(
        db.name, []
    )


def test_ordinary_corpus_is_stored_unchanged(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    unchanged = 0
    changed: list[str] = []
    for n, item in enumerate(ORDINARY):
        text = item["text"]
        result = memory.save(text, project=P, type="note", title=f"snippet {n}")
        stored = memory.get(result.id).content
        if stored == text.strip():
            unchanged += 1
        else:
            changed.append(text[:60])
    rate = unchanged / len(ORDINARY)
    with capsys.disabled():
        print(f"\nordinary corpus via the facade: {unchanged}/{len(ORDINARY)} unchanged"
              f" ({rate:.1%}); changed: {changed}")  # fmt: skip
    assert len(ORDINARY) >= 200
    assert rate >= 0.95


def test_a_name_holding_a_secret_is_refused_not_stored(memory: Memory) -> None:
    """A project name, session id or type is an identity, not text to mask: one holding a
    secret or a private block is refused (422, invalid_input), and nothing is stored."""
    secret = "PWXnameZq9"
    names = {
        "project": [f"api password={secret}", f"api<private>{secret}</private>"],
        "session_id": [f"s token={secret}", f"s<PRIVATE>{secret}"],
        "type": [f"token={secret}", f"<private>{secret}</private>"],
    }
    live = LiveServer(memory).start()
    try:
        with httpx.Client(base_url=live.base_url, headers=live.auth(), timeout=10) as client:
            for field, values in names.items():
                for value in values:
                    for path, kind in (("/api/observations", "note"), ("/api/knowledge", "lesson")):
                        body = {"content": "a note", "project": "api", "type": kind, field: value}
                        response = client.post(path, json=body)
                        assert response.status_code == 422, response.text
                        if field != "type":  # a type is one of a list (schemas.ObservationType)
                            assert "holds a secret or a private block" in response.text
                        assert secret not in response.text
            summary = {"session_id": names["session_id"][0], "project": "api", "request": "r"}
            assert client.post("/api/summaries", json=summary).status_code == 422
            saved = client.post("/api/observations", json={"content": "a note", "project": "api"})
            edit = client.patch(
                f"/api/observations/{saved.json()['id']}", json={"type": names["type"][0]}
            )
            assert edit.status_code == 422, edit.text
    finally:
        live.stop()
    db = Path(memory.store.location)
    memory.close()
    assert leaked(db, [secret]) == {}


def test_an_escaped_private_block_in_tool_output_is_removed(home: Path, tmp_path: Path) -> None:
    """A private block a tool prints inside JSON (Go's encoder writes ``<`` as ``\\u003c``,
    PHP ``/`` as ``\\/``), HTML (``&lt;``, ``&#60;``) or a URL (``%3C``) is the same block
    to whoever reads it back: removed."""
    work = tmp_path / "work"
    work.mkdir()
    outputs = [
        '{"body": "plan \\u003cprivate\\u003ePRIVXgo\\u003c/private\\u003e done"}',
        '{"body": "plan \\u003cPRIVATE reason=\\"x\\"\\u003ePRIVXphp\\u003c\\/private\\u003e"}',
        "<p>plan &lt;private&gt;PRIVXhtml&lt;/private&gt; done</p>",
        '{"body": "plan \\u003cprivate\\u003ePRIVXunclosed and the rest"}',
        "<p>plan &#60;private&#62;PRIVXdecimal&#x3C;/private&#x3E; done</p>",
        "GET /search?q=plan%20%3Cprivate%3EPRIVXurl%3C%2Fprivate%3E%20done 200",
    ]
    for n, stdout in enumerate(outputs):
        payload = {
            "session_id": "escaped",
            "cwd": str(work),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": f"t{n}",
            "tool_input": {"command": f"gh api repos/o/r/issues/{n}"},
            "tool_response": {"stdout": stdout, "stderr": ""},
        }
        out = subprocess.run(
            [*MEMLANE_CMD, "hook", "post-tool-use"],
            input=json.dumps(payload),
            env=run_env(home),
            cwd=work,
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
    db = home / "memlane.db"
    with __import__("sqlite3").connect(db) as conn:
        stored = [row[0] for row in conn.execute("SELECT content FROM memories")]
    assert len(stored) == len(outputs) and all("plan" in text for text in stored), stored
    assert (
        leaked(
            db, ["PRIVXgo", "PRIVXphp", "PRIVXhtml", "PRIVXunclosed", "PRIVXdecimal", "PRIVXurl"]
        )
        == {}
    )


def test_a_block_split_across_two_fields_is_removed(home: Path) -> None:
    """Title and content are filtered apart: a block opened at the end of the title and
    closed in the content is removed from both (the closing tag without its opening one
    removes the text before it, as an opening tag without its closing one the text after)."""
    out = subprocess.run(
        [*MEMLANE_CMD, "save", "PRIVXsplit</private> tail", "--title", "head <private>",
         "--project", P],
        env=run_env(home), capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    db = home / "memlane.db"
    with __import__("sqlite3").connect(db) as conn:
        rows = list(conn.execute("SELECT title, content FROM memories"))
    assert rows == [("head", "tail")], rows
    assert leaked(db, ["PRIVXsplit"]) == {}


# Spellings of a private block and glued tokens that reached the database before:
# URL-encoded twice, a namespace prefix, a line break after "<", a token glued to a word.
_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SPELLED = {
    "PRIVXpct": "plan %253Cprivate%253EPRIVXpct%253C/private%253E done",
    "PRIVXns": "plan <x:private>PRIVXns</x:private> done",
    "PRIVXfoo": "plan <foo:private>PRIVXfoo</foo:private> done",
    "PRIVXline": "plan <\nprivate>PRIVXline</\nprivate> done",
    "PRIVXblank": "plan < private >PRIVXblank< /private > done",
    _TOKEN: f"plan t{_TOKEN} and xyz{_TOKEN} done",
}


def test_spellings_that_were_stored_reach_no_entry_point(home: Path, tmp_path: Path) -> None:
    """`memlane save`, a PostToolUse hook and `memlane import jsonl`, each given every
    spelling: what the block held, and the token, are in no file of the database."""
    work = tmp_path / "work"
    work.mkdir()
    env = run_env(home)
    records = tmp_path / "records.jsonl"
    records.write_text(
        "".join(
            json.dumps({"text": t, "id": f"r{n}"}) + "\n" for n, t in enumerate(SPELLED.values())
        )
    )
    for n, text in enumerate(SPELLED.values()):
        saved = subprocess.run([*MEMLANE_CMD, "save", text, "--project", P], env=env,
                               capture_output=True, text=True)  # fmt: skip
        assert saved.returncode == 0, saved.stderr
        payload = {
            "session_id": "spelled",
            "cwd": str(work),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": f"t{n}",
            "tool_input": {"command": f"gh api repos/o/r/issues/{n}"},
            "tool_response": {"stdout": text, "stderr": ""},
        }
        hook = subprocess.run([*MEMLANE_CMD, "hook", "post-tool-use"], input=json.dumps(payload),
                              env=env, cwd=work, capture_output=True, text=True)  # fmt: skip
        assert hook.returncode == 0, hook.stderr
    imported = subprocess.run([*MEMLANE_CMD, "import", "jsonl", str(records), "--project", P],
                              env=env, capture_output=True, text=True)  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    db = home / "memlane.db"
    with __import__("sqlite3").connect(db) as conn:
        stored = [row[0] for row in conn.execute("SELECT content FROM memories")]
    assert len(stored) >= len(SPELLED) and all("plan" in text for text in stored), stored
    assert leaked(db, list(SPELLED)) == {}


def test_an_encoded_key_in_tool_output_is_masked(home: Path, tmp_path: Path) -> None:
    """Secrets a tool prints encoded: a base64 PEM private key (kubeconfig, a Kubernetes
    Secret) and a percent-encoded signature in a URL (an Azure SAS link). A base64
    certificate is public and stays."""
    import base64

    work = tmp_path / "work"
    work.mkdir()
    pem = b"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7PWXq9\n-----END RSA PRIVATE KEY-----"
    key = base64.b64encode(pem).decode()
    cert = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIBkTCB+wIJAKHHIG...\n").decode()
    sig = "5fKq8%2F8H0b3hqYkzP2r6%2BmTnKs2pB3b4u%2F9fL8xQnXo%3D"
    outputs = {
        "kubectl config view --raw": f"users:\n- name: admin\n  user:\n"
        f"    client-certificate-data: {cert}\n    client-key-data: {key}\n",
        "az storage blob generate-sas --full-uri": "https://acct.blob.core.windows.net/c/b.zip"
        f"?sv=2021-06-08&se=2026-01-01&sr=b&sp=r&sig={sig}",
    }
    for n, (command, stdout) in enumerate(outputs.items()):
        payload = {
            "session_id": "encoded",
            "cwd": str(work),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": f"t{n}",
            "tool_input": {"command": command},
            "tool_response": {"stdout": stdout, "stderr": ""},
        }
        out = subprocess.run(
            [*MEMLANE_CMD, "hook", "post-tool-use"],
            input=json.dumps(payload),
            env=run_env(home),
            cwd=work,
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
    db = home / "memlane.db"
    with __import__("sqlite3").connect(db) as conn:
        stored = "\n".join(row[0] for row in conn.execute("SELECT content FROM memories"))
    assert "client-key-data: [REDACTED:private-key]" in stored
    assert cert in stored
    assert "sig=[REDACTED:high-entropy]" in stored
    assert leaked(db, [key[:40], sig, sig.replace("%2F", "/")]) == {}


def test_an_import_record_whose_id_holds_a_secret_is_a_bad_line(home: Path, tmp_path: Path) -> None:
    """A JSONL record's id becomes the memory's source id (its identity on re-import):
    refused like a project name, the line reported, the other lines imported."""
    records = tmp_path / "records.jsonl"
    lines = [
        {"text": "first note", "id": "rec password=PWXrecidZq9"},
        {"text": "second note", "id": "rec<private>PRIVXrecid</private>"},
        {"text": "third note", "id": "rec-3"},
    ]
    records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = subprocess.run(
        [*MEMLANE_CMD, "import", "jsonl", str(records), "--project", "api"],
        env=run_env(home),
        capture_output=True,
        text=True,
    )
    assert "imported 1 new" in out.stdout, out.stdout + out.stderr
    report = out.stdout + out.stderr
    assert report.count("the source id holds a secret or a private block") == 2
    assert leaked(home / "memlane.db", ["PWXrecidZq9", "PRIVXrecid"]) == {}


def test_names_in_imported_sessions_and_hook_folders_are_refused(
    home: Path, tmp_path: Path
) -> None:
    """Session records of an export (`import memlane`, sync pull) and a hook's project,
    named after its folder, are names like any other: refused when they hold a secret."""
    export = tmp_path / "export.jsonl"
    header = {"record": "header", "format": "memlane-export", "version": 2}
    session = {"record": "session", "id": "s1", "project": "api", "agent": "claude"}
    session |= {"status": "ended", "started_at": "2026-01-01T00:00:00+00:00"}
    crafted = [
        {**session, "id": "s1 password=PWXsessidZq9"},
        {**session, "id": "s2", "agent": "claude token=PWXagentZq9"},
        {**session, "id": "s3", "parent_session_id": "p<private>PRIVXparent</private>"},
        {**session, "id": "s4"},
    ]
    export.write_text("".join(json.dumps(r) + "\n" for r in [header, *crafted]))
    out = subprocess.run([*MEMLANE_CMD, "import", "memlane", str(export)], env=run_env(home),
                         capture_output=True, text=True)  # fmt: skip
    assert "1 session," in out.stdout, out.stdout + out.stderr
    assert (out.stdout + out.stderr).count("holds a secret or a private block") == 3
    work = tmp_path / "password=PWXfolderZq9"
    work.mkdir()
    payload = {"session_id": "s5", "cwd": str(work), "hook_event_name": "UserPromptSubmit"}
    payload["prompt"] = "what did we decide about the queue"
    hook = subprocess.run([*MEMLANE_CMD, "hook", "user-prompt-submit"], input=json.dumps(payload),
                          env=run_env(home), cwd=work, capture_output=True, text=True)  # fmt: skip
    assert hook.returncode == 0, hook.stderr
    secrets = ["PWXsessidZq9", "PWXagentZq9", "PRIVXparent", "PWXfolderZq9"]
    assert leaked(home / "memlane.db", secrets) == {}


_KEYED = {
    "db_password": "Quartz.9024.velvet!",
    "JWT_SECRET": "JiuTSu5nY6PcjwgHu8zgHagF",
    "nested": {"api_key": "walnut683OrbitQ"},
    "client_secrets": {"stripe": {"secret_key": "maple5835FalconZ"}},
    "SMTP_PASSWORD": "=Harbor77Lumen",  # "KEY==…" read as a comparison
}
_KEYED_VALUES = ("Quartz.9024", "JiuTSu5nY6", "walnut683", "maple5835", "Harbor77Lu")


def test_a_secret_under_a_secret_named_key_is_masked_in_metadata(
    memory: Memory, home: Path, tmp_path: Path
) -> None:
    """A metadata value is read under its key, as ``key=value`` in text: the value alone
    (``Quartz.9024.velvet!``) says nothing (probe s29 F1: stored in clear through the
    facade, ``import jsonl``, ``import jsonl-store`` and the HTTP API)."""
    plain = {"session_id": "258c7280-ae70-4798-800f-63464d01a85d", "note": "rotate on Friday"}
    saved = memory.save("billing deploy settings", project=P, metadata={**_KEYED, **plain})
    stored = json.dumps(memory.get(saved.id).metadata)
    assert not [v for v in _KEYED_VALUES if v in stored], stored
    assert all(value in stored for value in plain.values())  # a UUID, words: kept

    lines = tmp_path / "keyed.jsonl"
    lines.write_text(json.dumps({"text": "deploy notes", "id": "k1", "metadata": _KEYED}) + "\n")
    store = tmp_path / "store"
    store.mkdir()
    (store / "notes.jsonl").write_text(
        json.dumps({"note": "rotated the billing credentials", **_KEYED}) + "\n"
    )
    for command in (["import", "jsonl", str(lines)], ["import", "jsonl-store", str(store)]):
        out = subprocess.run([*MEMLANE_CMD, "--project", P, *command], env=run_env(home),
                             capture_output=True, text=True)  # fmt: skip
        assert out.returncode == 0, out.stderr
    live = LiveServer(memory).start()
    try:
        with httpx.Client(base_url=live.base_url, headers=live.auth(), timeout=10) as client:
            body = {"content": "deploy notes", "project": P, "metadata": _KEYED}
            assert client.post("/api/observations", json=body).status_code in (200, 201)
    finally:
        live.stop()
    exported = subprocess.run([*MEMLANE_CMD, "--all-projects", "export", "--format", "jsonl"],
                              env=run_env(home), capture_output=True, text=True)  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.count("[REDACTED:") >= 10, exported.stdout
    found = leaked(Path(memory.store.location), list(_KEYED_VALUES))  # the facade, HTTP
    assert not found, found
    assert not [v for v in _KEYED_VALUES if v in exported.stdout], exported.stdout


REVEALED = "$ pass show work/ldap\nharbor-Orbit-7741!"
CUT_TOKEN = 'ENV["SQUARE"] = "EAAAUEw_8fyMipKdDU0mFe7OEEuqKfoktwBX1dSa8HlSpS8usTH7AJbH-pKFBTBM"'


def test_a_summary_is_filtered_before_its_labels_and_its_title_cut(memory: Memory) -> None:
    """ "Request: " went before the request and its title cut it at 80 characters before
    the filter ran: a `$ pass show` line was no longer at a line start, a token cut short
    had no format (probe s29 F2: 10 cases stored through MCP and HTTP summaries)."""
    from memlane.models import Checkpoint, Summary

    for n, request in enumerate((REVEALED, CUT_TOKEN)):
        summary = Summary(session_id=f"s{n}", project=P, is_auto_generated=False,
                          request=request, completed=(REVEALED,))  # fmt: skip
        memory.save_summary(summary)
        memory.save_checkpoint(Checkpoint(session_id=f"s{n}", project=P, task=request))
    found = leaked(Path(memory.store.location), ["harbor-Orbit", "EAAAUEw_8fyMipKd"])
    assert not found, found


def test_an_agent_reply_is_filtered_before_its_label(home: Path, tmp_path: Path) -> None:
    """Codex's Stop without a transcript (and Gemini's AfterAgent) keep the last answer
    as "assistant: " + text: the label put a `$ pass show` line off its line start and
    the password after it was stored (probe s29 F3)."""
    project = tmp_path / "project"
    project.mkdir()
    stop = {
        "session_id": "cx-9",
        "turn_id": "t1",
        "transcript_path": "/nonexistent/x.jsonl",
        "cwd": str(project),
        "hook_event_name": "Stop",
        "last_assistant_message": REVEALED,
    }
    done = subprocess.run(
        [*MEMLANE_CMD, "hook", "codex:stop"],
        input=json.dumps(stop).encode(),
        env=run_env(home),
        cwd=project,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    stored = subprocess.run([*MEMLANE_CMD, "--all-projects", "export", "--format", "jsonl"],
                            env=run_env(home), capture_output=True, text=True)  # fmt: skip
    assert "pass show work/ldap" in stored.stdout, stored.stdout  # the reply was kept
    assert "harbor-Orbit" not in stored.stdout, stored.stdout
