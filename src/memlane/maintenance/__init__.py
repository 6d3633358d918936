"""Memory hygiene: prune, size cap, merge, staleness, forget, and the scheduled run.

A memory that repeats itself or grows without bound is worse than none. This
package keeps the store small and current; the facade's maintenance methods
(``Memory.maintain``, ``merge``, ``prune_old``, ``enforce_size_cap``,
``refresh_staleness``, ``forget``) are thin wrappers around these functions.
One module per job, each with its design in its docstring:

* ``pruning`` — delete memories not touched for ``max_age_days``;
* ``merging`` — join near-duplicates (MinHash LSH, verified exactly);
* ``candidates`` — merge's LSH index, bounded work per memory;
* ``wording`` — merge's rule for texts that look alike but say different things;
* ``size`` — the size cap, reclaiming pages (vacuum) and measuring the database;
* ``staleness`` — flag memories whose linked files changed (the rule: ``search.scoring``);
* ``forgetting`` — remove what a user names;
* ``refiltering`` — pass what is stored through today's privacy filter (once per filter
  version in the run);
* ``run`` — the whole pass; ``schedule`` — when it runs (Stop hook) and its lock;
* ``reports`` — what each operation did; ``_common`` — what the steps share.

**Plan, then apply.** Every operation first builds a plan from the current
state (which rows go, which merge into which) with the same function whether
it is a dry run or not; the real run applies exactly that plan. So a dry run
lists exactly what the real run then removes, as long as nothing writes in
between. The one exception is the size cap's safety net: the plan estimates
the bytes each row frees; if the database is still over its cap after the
vacuum, a corrective round removes more and reports it as ``extra_capped``.

Every real run writes one ``maintenance_log`` row (kind ``maintain``,
``merge``, ``prune``, ``size-cap``, ``stale`` or ``forget``); dry runs write
nothing. Every name below is importable from the package; the modules load on
first use, so the Stop hook (``maybe_schedule_maintenance``) loads only
``schedule`` and ``_common``, and numpy is imported inside the merge functions.
A module is never named like a function it exports (``merging``, not
``merge``): importing a submodule sets the package attribute of its name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlane.filestate import FILE_STATE_KEY, file_state
    from memlane.maintenance._common import (
        FETCH_BATCH,
        MAINTAIN,
        PROTECTED_KINDS,
        SIZE_TARGET,
        SIZE_TRIGGER,
        last_touch,
    )
    from memlane.maintenance.candidates import (
        MERGE_TEXT_CHARS,
        MINHASH_SEED,
        MINHASH_SIZE,
        jaccard,
        trigrams,
    )
    from memlane.maintenance.forgetting import file_candidates, forget, plan_forget
    from memlane.maintenance.merging import (
        DEFAULT_MERGE_THRESHOLD,
        MAX_MERGED_LINKS,
        MERGE_SKIP_KINDS,
        apply_merge,
        merge,
        plan_merge,
        similar_pairs,
    )
    from memlane.maintenance.pruning import plan_prune, prune_old
    from memlane.maintenance.reports import (
        ForgetReport,
        ForgottenMemory,
        MaintenanceReport,
        MergeGroup,
        MergeReport,
        PruneReport,
        SizeReport,
        StaleReport,
    )
    from memlane.maintenance.run import plan_idle_sessions, run_maintenance
    from memlane.maintenance.schedule import (
        LOCK_FILE,
        LOG_FILE,
        OVER_CAP_COOLDOWN_S,
        SPAWN_COOLDOWN_S,
        SPAWN_STAMP,
        due_now,
        due_reason,
        maintenance_due,
        maintenance_lock,
        maybe_schedule_maintenance,
        spawn_background,
    )
    from memlane.maintenance.schedule import _file_bytes as _file_bytes
    from memlane.maintenance.size import (
        CORRECTIVE_ROUNDS,
        ROW_OVERHEAD,
        database_bytes,
        enforce_size_cap,
        plan_size_cap,
        reclaim_space,
        row_cost,
    )
    from memlane.maintenance.staleness import (
        apply_staleness,
        list_stale,
        plan_staleness,
        project_roots,
        refresh_staleness,
    )

# Where each exported name lives (module → names); keep in step with the imports above.
_MODULES: dict[str, tuple[str, ...]] = {
    "memlane.filestate": ("FILE_STATE_KEY", "file_state"),
    "memlane.maintenance._common": (
        "FETCH_BATCH",
        "MAINTAIN",
        "PROTECTED_KINDS",
        "SIZE_TARGET",
        "SIZE_TRIGGER",
        "last_touch",
    ),
    "memlane.maintenance.forgetting": ("file_candidates", "forget", "plan_forget"),
    "memlane.maintenance.candidates": (
        "MERGE_TEXT_CHARS",
        "MINHASH_SEED",
        "MINHASH_SIZE",
        "jaccard",
        "trigrams",
    ),
    "memlane.maintenance.merging": (
        "DEFAULT_MERGE_THRESHOLD",
        "MAX_MERGED_LINKS",
        "MERGE_SKIP_KINDS",
        "apply_merge",
        "merge",
        "plan_merge",
        "similar_pairs",
    ),
    "memlane.maintenance.pruning": ("plan_prune", "prune_old"),
    "memlane.maintenance.reports": (
        "ForgetReport",
        "ForgottenMemory",
        "MaintenanceReport",
        "MergeGroup",
        "MergeReport",
        "PruneReport",
        "SizeReport",
        "StaleReport",
    ),
    "memlane.maintenance.run": ("plan_idle_sessions", "run_maintenance"),
    "memlane.maintenance.schedule": (
        "LOCK_FILE",
        "LOG_FILE",
        "OVER_CAP_COOLDOWN_S",
        "SPAWN_COOLDOWN_S",
        "SPAWN_STAMP",
        "_file_bytes",  # private; the tests measure the database file with it
        "due_now",
        "due_reason",
        "maintenance_due",
        "maintenance_lock",
        "maybe_schedule_maintenance",
        "spawn_background",
    ),
    "memlane.maintenance.size": (
        "CORRECTIVE_ROUNDS",
        "ROW_OVERHEAD",
        "database_bytes",
        "enforce_size_cap",
        "plan_size_cap",
        "reclaim_space",
        "row_cost",
    ),
    "memlane.maintenance.staleness": (
        "apply_staleness",
        "list_stale",
        "plan_staleness",
        "project_roots",
        "refresh_staleness",
    ),
}
_LAZY = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "CORRECTIVE_ROUNDS",
    "DEFAULT_MERGE_THRESHOLD",
    "FETCH_BATCH",
    "FILE_STATE_KEY",
    "LOCK_FILE",
    "LOG_FILE",
    "MAINTAIN",
    "MAX_MERGED_LINKS",
    "MERGE_SKIP_KINDS",
    "MERGE_TEXT_CHARS",
    "MINHASH_SEED",
    "MINHASH_SIZE",
    "OVER_CAP_COOLDOWN_S",
    "PROTECTED_KINDS",
    "ROW_OVERHEAD",
    "SIZE_TARGET",
    "SIZE_TRIGGER",
    "SPAWN_COOLDOWN_S",
    "SPAWN_STAMP",
    "ForgetReport",
    "ForgottenMemory",
    "MaintenanceReport",
    "MergeGroup",
    "MergeReport",
    "PruneReport",
    "SizeReport",
    "StaleReport",
    "apply_merge",
    "apply_staleness",
    "database_bytes",
    "due_now",
    "due_reason",
    "enforce_size_cap",
    "file_candidates",
    "file_state",
    "forget",
    "jaccard",
    "last_touch",
    "list_stale",
    "maintenance_due",
    "maintenance_lock",
    "maybe_schedule_maintenance",
    "merge",
    "plan_forget",
    "plan_idle_sessions",
    "plan_merge",
    "plan_prune",
    "plan_size_cap",
    "plan_staleness",
    "project_roots",
    "prune_old",
    "reclaim_space",
    "refresh_staleness",
    "row_cost",
    "run_maintenance",
    "similar_pairs",
    "spawn_background",
    "trigrams",
]

# Hidden from mypy, which sees the imports above: a module-level __getattr__ would
# make every misspelt attribute of the package type as Any.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        module_name = _LAZY.get(name)
        if module_name is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module_name), name)
        globals()[name] = value  # later look-ups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})
