"""What an import, index import or sync pull did: counts and the bad lines.

A file or sync folder is input from elsewhere and may hold millions of bad
records, so a run keeps the details of the first :data:`KEPT_ERRORS` only and
counts the rest (``errors_omitted``): memory stays bounded however bad the input.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memlane.models import ImportReport, LineError
from memlane.text import counted

KEPT_ERRORS = 1000


@dataclass(frozen=True, slots=True)
class InteropReport:
    """Counts of one interop run.

    ``created`` / ``updated`` / ``skipped`` count memories; ``sessions`` the
    sessions created or refreshed; ``deleted`` memories removed by tombstones;
    ``errors`` the records refused, each with its line (or row) number (the
    first :data:`KEPT_ERRORS`; ``errors_omitted`` counts the others).
    ``details`` holds per-source counts (e.g. ``observations``, ``chunks``);
    ``projects`` the memories (to be) imported per project of the source;
    ``notes`` what the reader should know, one line each (e.g. why vectors
    were left out).
    """

    source: str
    created: int = 0
    updated: int = 0
    skipped: int = 0
    sessions: int = 0
    deleted: int = 0
    vectors: int = 0
    errors: tuple[LineError, ...] = ()
    errors_omitted: int = 0
    dry_run: bool = False
    details: dict[str, int] = field(default_factory=dict)
    projects: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def import_report(self) -> ImportReport:
        """The plain :class:`ImportReport` of the facade's ``import_jsonl`` contract."""
        return ImportReport(
            path=self.source,
            created=self.created,
            updated=self.updated,
            skipped=self.skipped,
            errors=self.errors,
            errors_omitted=self.errors_omitted,
            sessions=self.sessions,
        )

    @property
    def error_count(self) -> int:
        """Records refused in all: those listed and those only counted."""
        return len(self.errors) + self.errors_omitted

    def summary(self) -> str:
        """One line for people."""
        verb = "would import" if self.dry_run else "imported"
        parts = [f"{verb} {self.created} new", f"{self.updated} updated"]
        parts.append(f"{self.skipped} already present")
        if self.sessions:
            parts.append(counted(self.sessions, "session"))
        if self.deleted:
            parts.append(f"{self.deleted} deleted")
        if self.vectors:
            parts.append(counted(self.vectors, "vector"))
        parts.append(counted(self.error_count, "bad record"))
        return ", ".join(parts)


@dataclass(slots=True)
class Tally:
    """Mutable counters while a run goes; :meth:`freeze` makes the report."""

    created: int = 0
    updated: int = 0
    skipped: int = 0
    sessions: int = 0
    deleted: int = 0
    vectors: int = 0
    errors: list[LineError] = field(default_factory=list)
    errors_omitted: int = 0
    details: dict[str, int] = field(default_factory=dict)
    projects: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def count(self, status: str) -> None:
        if status == "created":
            self.created += 1
        elif status == "updated":
            self.updated += 1
        else:
            self.skipped += 1

    def bump(self, key: str, by: int = 1) -> None:
        self.details[key] = self.details.get(key, 0) + by

    def bump_project(self, project: str) -> None:
        self.projects[project] = self.projects.get(project, 0) + 1

    def note(self, line: str) -> None:
        self.notes.append(line)

    def error(self, line: int, message: str) -> None:
        if len(self.errors) < KEPT_ERRORS:
            self.errors.append(LineError(line, message))
        else:
            self.errors_omitted += 1

    @property
    def error_count(self) -> int:
        return len(self.errors) + self.errors_omitted

    def freeze(self, source: str, *, dry_run: bool = False) -> InteropReport:
        return InteropReport(
            source=source,
            created=self.created,
            updated=self.updated,
            skipped=self.skipped,
            sessions=self.sessions,
            deleted=self.deleted,
            vectors=self.vectors,
            errors=tuple(self.errors),
            errors_omitted=self.errors_omitted,
            dry_run=dry_run,
            details=dict(self.details),
            projects=dict(self.projects),
            notes=tuple(self.notes),
        )
