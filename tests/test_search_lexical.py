"""Keyword search through the facade on both stores: natural CJK sentences, exact before prefix."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from memlane.config import Settings
from memlane.service import Memory
from memlane.service import open as open_memory


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def mem(request: pytest.FixtureRequest, settings: Settings) -> Iterator[Memory]:
    """A keyword-only memory (no embedder: what a hook without a warm worker searches)."""
    target = None if request.param == "sqlite" else request.getfixturevalue("pg_dsn")
    opened = open_memory(target, settings=replace(settings, embedder="none"))
    yield opened
    opened.close()


def contents(mem: Memory, query: str) -> list[str]:
    hits = mem.search(query, project="p", scope="project", mode="keyword", syntax=False)
    return [hit.content for hit in hits]


JAPANESE = {
    "form": "フォームの管理はReact Hook Formに任せる",
    "tower": "昨日は東京タワーに行った。展望台から富士山が見えた",
    "weather": "東京の天気は晴れ",
    "db": "データベースの移行は来週に延期",
}


@pytest.mark.parametrize(
    ("sentence", "first"),
    [
        ("フォームの管理", "form"),
        ("フォーム管理はどうする？", "form"),
        ("東京タワーに行った日", "tower"),
        ("データベース移行はいつ？", "db"),
    ],
)
def test_a_natural_japanese_sentence_finds_what_shares_its_words(
    mem: Memory, sentence: str, first: str
) -> None:
    for text in JAPANESE.values():
        mem.save(text, project="p")
    mem.save("nothing in Japanese here", project="p")
    found = contents(mem, sentence)
    assert found and found[0] == JAPANESE[first], (sentence, found)
    assert "nothing in Japanese here" not in found


def test_a_natural_chinese_sentence_finds_what_shares_its_words(mem: Memory) -> None:
    target = "数据库迁移已经完成,北京团队确认"
    mem.save(target, project="p")
    mem.save("上海的天气很好", project="p")
    assert contents(mem, "数据库迁移是什么时候完成的？") == [target]


def test_an_exact_number_outranks_the_numbers_it_begins(mem: Memory) -> None:
    for n in range(42420, 42430):
        mem.save(f"record {n}", project="p")
    mem.save("record 4242", project="p")
    for query in ("4242", "record 4242"):
        found = contents(mem, query)
        assert found[0] == "record 4242", (query, found[:3])


REQUESTS = [
    "Can you suggest some scenic drives in the San Juan Islands?",
    "Can you suggest some meditation apps or guided meditation resources?",
    "Thanks for the suggestions, I'm thinking of booking a snorkeling tour.",
    "I read on the porch after 9:30 pm; evening walks with the dog are my favourite activities.",
]


@pytest.mark.parametrize(
    "request_",
    [
        "Can you suggest some activities I can do in the evening?",
        "Any tips or ideas for my evening activities? I'm not sure.",
    ],
)
def test_the_words_of_asking_for_advice_find_nothing_by_themselves(
    mem: Memory, request_: str
) -> None:
    """ "Can you suggest…", "any tips?" say what kind of answer is wanted, not what about:
    past requests that share only them are not found (LongMemEval's preference questions)."""
    for text in REQUESTS:
        mem.save(text, project="p")
    assert contents(mem, request_) == [REQUESTS[-1]]
