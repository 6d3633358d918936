"""Getting memories in and out, and between machines.

One module per format or job: ``jsonl`` (DESIGN §7 records), ``export`` and
``roundtrip`` (memlane's own lossless export and its import), ``claude_mem``
and ``jsonl_store`` (other tools' stores), ``index`` (a portable JSON index),
``sync`` (a folder shared between machines), ``backup`` (SQLite online backup
and restore); ``identity`` names a memory across databases, ``report`` counts
what a run did. Every module takes a :class:`~memlane.core.Core`; every memory
they write goes through :mod:`memlane.memories`.
"""
