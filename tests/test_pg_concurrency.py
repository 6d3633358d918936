"""Eight processes writing through PostgresStore at once lose nothing.

Every worker saves its own memories, the same shared fact (dedup must keep one),
the same topic (the upsert must count every revision), marks seen keys, touches
one shared session and stores vectors, all at the same moment (a barrier). The
writers' advisory lock must serialize the facade's check-then-insert the way
SQLite's BEGIN IMMEDIATE does.
"""

from __future__ import annotations

import multiprocessing
from array import array
from pathlib import Path

import pytest

from memlane.models import MemoryFilter

WORKERS = 8
PER_WORKER = 40

pytestmark = pytest.mark.postgres


def _worker(dsn: str, worker: int, barrier: multiprocessing.synchronize.Barrier) -> None:
    import memlane

    mem = memlane.open(dsn)
    try:
        barrier.wait(timeout=60)
        for i in range(PER_WORKER):
            saved = mem.save(
                f"worker {worker} wrote fact number {i}",
                project="team",
                session_id=f"s-{worker}",
                tags=(f"w{worker}",),
            )
            assert saved.status == "created"
            mem.save("the shared fact everyone knows", project="team", type="decision")
            mem.save(f"topic revision by {worker}/{i}", project="team", topic_key="status")
            mem.store.mark_seen("events", [f"{worker}:{i}", "common"])
            mem.touch_session("shared", "team", prompt=False)
            vector = array("f", [float(worker), float(i), 1.0]).tobytes()
            mem.store.put_embeddings("toy", 3, [(saved.id, vector)])
    finally:
        mem.close()


def test_eight_writers_lose_nothing(pg_dsn: str, home: Path) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(WORKERS)
    procs = [
        context.Process(target=_worker, args=(pg_dsn, w, barrier), daemon=True)
        for w in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=240)
    assert [proc.exitcode for proc in procs] == [0] * WORKERS

    import memlane

    mem = memlane.open(pg_dsn)
    try:
        store = mem.store
        own = WORKERS * PER_WORKER
        assert store.count_memories(MemoryFilter(projects=("team",))) == own + 2
        for w in range(WORKERS):
            rows = store.list_memories(MemoryFilter(session_id=f"s-{w}"), limit=1000)
            assert sorted(m.content for m in rows) == sorted(
                f"worker {w} wrote fact number {i}" for i in range(PER_WORKER)
            )
        shared = store.list_memories(MemoryFilter(types=("decision",)))
        assert len(shared) == 1
        topic = store.find_memory("team", topic_key="status")
        assert topic is not None and topic.revision_count == own - 1
        keys = [f"{w}:{i}" for w in range(WORKERS) for i in range(PER_WORKER)]
        assert store.seen("events", [*keys, "common"]) == {*keys, "common"}
        assert store.embedding_counts() == {"toy": own}
        assert store.get_session("shared") is not None
        assert len(store.list_sessions(projects=("team",), limit=100)) == WORKERS + 1
        ids = store.memory_ids(MemoryFilter())
        assert len(ids) == len(set(ids)) == own + 2
    finally:
        mem.close()
