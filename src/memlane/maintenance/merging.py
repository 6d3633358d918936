"""Merge: join near-duplicate memories (MinHash LSH candidates, verified exactly).

Merge joins near-duplicates of one project, kind and type whose character
trigram sets (lower-cased, whitespace collapsed, first ``MERGE_TEXT_CHARS``
characters) have a Jaccard similarity at or above the threshold (0.6).

**What each run may merge.** What capture records by itself
(``CAPTURED_KINDS``: observations, transcript turns and units, prompts) merges
by that similarity, in every run: the same command run again with another
duration, count or id is one memory, and the newest is kept (below), so the
latest state survives. What a user or an agent saved on purpose (knowledge -
decisions, constraints, lessons… - and notes) must also not differ in a
meaning-bearing word (:mod:`.wording`: no changed number, negation, polarity or
operator word, at most a small edit of content words): trigrams alone joined
"Do NOT run migrations" with "Do run migrations" and "Retry payments 3 times"
with "Retry emails 30 times". And the maintenance run (scheduled by the Stop
hook, or ``memlane maintain``) merges those only when their texts are the same
but for case, whitespace and punctuation (grouped by their word sequence: no
trigram is computed for them); ``memlane merge`` (explicit, with
``--dry-run``) applies the similarity and the wording rule to them.

**Which memory is kept.** The newest (last written: ``updated_at``, then
``created_at``, then id) is the keeper and takes every unsettled older memory
similar to it, newest first, so a memory once kept or absorbed is never
compared again. Merged texts differ only trivially, and the newest wording is
the one kept: an older text never absorbs a newer one. The keeper inherits the
others' files, tags, access counts, latest activity and a topic key it lacks.
Two memories with different topic keys are distinct topics and never merge;
summaries and checkpoints (one per session) are not merged. A prompt belongs to
the session that asked it (its summary and checkpoint read it back): prompts
merge only with prompts of the same session, hence of one agent, and the kept
prompt lists the numbers of the prompts it absorbed (``merged_numbers``), so
every prompt a session counts is still accounted for.

**Cost.** Candidates come from MinHash LSH (128 seeded hashes in bands sized for
the threshold: a pair at it is found with probability >= 0.98; in a bucket of
more than 512 memories only near neighbours, see ``candidates``) and every one
is verified exactly, so nothing below the threshold merges. The index keeps a
1 KiB signature per memory, never its trigram set (computed again when a pair
is checked). Each memory takes part in at most ``MAX_CHECKS`` exact checks per
pass, its likeliest candidates first: a pass verifies at most ``MAX_CHECKS`` x
memories / 2 pairs. Candidate pairs past that bound are left unmerged (the
log says how many): only a bucket of memories nearly alike with no pair similar
enough reaches it, a crafted one or a large template. The
automatic run is incremental: it looks only for pairs involving a memory
created since the previous run (an hour of margin), so it verifies at most
``MAX_CHECKS`` x new memories pairs; ``memlane merge`` compares everything.
Exact prefix filtering was tried first: on real project text it verified 1.5 M
of 2.2 M pairs, because every chunk of one project shares trigrams. numpy is
imported only when pairs are looked for.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memlane.maintenance._common import _iter_memories, _projects, log
from memlane.maintenance.candidates import WINDOW, CandidateIndex, TextKeys, set_keys
from memlane.maintenance.reports import MergeGroup, MergeReport
from memlane.maintenance.wording import Worded, words
from memlane.models import KINDS, MemoryFilter, utcnow
from memlane.models import Memory as MemoryRecord

if TYPE_CHECKING:
    from memlane.core import Core
    from memlane.store.base import Store

MERGE_SKIP_KINDS: frozenset[str] = frozenset({"summary", "checkpoint"})
# Kinds that merge only within their own session.
SESSION_BOUND_KINDS: frozenset[str] = frozenset({"prompt"})
# Kinds capture records by itself; the automatic run merges the others (what was saved
# on purpose: knowledge, notes) only when their texts are the same (module docstring).
CAPTURED_KINDS: frozenset[str] = frozenset({"observation", "turn", "prompt"})
DEFAULT_MERGE_THRESHOLD = 0.6
# Exact checks a memory takes part in per pass (as many as a large bucket's window).
MAX_CHECKS = 2 * WINDOW
# Lists copied into a merged memory are capped so a hot file cannot grow a row forever.
MAX_MERGED_LINKS = 50


def similar_pairs(
    sets: dict[int, frozenset[str]], threshold: float, probe: set[int] | None = None
) -> dict[int, dict[int, float]]:
    """Pairs with Jaccard >= ``threshold``: MinHash LSH candidates, verified exactly.

    Every pair returned really is that similar; a pair at the threshold is found
    with probability >= 0.98 (far more above it) unless both sit only in large
    buckets (see :mod:`memlane.maintenance.candidates`). With ``probe``, only
    pairs involving one of those ids are looked for. The merge pass does not
    list pairs (:func:`plan_merge` asks the index memory by memory).
    """
    index = CandidateIndex({i: set_keys(s) for i, s in sets.items()}, threshold)
    out: dict[int, dict[int, float]] = defaultdict(dict)
    for i in sorted(sets):
        index.close(i)
        for j, score in index.similar(i, None if probe is None or i in probe else probe):
            out[i][j] = score
            out[j][i] = score
    return dict(out)


def _newest_first(m: MemoryRecord) -> tuple[datetime, datetime, int]:
    return (m.updated_at, m.created_at, m.id)


def _take(
    keeper: MemoryRecord,
    found: Iterable[tuple[int, float]],
    by_id: dict[int, MemoryRecord],
    settle: Any,
) -> MergeGroup | None:
    """``keeper`` absorbs the ``found`` (id, similarity) it may: one topic key at most."""
    topic = keeper.topic_key
    losers: list[int] = []
    lowest = 1.0
    for other_id, score in sorted(found, key=lambda kv: (-kv[1], kv[0])):
        other_topic = by_id[other_id].topic_key
        if other_topic is not None:
            if topic is not None and other_topic != topic:
                continue  # two topics the agent keeps apart on purpose
            topic = other_topic
        del by_id[other_id]
        settle(other_id)
        losers.append(other_id)
        lowest = min(lowest, score)
    return MergeGroup(keeper.id, tuple(sorted(losers)), round(lowest, 4)) if losers else None


def _group_same(members: Sequence[MemoryRecord], probe: set[int] | None) -> list[MergeGroup]:
    """Groups of memories whose texts are the same but for case, blanks and punctuation."""
    by_words: dict[tuple[str, ...], list[MemoryRecord]] = defaultdict(list)
    for m in members:
        by_words[tuple(words(m.content))].append(m)
    groups: list[MergeGroup] = []
    for same in by_words.values():
        if len(same) < 2 or (probe is not None and not probe.intersection(m.id for m in same)):
            continue
        by_id = {m.id: m for m in same}
        for keeper in sorted(same, key=_newest_first, reverse=True):
            if keeper.id not in by_id:
                continue
            del by_id[keeper.id]
            found = [(m.id, 1.0) for m in by_id.values()]
            group = _take(keeper, found, by_id, lambda _i: None)
            if group is not None:
                groups.append(group)
    return groups


def _group(
    members: Sequence[MemoryRecord],
    threshold: float,
    probe: set[int] | None,
    *,
    same_only: bool = False,
    check_wording: bool = True,
) -> tuple[list[MergeGroup], int]:
    """Greedy groups: newest memory first, each takes its similar unsettled ones (with
    ``check_wording``, only those whose words do not differ in meaning).

    A memory is settled once it has been a keeper or was absorbed, so the index
    never offers it again: no pair is verified twice and none is stored.
    """
    if probe is not None and not probe.intersection(m.id for m in members):
        return [], 0
    if same_only:
        return _group_same(members, probe), len(members)
    index = CandidateIndex(
        TextKeys({m.id: m.content for m in members}), threshold, max_checks=MAX_CHECKS
    )
    by_id = {m.id: m for m in members}
    worded: dict[int, Worded] = {}

    def wording_of(m: MemoryRecord) -> Worded:
        if m.id not in worded:
            worded[m.id] = Worded.of(m.content)
        return worded[m.id]

    groups: list[MergeGroup] = []
    for keeper in sorted(members, key=_newest_first, reverse=True):
        if keeper.id not in by_id:
            continue  # absorbed by a newer one
        index.close(keeper.id)
        found = index.similar(keeper.id, None if probe is None or keeper.id in probe else probe)
        if check_wording:  # similar letters, different meaning ("do" / "do not"): two
            found = [
                (other, score)
                for other, score in found
                if not wording_of(keeper).differs_from(wording_of(by_id[other]))
            ]
        group = _take(keeper, found, by_id, index.close)
        if group is not None:
            groups.append(group)
    if index.pairs_skipped or index.memories_spent:
        log.info(
            "merge: %d candidate pairs not checked in this pass, and %d memories not looked"
            " at for their own (each memory takes part in at most %d checks)",
            index.pairs_skipped,
            index.memories_spent,
            MAX_CHECKS,
        )
    return groups, len(members)


def plan_merge(
    core: Core,
    *,
    threshold: float = DEFAULT_MERGE_THRESHOLD,
    projects: tuple[str, ...] | None = None,
    exclude: frozenset[int] = frozenset(),
    since: datetime | None = None,
    automatic: bool = False,
) -> tuple[list[MergeGroup], int]:
    """Merge groups of near-duplicates and how many memories were compared.

    With ``since``, only pairs involving a memory created at or after it are
    looked for (the automatic run: older pairs were compared by the last run).
    With ``automatic``, kinds not in ``CAPTURED_KINDS`` merge only when their
    texts are the same (see the module docstring).
    """
    kinds = tuple(k for k in KINDS if k not in MERGE_SKIP_KINDS)
    buckets: dict[tuple[str, str, str, str], list[MemoryRecord]] = defaultdict(list)
    probe: set[int] | None = None if since is None else set()
    for m in _iter_memories(core.store, MemoryFilter(projects=projects, kinds=kinds)):
        if m.id not in exclude:
            session = (m.session_id or "") if m.kind in SESSION_BOUND_KINDS else ""
            buckets[(m.project, m.kind, m.type, session)].append(m)
            if probe is not None and since is not None and m.created_at >= since:
                probe.add(m.id)
    groups: list[MergeGroup] = []
    compared = 0
    for key in sorted(buckets):
        captured = key[1] in CAPTURED_KINDS
        found, count = _group(
            buckets[key],
            threshold,
            probe,
            same_only=automatic and not captured,
            check_wording=not captured,
        )
        groups.extend(found)
        compared += count
    groups.sort(key=lambda g: g.keep)
    return groups, compared


def _union(first: Sequence[str], rest: Iterable[Sequence[str]]) -> tuple[str, ...]:
    seen = dict.fromkeys(first)
    for items in rest:
        seen.update(dict.fromkeys(items))
    return tuple(list(seen)[:MAX_MERGED_LINKS]) if len(seen) > len(first) else tuple(first)


def _prompt_numbers(prompts: Iterable[MemoryRecord]) -> list[int]:
    """The numbers in their session of ``prompts`` and of the prompts they absorbed."""
    found: list[int] = []
    for m in prompts:
        number = m.metadata.get("number")
        if isinstance(number, int) and not isinstance(number, bool):
            found.append(number)
        found.extend(n for n in m.metadata.get("merged_numbers", []) if isinstance(n, int))
    return found


def apply_merge(store: Store, groups: Sequence[MergeGroup]) -> int:
    """Apply merge groups; returns how many memories were removed."""
    removed = 0
    for group in groups:
        with store.transaction():
            found = {m.id: m for m in store.get_memories([group.keep, *group.remove])}
            keeper = found.get(group.keep)
            if keeper is None:
                continue  # removed meanwhile: nothing to merge into
            losers = [found[i] for i in group.remove if i in found]
            if not losers:
                continue
            topic = keeper.topic_key or next((m.topic_key for m in losers if m.topic_key), None)
            accessed = [m.last_accessed_at for m in (keeper, *losers) if m.last_accessed_at]
            merged_from = [*keeper.metadata.get("merged_from", []), *(m.id for m in losers)]
            changes: dict[str, Any] = {
                "files": _union(keeper.files, (m.files for m in losers)),
                "tags": _union(keeper.tags, (m.tags for m in losers)),
                "access_count": keeper.access_count + sum(m.access_count for m in losers),
                "revision_count": max(m.revision_count for m in (keeper, *losers)),
                "updated_at": max(m.updated_at for m in (keeper, *losers)),
                "metadata": {**keeper.metadata, "merged_from": merged_from[-MAX_MERGED_LINKS:]},
            }
            if accessed:
                changes["last_accessed_at"] = max(accessed)
            numbers = _prompt_numbers(losers)
            if keeper.kind == "prompt" and numbers:
                merged = {*keeper.metadata.get("merged_numbers", []), *numbers}
                changes["metadata"]["merged_numbers"] = sorted(merged)
            if topic != keeper.topic_key:
                changes["topic_key"] = topic
            # Losers go first: the topic key is unique per project.
            removed += store.delete_memories([m.id for m in losers])
            store.update_memory(keeper.id, changes)
    return removed


def merge(
    core: Core,
    *,
    threshold: float = DEFAULT_MERGE_THRESHOLD,
    project: str | None = None,
    all_projects: bool = False,
    dry_run: bool = False,
) -> MergeReport:
    """Join near-duplicate memories of a project (or every project)."""
    started = utcnow()
    projects = _projects(core, project, all_projects)
    groups, compared = plan_merge(core, threshold=threshold, projects=projects)
    report = MergeReport(dry_run, threshold, tuple(groups), compared)
    if not dry_run:
        apply_merge(core.store, groups)
        core.store.log_maintenance(
            "merge",
            started,
            {"groups": len(groups), "removed": len(report.removed), "threshold": threshold},
        )
    return report
