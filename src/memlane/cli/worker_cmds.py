"""CLI commands of the worker: serve, status, stop, dashboard."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memlane.cli.context import CliState, echo_json, existing_folder
from memlane.errors import StoreError

if TYPE_CHECKING:
    from memlane.worker.server import ServeOptions, WorkerStatus

pass_state = click.make_pass_decorator(CliState)


def _login_url(state: CliState) -> str:
    """Ask the running worker for a one-time dashboard sign-in URL."""
    from memlane.runtime import read_runtime, read_token
    from memlane.worker.client import call

    paths = state.settings.paths
    info, token = read_runtime(paths), read_token(paths)
    if info is None or token is None:
        raise StoreError("the worker is not running (start it with `memlane serve --daemon`)")
    reply = call(info, token, "POST", "/api/dashboard/login", b"{}")
    if reply.status != 200:
        raise StoreError(
            f"the worker refused the dashboard sign-in ({reply.status}: {reply.body!r})"
        )
    url = reply.json()["url"]
    assert isinstance(url, str)
    return url


def _start_detached(state: CliState, args: tuple[str, ...]) -> None:
    from memlane.runtime import spawn_worker_detached
    from memlane.worker.server import already_running, running_worker, wait_until_ready

    settings = state.settings
    pid = spawn_worker_detached(settings.paths, db=state.db, args=args, min_interval_s=0)
    if pid is None:
        running = running_worker(settings)
        if running is None:
            raise already_running(settings)
        # What the user wanted is there: not an error.
        click.echo(f"memlane worker already running at {running.base_url} (pid {running.pid})")
        return
    status = wait_until_ready(settings)
    log_path = settings.paths.log_dir / "worker.log"
    if not status.healthy or status.info is None:
        raise StoreError(f"the worker did not come up; see {log_path}")
    click.echo(f"memlane worker running on {status.info.base_url} (pid {status.info.pid})")


def register(cli: click.Group) -> None:
    for command in (serve_cmd, status_cmd, stop_cmd, dashboard_cmd):
        cli.add_command(command)


@click.command("serve")
@click.option("--host", default=None, help="Address to bind (default 127.0.0.1).")
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="Port to bind.")
@click.option("--daemon", is_flag=True, help="Start in the background and return.")
@click.option("--allow-remote", is_flag=True, help="Allow binding an address other than loopback.")
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Extra Host header name to accept (with --allow-remote).",
)
@click.option(
    "--rate-limit",
    type=click.IntRange(0),
    default=200,
    show_default=True,
    help="Requests per minute per client (0: no limit).",
)
@click.option(
    "--write-rate-limit",
    type=click.IntRange(0),
    default=60,
    show_default=True,
    help="Writes per minute per client (0: no limit).",
)
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Log to FILE instead of stderr, kept under 1 MiB (older lines move to FILE.1);"
    " --daemon always logs to worker.log in the log directory.",
)
@pass_state
def serve_cmd(
    state: CliState,
    host: str | None,
    port: int | None,
    daemon: bool,
    allow_remote: bool,
    allow_hosts: tuple[str, ...],
    rate_limit: int,
    write_rate_limit: int,
    log_file: Path | None,
) -> None:
    """Run the worker: HTTP API, dashboard, live feed, background embedding."""
    from memlane.worker.server import ServeOptions, serve

    # The worker hooks start: a bad setting warns into its log (`--daemon` refuses it here).
    state.lenient = not daemon
    if log_file is not None and log_file.absolute().parent != state.settings.paths.log_dir:
        existing_folder(log_file, "--log-file")  # memlane's own log folder is made

    options = ServeOptions(
        host=host,
        port=port,
        allow_remote=allow_remote,
        allow_hosts=allow_hosts,
        rate_per_minute=rate_limit,
        write_rate_per_minute=write_rate_limit,
        log_file=log_file,
    )
    if daemon:
        _start_detached(state, _serve_args(state, options))
        return
    raise SystemExit(serve(state.settings, options))


def _serve_args(state: CliState, options: ServeOptions) -> tuple[str, ...]:
    """The ``memlane serve`` options that start a detached worker like ``options``."""
    from memlane.worker.server import check_bind_host

    args: list[str] = []
    if options.host:
        args += ["--host", options.host]
    if options.port:
        args += ["--port", str(options.port)]
    if options.allow_remote:
        check_bind_host(options.host or state.settings.worker__host, True)  # warns here
        args.append("--allow-remote")
    for name in options.allow_hosts:
        args += ["--allow-host", name]
    args += ["--rate-limit", str(options.rate_per_minute)]
    args += ["--write-rate-limit", str(options.write_rate_per_minute)]
    return tuple(args)


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_state
def status_cmd(state: CliState, as_json: bool) -> None:
    """Is the worker running? Prints its address, pid and token file."""
    from memlane.worker.server import worker_status

    status = worker_status(state.settings)
    relay = _relay_state() if status.running else "off"
    if as_json:
        echo_json(_status_record(status, relay))
    else:
        _print_status(state, status, relay)
    if not status.healthy:
        raise SystemExit(1)


def _status_record(status: WorkerStatus, relay: str) -> dict[str, Any]:
    info = status.info
    return {
        "running": status.running,
        "healthy": status.healthy,
        "detail": status.detail,
        "pid": info.pid if info else None,
        "url": info.base_url if info else None,
        "started_at": info.started_at if info else None,
        "db": info.db if info else None,
        "hook_relay": relay,
    }


def _print_status(state: CliState, status: WorkerStatus, relay: str) -> None:
    from memlane.runtime import token_file

    info = status.info
    click.echo(f"worker: {status.detail}")
    if info is None or not status.running:
        return
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.started_at))
    click.echo(f"  url:     {info.base_url}")
    click.echo(f"  pid:     {info.pid} (since {started})")
    click.echo(f"  db:      {info.db}")
    click.echo(f"  token:   {token_file(state.settings.paths)}")
    click.echo(f"  hooks:   {relay}")


def _relay_state() -> str:
    """Does the worker take this environment's hooks (memlane.hooks.relay)?"""
    from memlane.hooks.relay import flush, relayable

    if not relayable("user-prompt-submit"):
        return "run in their own processes (MEMLANE_RELAY is off)"
    if flush(timeout_s=1.0):
        return "relayed to the worker"
    return "run in their own processes (the worker does not take this environment's hooks)"


@click.command("stop")
@pass_state
def stop_cmd(state: CliState) -> None:
    """Stop the running worker (SIGTERM, graceful)."""
    from memlane.worker.server import stop_worker

    click.echo(stop_worker(state.settings))


@click.command("dashboard")
@click.option("--no-open", is_flag=True, help="Print the sign-in URL instead of opening it.")
@pass_state
def dashboard_cmd(state: CliState, no_open: bool) -> None:
    """Open the dashboard in a browser (starts the worker if needed).

    The sign-in URL carries a one-time code that signs the browser in with an
    HttpOnly cookie; it works once and expires after two minutes. The browser
    gets a private page that forwards to it, never the URL itself: every local
    user can read a browser's command line.
    """
    from memlane.runtime import remove_stale_signin_pages, write_signin_page
    from memlane.worker.server import worker_status

    if not worker_status(state.settings).running:
        _start_detached(state, ())
    url = _login_url(state)
    if no_open:
        click.echo(url)
        return
    import webbrowser

    paths = state.settings.paths
    remove_stale_signin_pages(paths)
    page = write_signin_page(paths, url)
    if not webbrowser.open(page.absolute().as_uri()):
        page.unlink(missing_ok=True)  # no browser will read it
        click.echo(f"open this URL in your browser (works once, for 2 minutes): {url}")
