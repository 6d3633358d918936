"""Small lexical and ranking checks of issue 14, through the public API, keyword mode.

Each check saves a handful of memories into a fresh database (plain JSONL
records imported with ``Memory.import_jsonl``, as a user's file arrives), asks
``Memory.search(query, mode="keyword")`` and prints where the expected memory
ranks (``-`` when it is not returned at all):

* **cjk**: natural Japanese and Chinese sentences whose words occur in a memory
  (keyword mode is what the prompt hook uses without a warm worker);
* **exact**: an exact token against ten tokens it prefixes ("4242" vs 42420…);
* **speaker**: a question naming the speaker of a record ("What did Caroline …");
* **recency**: two memories with the same words, January and June, asked in July
  (``as_of``): which comes first, and the two scores.

No model is loaded. Run: ``.venv/bin/python benchmarks/lexical_checks.py``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import memlane
from memlane.config import load_settings

Case = tuple[str, str, str]  # check, query, expected record id

RECORDS: list[dict[str, Any]] = [
    # cjk
    {"id": "ja-form", "text": "フォームの管理はReact Hook Formで行うことにした"},
    {"id": "ja-tower", "text": "昨日は東京タワーに行った。夜景がきれいだった"},
    {"id": "ja-other", "text": "テストの実行には時間がかかる"},
    {"id": "zh-db", "text": "我们决定使用PostgreSQL作为主数据库"},
    {"id": "zh-deploy", "text": "部署脚本在周五失败了，因为缺少环境变量"},
    {"id": "zh-other", "text": "今天的会议讨论了新的设计方案"},
    # exact over prefix
    {"id": "exact", "text": "record 4242"},
    *({"id": f"prefix-{n}", "text": f"record {n}"} for n in range(42420, 42430)),
    # speaker
    {
        "id": "speaker",
        "session": "chat-1",
        "speaker": "Caroline",
        "text": "I went to a LGBTQ support group yesterday and it was so powerful.",
        "timestamp": "2023-05-08T13:56:00Z",
    },
    {
        "id": "speaker-other",
        "session": "chat-1",
        "speaker": "Melanie",
        "text": "I went to the pottery class yesterday, it was relaxing.",
        "timestamp": "2023-05-08T13:57:00Z",
    },
    # recency
    {
        "id": "january",
        "text": "The staging database password rotation runs weekly",
        "timestamp": "2025-01-10T10:00:00Z",
    },
    {
        "id": "june",
        "text": "The staging database password rotation now runs daily, at 02:00 from cron",
        "timestamp": "2025-06-10T10:00:00Z",
    },
]

CASES: list[Case] = [
    ("cjk", "フォームの管理", "ja-form"),
    ("cjk", "フォーム管理はどうする？", "ja-form"),
    ("cjk", "東京タワーに行った日", "ja-tower"),
    ("cjk", "東京", "ja-tower"),
    ("cjk", "主数据库用的是什么？", "zh-db"),
    ("cjk", "部署为什么失败了", "zh-deploy"),
    ("exact", "4242", "exact"),
    ("speaker", "What did Caroline do yesterday?", "speaker"),
    ("speaker", "Caroline support group", "speaker"),
]


def rank_of(hits: list[Any], expected: str) -> str:
    for i, hit in enumerate(hits, 1):
        if hit.source_id == expected:
            return str(i)
    return "-"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="memlane-lexical-") as tmp:
        home = Path(tmp)
        settings, _ = load_settings(environ={"MEMLANE_HOME": str(home)})
        data = home / "records.jsonl"
        data.write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in RECORDS), encoding="utf-8"
        )
        with memlane.open(str(home / "checks.db"), settings=settings) as mem:
            report = mem.import_jsonl(str(data), project="checks")
            if report.errors or report.total != len(RECORDS):
                raise SystemExit(f"import failed: {report}")
            print("| check | query | expected | rank | hits (top 3) |")
            print("|---|---|---|---:|---|")
            for check, query, expected in CASES:
                hits = mem.search(query, project="checks", limit=20, mode="keyword")
                top = ", ".join(str(h.source_id) for h in hits[:3])
                rank = rank_of(hits, expected)
                print(f"| {check} | {query} | {expected} | {rank} | {len(hits)}: {top} |")
            print()
            for as_of in (datetime(2025, 7, 1, tzinfo=UTC), None):
                hits = mem.search(
                    "staging database password rotation",
                    project="checks",
                    limit=5,
                    mode="keyword",
                    as_of=as_of,
                )
                order = ", ".join(f"{h.source_id} {h.score:.3f}" for h in hits)
                when = as_of.date().isoformat() if as_of else "now"
                print(f"recency (same words, asked {when}): {order}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
