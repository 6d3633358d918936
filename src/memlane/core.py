"""Core: what every module below the facade takes, instead of the facade.

A module under :mod:`memlane.service` (the write path, sessions, capture,
search, maintenance, interop) gets a :class:`Core` — the store, the settings,
the privacy filter, the project name rule and the clock — and returns results.
It never receives the ``Memory`` facade and never calls back up into it, so the
import graph has no circle: adapters → service → capture / search /
maintenance / interop → memories / sessions → core → store → models.

Core holds no per-call state: the worker shares one across threads. Its
privacy filter (:class:`memlane.privacy.Filter`) remembers short texts it left
unchanged (tool names, metadata keys, roles, paths: the same few strings on
every chunk of a transcript), so they are not filtered again; and
:meth:`Core.plain_name` the names it accepted (a project, a session id, a type: checked
for every row a batch stores), forgotten with the filter that judged them.
"""

from __future__ import annotations

import re

from memlane import privacy
from memlane.errors import InvalidInput
from memlane.models import MAX_NAME_CHARS, utcnow
from memlane.text import CONTROL_CHARACTERS, without_controls
from memlane.utf8 import storable

# Names Core.plain_name remembers having accepted, at most (then the memory starts over).
NAME_MEMO_SIZE = 4096

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from memlane.config import Settings
    from memlane.store.base import Store


class Core:
    """The store, settings, privacy filter, project rule and clock that core modules share."""

    __slots__ = ("_default_project", "_filter", "_plain", "_settings", "clock", "store")

    def __init__(
        self,
        store: Store,
        settings: Settings,
        *,
        clock: Callable[[], datetime] = utcnow,
        default_project: str | None = None,
    ) -> None:
        self.store = store
        self._settings = settings
        self.clock = clock
        self._default_project = default_project
        self._filter = privacy.Filter(settings.secret_patterns)
        self._plain: set[str] = set()

    @property
    def settings(self) -> Settings:
        """The settings every core module reads (replacing them forgets the clean texts)."""
        return self._settings

    @settings.setter
    def settings(self, value: Settings) -> None:
        self._settings = value
        self._filter = privacy.Filter(value.secret_patterns)
        self._plain = set()  # judged by the filter just replaced

    def now(self) -> datetime:
        """The current time (aware UTC) by this core's clock."""
        return self.clock()

    def scrub(self, text: str) -> str:
        """The privacy filter every stored or hashed text goes through first.

        Removes ``<private>`` blocks and memlane's own injected context, and
        masks secrets (built-in rules plus the configured ``secret_patterns``).
        Control characters no stored text keeps (a NUL: :func:`memlane.text.without_controls`)
        go first, so the filter reads the text as it will be stored: a secret split by
        a NUL is whole again when the rules read it.
        """
        return scrub_with(self._filter, text)

    def clean_source(self) -> privacy.CleanSource:
        """A :class:`~memlane.privacy.CleanSource` filtering with this core's patterns:
        texts scrubbed together, and pieces cut from them vouched for."""
        return privacy.CleanSource(self._filter)

    @property
    def default_project(self) -> str:
        """The project of the current working directory (looked up once)."""
        if self._default_project is None:
            from memlane.project import project_name

            self._default_project = project_name()
        return self._default_project

    def named_project(self, project: str | None) -> str | None:
        """A project named by a caller, checked by the one rule of every interface and
        command: trimmed (:func:`given_project`), then a plain name (:meth:`plain_name`);
        None when none is named."""
        name = given_project(project)
        return None if name is None else self.plain_name("project name", name)

    def resolve_project(self, project: str | None) -> str:
        """``project`` checked (:meth:`named_project`), or the current directory's project
        when it is None."""
        name = self.named_project(project)
        return self.default_project if name is None else name

    def projects_for(self, project: str | None, all_projects: bool) -> tuple[str, ...] | None:
        """The projects a listing covers: None (every one) with ``all_projects``, else
        :meth:`resolve_project`'s. A project named is checked either way: an empty name
        is refused whatever else the call says."""
        if all_projects:
            self.named_project(project)
            return None
        return (self.resolve_project(project),)

    def stored_path(self, path: str | None) -> str | None:
        """A file path as a session row keeps it (a transcript's): filtered like any text,
        so a secret in a folder name (a token as a directory) is masked, not stored. Such a
        path no longer names its file: the hook that gave it reads it, nothing later."""
        return None if path is None else self.scrub(path)

    def plain_name(self, what: str, name: str) -> str:
        """``name`` (a project name, a session id) when the privacy filter leaves it as it is.

        A name is an identity: masked in place, two names would become one. So one
        holding a secret or a ``<private>`` block is refused (and not repeated in
        the message) rather than stored or masked. A name accepted before (under this
        core's filter) is accepted at once: a batch checks the same project, session id
        and type for each row it stores.
        """
        if type(name) is str and name in self._plain:
            return name
        name = storable(name)
        if len(name) > MAX_NAME_CHARS:
            # A 1 MB session id from a hook was stored and printed by every listing.
            raise InvalidInput(
                f"the {what} is {len(name):,} characters long (at most {MAX_NAME_CHARS:,})"
            )
        # isprintable (C speed) passes nearly every name; the set decides for the rest
        # (a name with a space other than " ", or a bidi mark, is not printable but kept).
        if not name.isprintable() and re.search(CONTROL_CHARACTERS, name):
            # NUL, an escape sequence, a line break: no name holds one (PostgreSQL refuses
            # NUL outright, so a database could not move there).
            raise InvalidInput(f"the {what} holds a control character; use another {what}")
        if self.scrub(name) != name:
            # No literal tag in the message: the hook log's privacy filter would read it as
            # an unclosed block and cut the line there.
            raise InvalidInput(
                f"the {what} holds a secret or a private block; memlane stores no secret:"
                f" use another {what}"
            )
        if len(self._plain) >= NAME_MEMO_SIZE:
            self._plain = set()
        self._plain.add(name)
        return name


def given_project(project: str | None) -> str | None:
    """A project name as given, trimmed; None when none is given.

    An explicit name that is empty or only blanks is refused, never read as "the
    current directory's project" or as a project named "" (the CLI read ``--project ''``
    both ways, depending on the command); so is one that is not text.
    """
    if project is None:
        return None
    if not isinstance(project, str):
        raise InvalidInput(
            f"the project name must be text, not {type(project).__name__}: name a project,"
            " or leave it out for the default one"
        )
    name = project.strip()
    if not name:
        raise InvalidInput(
            "the project name is empty: name a project, or leave it out for the default one"
        )
    return name


def scrub_with(rule: privacy.Filter, text: str) -> str:
    """:meth:`Core.scrub` under ``rule`` (a ``privacy.Filter`` of the configured patterns),
    for a caller with no core at hand (a hook writing its spool: memlane.hooks.spool)."""
    return rule.scrub(without_controls(text))
