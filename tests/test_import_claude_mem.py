"""claude-mem import against a database this test builds with claude-mem's schema.

The schema below follows claude-mem's ``src/services/sqlite/schema.sql``
(thedotmack/claude-mem, migration 35): sdk_sessions, observations,
session_summaries, user_prompts, directives. A second fixture uses the older
column names (``claude_session_id`` / ``sdk_session_id``).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from memlane.errors import InvalidInput
from memlane.models import MemoryFilter
from memlane.service import Memory
from tests.conftest import MEMLANE_CMD, run_env

SCHEMA = """
CREATE TABLE sdk_sessions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  content_session_id TEXT UNIQUE NOT NULL,
  memory_session_id TEXT UNIQUE,
  project TEXT NOT NULL,
  platform_source TEXT NOT NULL DEFAULT 'claude',
  user_prompt TEXT,
  started_at TEXT NOT NULL,
  started_at_epoch INTEGER NOT NULL,
  completed_at TEXT,
  completed_at_epoch INTEGER,
  status TEXT NOT NULL DEFAULT 'active' CHECK(status IN ('active', 'completed', 'failed')),
  worker_port INTEGER,
  prompt_counter INTEGER DEFAULT 0,
  custom_title TEXT
);
CREATE TABLE observations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id TEXT NOT NULL,
  project TEXT NOT NULL,
  text TEXT,
  type TEXT NOT NULL,
  title TEXT,
  subtitle TEXT,
  facts TEXT,
  narrative TEXT,
  concepts TEXT,
  files_read TEXT,
  files_modified TEXT,
  prompt_number INTEGER,
  discovery_tokens INTEGER DEFAULT 0,
  content_hash TEXT,
  agent_type TEXT,
  agent_id TEXT,
  merged_into_project TEXT,
  generated_by_model TEXT,
  metadata TEXT,
  created_at TEXT NOT NULL,
  created_at_epoch INTEGER NOT NULL,
  FOREIGN KEY(memory_session_id) REFERENCES sdk_sessions(memory_session_id)
    ON DELETE CASCADE ON UPDATE CASCADE,
  UNIQUE(memory_session_id, content_hash)
);
CREATE TABLE session_summaries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id TEXT NOT NULL,
  project TEXT NOT NULL,
  request TEXT,
  investigated TEXT,
  learned TEXT,
  completed TEXT,
  next_steps TEXT,
  files_read TEXT,
  files_edited TEXT,
  notes TEXT,
  prompt_number INTEGER,
  discovery_tokens INTEGER DEFAULT 0,
  merged_into_project TEXT,
  created_at TEXT NOT NULL,
  created_at_epoch INTEGER NOT NULL
);
CREATE TABLE user_prompts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  content_session_id TEXT NOT NULL,
  prompt_number INTEGER NOT NULL,
  prompt_text TEXT NOT NULL,
  created_at TEXT NOT NULL,
  created_at_epoch INTEGER NOT NULL
);
CREATE TABLE directives (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  scope TEXT NOT NULL DEFAULT 'global',
  project TEXT,
  content TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'active',
  source TEXT NOT NULL DEFAULT 'manual',
  created_at TEXT NOT NULL,
  created_at_epoch INTEGER NOT NULL,
  updated_at_epoch INTEGER NOT NULL
);
"""
MS = 1_735_000_000_000  # 2024-12-24, in milliseconds as claude-mem writes Date.now()


def iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def build_db(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute(
        "INSERT INTO sdk_sessions (content_session_id, memory_session_id, project,"
        " started_at, started_at_epoch, completed_at, completed_at_epoch, status,"
        " prompt_counter) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ("cc-111", "sdk-aaa", "shop", iso(MS), MS, iso(MS + 600_000), MS + 600_000, "completed", 2),
    )
    conn.execute(
        "INSERT INTO sdk_sessions (content_session_id, memory_session_id, project,"
        " started_at, started_at_epoch, status) VALUES (?, ?, ?, ?, ?, ?)",
        ("cc-222", "sdk-bbb", "blog", iso(MS + 10**6), MS + 10**6, "active"),
    )
    observations = [
        (
            "sdk-aaa",
            "shop",
            "decision",
            "Stripe webhooks verified",
            "signature check",
            json.dumps(["verify Stripe-Signature header", "reject replays after 5 min"]),
            "We verify every webhook with the signing secret before trusting it.",
            json.dumps(["security", "payments"]),
            json.dumps(["src/pay.py"]),
            json.dumps(["src/webhooks.py"]),
            MS + 1000,
        ),
        (
            "sdk-aaa",
            "shop",
            "bugfix",
            "Cart total rounding",
            None,
            json.dumps(["use Decimal for money"]),
            "Float sums drifted by a cent; switched to Decimal.",
            json.dumps(["money"]),
            None,
            json.dumps(["src/cart.py"]),
            MS + 2000,
        ),
        (
            "sdk-bbb",
            "blog",
            "how-it-works",
            "Static build",
            None,
            None,
            "The site builds with a Makefile target.",
            None,
            None,
            None,
            MS + 3000,
        ),
        # malformed: no text at all
        ("sdk-bbb", "blog", "discovery", None, None, None, None, None, None, None, MS + 4000),
    ]
    conn.executemany(
        "INSERT INTO observations (memory_session_id, project, type, title, subtitle, facts,"
        " narrative, concepts, files_read, files_modified, created_at, created_at_epoch)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(*row[:10], iso(row[10]), row[10]) for row in observations],
    )
    conn.execute(
        "INSERT INTO session_summaries (memory_session_id, project, request, investigated,"
        " learned, completed, next_steps, files_read, files_edited, notes, created_at,"
        " created_at_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            "sdk-aaa",
            "shop",
            "harden payments",
            "webhook handler",
            "Stripe signs every webhook",
            "signature verification",
            "add replay tests",
            json.dumps(["src/pay.py"]),
            json.dumps(["src/webhooks.py"]),
            None,
            iso(MS + 500_000),
            MS + 500_000,
        ),
    )
    conn.executemany(
        "INSERT INTO user_prompts (content_session_id, prompt_number, prompt_text, created_at,"
        " created_at_epoch) VALUES (?, ?, ?, ?, ?)",
        [
            ("cc-111", 1, "make the webhooks safe", iso(MS + 100), MS + 100),
            ("cc-111", 2, "now fix the cart rounding", iso(MS + 1500), MS + 1500),
        ],
    )
    conn.execute(
        "INSERT INTO directives (project, content, created_at, created_at_epoch,"
        " updated_at_epoch) VALUES (?, ?, ?, ?, ?)",
        ("shop", "Never log card numbers", iso(MS), MS, MS),
    )
    conn.commit()
    conn.close()


@pytest.fixture
def claude_db(tmp_path: Path) -> Path:
    path = tmp_path / "claude-mem.db"
    build_db(path)
    return path


def test_import_maps_every_table(memory: Memory, claude_db: Path) -> None:
    report = memory.import_claude_mem(str(claude_db))
    # 3 good observations + 1 summary + 2 prompts + 1 directive; 1 observation has no text
    assert report.created == 7
    assert report.sessions == 2
    assert [e.line for e in report.errors] == [4]
    assert "no text" in report.errors[0].message
    assert report.details == {
        "observations": 3,
        "session_summaries": 1,
        "user_prompts": 2,
        "directives": 1,
    }

    shop = memory.list_memories(project="shop", limit=50)
    by_title = {m.title: m for m in shop}
    webhook = by_title["Stripe webhooks verified"]
    assert (webhook.kind, webhook.type) == ("knowledge", "decision")
    assert webhook.session_id == "cc-111"  # the agent's session id, not claude-mem's own
    assert "reject replays after 5 min" in webhook.content
    assert webhook.files == ("src/webhooks.py", "src/pay.py")
    assert webhook.tags == ("security", "payments")
    assert webhook.source == "claude-mem"
    assert webhook.created_at.timestamp() == pytest.approx((MS + 1000) / 1000)

    blog = memory.list_memories(project="blog", limit=50)
    [static] = blog
    assert static.type == "discovery"
    assert static.metadata["claude_mem"]["type"] == "how-it-works"

    summaries = memory.store.list_memories(MemoryFilter(kinds=("summary",)))
    assert len(summaries) == 1
    data = summaries[0].metadata["summary"]
    assert data["learned"] == ["Stripe signs every webhook"]
    assert data["is_auto_generated"] is True

    prompts = memory.store.list_memories(MemoryFilter(kinds=("prompt",)), newest_first=False)
    assert [p.content for p in prompts] == ["make the webhooks safe", "now fix the cart rounding"]
    assert "Never log card numbers" in by_title["Directive"].content

    session = memory.get_session("cc-111")
    assert (session.project, session.status, session.prompt_count) == ("shop", "ended", 2)
    assert memory.get_session("cc-222").status == "active"


def test_second_run_adds_nothing_and_deleted_rows_stay_deleted(
    memory: Memory, claude_db: Path
) -> None:
    first = memory.import_claude_mem(str(claude_db))
    count = memory.stats().memories
    [cart] = [m for m in memory.list_memories(project="shop") if m.title == "Cart total rounding"]
    memory.delete(id=cart.id)
    second = memory.import_claude_mem(str(claude_db))
    assert (second.created, second.updated, second.sessions) == (0, 0, 0)
    assert second.skipped == first.created
    assert memory.stats().memories == count - 1

    # a new row in claude-mem is picked up by the next run
    conn = sqlite3.connect(claude_db)
    conn.execute(
        "INSERT INTO user_prompts (content_session_id, prompt_number, prompt_text, created_at,"
        " created_at_epoch) VALUES ('cc-111', 3, 'ship it', ?, ?)",
        (iso(MS + 9000), MS + 9000),
    )
    conn.commit()
    conn.close()
    third = memory.import_claude_mem(str(claude_db))
    assert third.created == 1


def test_dry_run_writes_nothing(memory: Memory, claude_db: Path) -> None:
    report = memory.import_claude_mem(str(claude_db), dry_run=True)
    assert report.dry_run
    assert report.created == 7
    assert report.sessions == 2
    assert memory.stats().memories == 0
    assert memory.stats().sessions == 0


def test_into_relabels_every_row(memory: Memory, claude_db: Path) -> None:
    report = memory.import_claude_mem(str(claude_db), into="merged")
    assert set(memory.stats().projects) == {"merged"}
    assert memory.get_session("cc-222").project == "merged"
    assert report.projects == {"shop": 6, "blog": 1}  # counted by their claude-mem project


def test_project_imports_only_that_project_and_leaves_the_rest_for_later(
    memory: Memory, claude_db: Path
) -> None:
    shop = memory.import_claude_mem(str(claude_db), project="shop")
    # 2 observations, the summary, both prompts (their session is shop's), the directive
    assert (shop.created, shop.sessions, shop.projects) == (6, 1, {"shop": 6})
    assert shop.details["other projects"] == 2  # blog's good and bad observation
    assert shop.errors == ()  # blog's bad row is not this run's business
    assert set(memory.stats().projects) == {"shop"}
    assert memory.store.get_session("cc-222") is None
    prompts = memory.list_memories(project="shop", kinds=["prompt"])
    assert len(prompts) == 2
    # blog was left out, not marked seen: its own run imports it, relabelled
    blog = memory.import_claude_mem(str(claude_db), project="blog", into="journal")
    assert (blog.created, blog.sessions, blog.projects) == (1, 1, {"blog": 1})
    assert [m.title for m in memory.list_memories(project="journal")] == ["Static build"]
    assert memory.get_session("cc-222").project == "journal"
    assert memory.import_claude_mem(str(claude_db)).created == 0  # everything seen once


def test_unknown_project_names_the_ones_there(memory: Memory, claude_db: Path) -> None:
    with pytest.raises(
        InvalidInput, match=r"no claude-mem project 'shp' \(its projects: blog, shop\)"
    ):
        memory.import_claude_mem(str(claude_db), project="shp")
    assert memory.stats().memories == 0


def test_legacy_column_names(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE sdk_sessions (id INTEGER PRIMARY KEY, claude_session_id TEXT,
          sdk_session_id TEXT, project TEXT, started_at TEXT, started_at_epoch INTEGER,
          status TEXT);
        CREATE TABLE observations (id INTEGER PRIMARY KEY, sdk_session_id TEXT, project TEXT,
          text TEXT, type TEXT, created_at TEXT, created_at_epoch INTEGER);
        CREATE TABLE user_prompts (id INTEGER PRIMARY KEY, claude_session_id TEXT,
          prompt_number INTEGER, prompt_text TEXT, created_at TEXT, created_at_epoch INTEGER);
        """
    )
    conn.execute(
        "INSERT INTO sdk_sessions VALUES (1, 'cc-old', 'sdk-old', 'legacy', ?, ?, 'completed')",
        (iso(MS), MS),
    )
    conn.execute(
        "INSERT INTO observations VALUES (1, 'sdk-old', 'legacy', 'old style row', 'feature',"
        " ?, ?)",
        (iso(MS), MS),
    )
    conn.execute(
        "INSERT INTO user_prompts VALUES (1, 'cc-old', 1, 'old prompt', ?, ?)", (iso(MS), MS)
    )
    conn.commit()
    conn.close()
    report = memory.import_claude_mem(str(path))
    assert report.created == 2
    assert report.errors == ()
    rows = memory.list_memories(project="legacy")
    assert {m.session_id for m in rows} == {"cc-old"}


def test_not_a_claude_mem_database(memory: Memory, tmp_path: Path) -> None:
    other = tmp_path / "x.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(InvalidInput, match="no claude-mem tables"):
        memory.import_claude_mem(str(other))
    with pytest.raises(InvalidInput, match="no claude-mem database"):
        memory.import_claude_mem(str(tmp_path / "missing.db"))
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(InvalidInput, match="not a readable SQLite"):
        memory.import_claude_mem(str(junk))


def test_a_generated_column_is_never_read(memory: Memory, claude_db: Path) -> None:
    # A virtual generated column runs the file's own SQL on every read: one that repeats
    # a character 300 million times made a 40 KB file's 20 rows take 6.5 GB. This one
    # fails when it runs, so the import shows it never ran. A column name with a quote
    # in it must not break (or extend) the query that reads the columns.
    conn = sqlite3.connect(claude_db)
    conn.executescript(
        "ALTER TABLE observations ADD COLUMN"
        " padding TEXT GENERATED ALWAYS AS (json_extract('not json', '$')) VIRTUAL;"
        " ALTER TABLE session_summaries ADD COLUMN"
        " padding TEXT GENERATED ALWAYS AS (json_extract('not json', '$')) VIRTUAL;"
        """ ALTER TABLE user_prompts ADD COLUMN "x"", json_extract('not json', '$') AS ""y" TEXT;"""
    )
    conn.close()
    report = memory.import_claude_mem(str(claude_db))
    assert report.created == 7
    assert report.details == {
        "observations": 3,
        "session_summaries": 1,
        "user_prompts": 2,
        "directives": 1,
    }


def test_a_text_that_is_not_utf8_keeps_its_row(memory: Memory, claude_db: Path) -> None:
    # SQLite stores whatever bytes it was given as TEXT; Python refused the whole import.
    conn = sqlite3.connect(claude_db)
    conn.execute(
        "UPDATE observations SET narrative = CAST(X'636166E920627567' AS TEXT)"
        " WHERE title = 'Cart total rounding'"
    )
    conn.commit()
    conn.close()
    report = memory.import_claude_mem(str(claude_db))
    assert report.created == 7
    [cart] = [m for m in memory.list_memories(project="shop") if m.title == "Cart total rounding"]
    assert "caf\ufffd bug" in cart.content


def test_a_summary_is_filtered_before_its_title_cuts_it(memory: Memory, claude_db: Path) -> None:
    """The title "Session summary: " + request[:80] was cut before the filter: a token
    cut at 80 characters has no format left (probe s29 F2); the labels ("Request: ")
    put a `$ pass show` line off its line start."""
    token = "EAAAUEw_8fyMipKdDU0mFe7OEEuqKfoktwBX1dSa8HlSpS8usTH7AJbH-pKFBTBM"
    conn = sqlite3.connect(claude_db)
    conn.execute(
        "UPDATE session_summaries SET request = ?, learned = ?",
        (f'ENV["SQUARE"] = "{token}"', "$ pass show work/ldap\nharbor-Orbit-7741!"),
    )
    conn.commit()
    conn.close()
    memory.import_claude_mem(str(claude_db))
    [summary] = [m for m in memory.list_memories(project="shop") if m.kind == "summary"]
    shown = json.dumps([summary.title, summary.content, summary.metadata])
    assert token[:16] not in shown and "harbor-Orbit" not in shown, shown


def test_a_table_without_ids_is_refused(memory: Memory, tmp_path: Path) -> None:
    db = tmp_path / "claude-mem.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE user_prompts (prompt_text TEXT)")
        conn.execute("INSERT INTO user_prompts VALUES ('hello')")
    conn.close()
    with pytest.raises(InvalidInput, match="user_prompts has no id column"):
        memory.import_claude_mem(str(db))


def test_cli_import_claude_mem(home: Path, claude_db: Path) -> None:
    env = run_env(home)
    cmd = [*MEMLANE_CMD, "import", "claude-mem", "--source", str(claude_db)]
    dry = subprocess.run([*cmd, "--dry-run"], capture_output=True, text=True, env=env)
    assert "would import 7 new" in dry.stdout
    assert "per project: blog 1, shop 6" in dry.stdout
    only = subprocess.run(
        [*cmd, "--project", "blog", "--into", "journal", "--dry-run", "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    data = json.loads(only.stdout)
    assert (data["created"], data["projects"], data["dry_run"]) == (1, {"blog": 1}, True)
    unknown = subprocess.run([*cmd, "--project", "nope"], capture_output=True, text=True, env=env)
    assert unknown.returncode != 0 and unknown.stdout == ""
    assert unknown.stderr.count("\n") == 1 and "its projects: blog, shop" in unknown.stderr
    done = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env)
    data = json.loads(done.stdout)
    assert data["created"] == 7
    assert data["errors"][0]["line"] == 4
    assert done.returncode == 2  # bad rows are reported with a non-zero exit
    again = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert "imported 0 new" in again.stdout


def test_cli_project_filters_and_into_relabels(home: Path, claude_db: Path) -> None:
    """Kizami's flags through the command line: --project picks, --into relabels."""
    env = run_env(home)
    cmd = [*MEMLANE_CMD, "import", "claude-mem", "--source", str(claude_db), "--json"]

    def projects() -> dict[str, int]:
        shown = subprocess.run(
            [*MEMLANE_CMD, "stats", "--json"], capture_output=True, text=True, env=env
        )
        return dict(json.loads(shown.stdout)["projects"])

    shop = subprocess.run([*cmd, "--project", "shop"], capture_output=True, text=True, env=env)
    assert shop.returncode == 0, shop.stderr
    assert json.loads(shop.stdout)["projects"] == {"shop": 6}
    assert projects() == {"shop": 6}  # no blog row came along
    blog = subprocess.run(
        [*cmd, "--project", "blog", "--into", "journal"], capture_output=True, text=True, env=env
    )
    assert json.loads(blog.stdout)["created"] == 1
    assert projects() == {"shop": 6, "journal": 1}


@pytest.mark.parametrize(
    ("update", "line", "said"),
    [
        ("UPDATE sdk_sessions SET prompt_counter = 'many' WHERE id = 1", 1, "not a count"),
        ("UPDATE sdk_sessions SET started_at_epoch = 1e300 WHERE id = 1", 1, "out of range"),
        ("UPDATE observations SET created_at_epoch = 1e300 WHERE id = 1", 1, "out of range"),
        (
            "UPDATE observations SET created_at_epoch = 0, created_at = '9999-12-31T23:59:59'"
            " WHERE id = 1",
            1,
            "out of range",
        ),
        # Five years ahead (milliseconds, as claude-mem writes): refused as every import
        # refuses it; it would win over every later edit once synced.
        (
            "UPDATE observations SET created_at_epoch = 1954000000000 WHERE id = 1",
            1,
            "ahead of this machine's clock",
        ),
    ],
)
def test_an_odd_value_is_a_bad_row_not_a_traceback(
    home: Path, claude_db: Path, update: str, line: int, said: str
) -> None:
    # `prompt_counter = 'many'` ended the import in a ValueError traceback, an epoch of
    # 1e300 in an OverflowError; nothing was imported (probe D6).
    conn = sqlite3.connect(claude_db)
    conn.execute(update)
    conn.commit()
    conn.close()
    cmd = [*MEMLANE_CMD, "import", "claude-mem", "--source", str(claude_db), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=run_env(home))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    data = json.loads(done.stdout)
    assert data["created"] >= 6
    refused = [e for e in data["errors"] if said in e["message"]]
    assert [e["line"] for e in refused] == [line], data["errors"]
