"""CLI commands of the injection log: ``memlane log`` and ``memlane feedback``."""

from __future__ import annotations

import click

from memlane.cli.context import CliState, echo_json, wire_json
from memlane.models import Injection
from memlane.text import one_line

pass_state = click.make_pass_decorator(CliState)


def register(cli: click.Group) -> None:
    for command in (log, feedback):
        cli.add_command(command)


def entry_head(entry: Injection) -> str:
    """One line: when, which session and prompt, how, and what it cost."""
    if entry.event == "session-start":
        what = "session start"
    else:
        what = f"prompt {entry.prompt_number}" if entry.prompt_number else "prompt"
    how = "context pack" if entry.mode == "context" else entry.mode
    where = "worker" if entry.relayed else "hook process"
    return (
        f"#{entry.id}  {entry.created_at:%Y-%m-%d %H:%M:%S}  session {entry.session_id}  {what}"
        f"  {how} · {where}  {entry.hook_ms:.0f} ms  {entry.chars} chars ≈ {entry.tokens} tokens"
    )


def entry_lines(entry: Injection, *, full: bool) -> list[str]:
    """The entry as text: its head, the prompt, the memories shown, the text if ``full``."""
    lines = [click.style(entry_head(entry), bold=True)]
    if entry.prompt:
        lines.append(f"    prompt  {one_line(entry.prompt, 160)}")
    if entry.memories:
        shown = "  ".join(
            f"#{m.memory_id}"
            + (f" {m.score:.2f}" if m.score is not None else "")
            + (f" ({m.feedback})" if m.feedback else "")
            for m in entry.memories
        )
        lines.append(f"    shown   {shown}")
    if entry.cleared:
        lines.append("    (text removed: a memory it showed was deleted or forgotten)")
    elif full:
        lines.extend("    │ " + line for line in entry.text.splitlines())
    return lines


@click.command("log")
@click.option("--session", "session_id", help="Only this session (any project).")
@click.option("--last", "last", default=20, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--full", is_flag=True, help="Show the injected text.")
@click.option("--project", help="Project (default: from cwd).")
@click.option("--all-projects", is_flag=True, help="Every project.")
@click.option("--json", "as_json", is_flag=True, help="The entries as JSON (text included).")
@pass_state
def log(
    state: CliState,
    session_id: str | None,
    last: int,
    full: bool,
    project: str | None,
    all_projects: bool,
    as_json: bool,
) -> None:
    """What memlane injected into prompts and session starts, oldest first.

    Each entry: session, prompt number, the memories shown (id, score, your
    mark), characters and estimated tokens, recall mode, worker or hook
    process, and the hook's time. Hooks that injected nothing are counted, not
    listed (`memlane stats`).
    """
    entries = state.memory().injection_log(
        session_id=session_id,
        project=state.project_for(project),
        all_projects=state.all_for(all_projects),
        limit=last,
    )
    if as_json:
        from memlane.schemas import InjectionOut, InjectionsOut

        echo_json(
            wire_json(InjectionsOut(injections=[InjectionOut.model_validate(e) for e in entries]))
        )
        return
    if not entries:
        click.echo("nothing injected yet (hooks that inject nothing are only counted)")
        return
    for entry in entries:
        for line in entry_lines(entry, full=full):
            click.echo(line)
    chars, tokens = sum(e.chars for e in entries), sum(e.tokens for e in entries)
    noun = "injection" if len(entries) == 1 else "injections"
    click.echo(f"{len(entries)} {noun}: {chars} chars ≈ {tokens} tokens")


@click.command()
@click.argument("memory_id", type=int)
@click.option("--useful", is_flag=True, help="It helped: lift it a little.")
@click.option("--noise", is_flag=True, help="It did not: demote it.")
@click.option("--injection", "injection_id", type=int, help="The entry (default: its latest).")
@click.option("--json", "as_json", is_flag=True)
@pass_state
def feedback(
    state: CliState,
    memory_id: int,
    useful: bool,
    noise: bool,
    injection_id: int | None,
    as_json: bool,
) -> None:
    """Mark an injected memory --useful or --noise for the prompt it was injected for.

    Recall then weighs it for similar prompts (sharing at least half of the
    words): noise demotes it (not injected again for the same words), useful
    lifts it a little. MEMORY_ID is a `#id` that `memlane log` shows.
    """
    # Two flags, not one option with two flag values: there the last one silently won.
    if useful and noise:
        raise click.UsageError("--useful and --noise exclude each other: say one")
    if not (useful or noise):
        raise click.UsageError("say --useful or --noise")
    mark = "useful" if useful else "noise"
    result = state.memory().feedback(memory_id, mark, injection_id=injection_id)
    if as_json:
        from memlane.schemas import FeedbackOut

        echo_json(wire_json(FeedbackOut.model_validate(result)))
        return
    effect = "demotes" if mark == "noise" else "lifts"
    click.echo(
        f"marked #{memory_id} {mark} (injection #{result.injection_id}, prompt:"
        f" {one_line(result.prompt, 80)}); recall now {effect} it for similar prompts"
    )
