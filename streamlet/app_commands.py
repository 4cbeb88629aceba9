"""The App's commands: worker, cleanup, acls and topology describe, with the worker's configuration levels.

`App.main()` runs them bound to its App (`python myapp.py worker`); the `streamlet` command (`streamlet.cli`)
adds them with a MODULE:ATTRIBUTE target. This module sits below `streamlet.app` and knows an App only as
`AppLike`, so the App can import it and the CLI can import the App, with no circle.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from streamlet.config import (
    DEFAULT_BOOTSTRAP_SERVERS,
    ENVIRONMENT_VARIABLES,
    SECRETS,
    StreamsConfig,
    config_key,
    parse_setting,
)
from streamlet.errors import ConfigError, StreamletError
from streamlet.kafka import connect
from streamlet.kafka.acls import Acl, create_acls
from streamlet.logging_utils import repeat_filtered
from streamlet.runtime.gc_tuning import worker_gc
from streamlet.runtime.thread_processes import process_settings, supervise

Handler = Callable[[argparse.Namespace], int]


class AppLike(Protocol):
    """What the worker, cleanup and describe commands need of an App.

    A protocol rather than the App class: `App.main()` calls into this module, so this module must not import
    `streamlet.app` at module level (the import graph stays acyclic).
    """

    application_id: str

    @property
    def settings(self) -> Mapping[str, Any]: ...

    async def run_worker(self, *, worker_timers: bool = True, **overrides: Any) -> None: ...

    def cleanup(self, **overrides: Any) -> None: ...

    def required_acls(self, principal: str, **overrides: Any) -> list[Acl]: ...

    def topology(self) -> Any: ...


Resolver = Callable[[str, str | None], AppLike]  # the `streamlet` command's (target, application id) -> App

# The worker's flags that set a StreamsConfig field. Their argparse default is None, so "not given" is visible
# and a flag never hides a lower level with a default of its own.
WORKER_FLAGS: Mapping[str, str] = {
    "--state-dir": "state_dir",
    "--threads": "num_stream_threads",
    "--bootstrap-servers": "bootstrap_servers",
    "--leave": "leave_group_on_close",
    "--web-port": "web_port",
    "--web-host": "web_host",
    "--process-per-thread": "process_per_thread",
}

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def parse_config_pairs(pairs: Sequence[str]) -> dict[str, tuple[Any, str]]:
    """`--config KEY=VALUE` entries -> {field: (typed value, the entry as given)}; the entry is kept for messages.

    The same setting given twice with different values is an error rather than "last one wins": with dotted
    and snake_case spellings both accepted, a silent winner is easy to miss.
    """
    out: dict[str, tuple[Any, str]] = {}
    for pair in pairs:
        raw_key, sep, raw = pair.partition("=")
        if not sep or not raw_key:
            raise ConfigError(f"--config expects KEY=VALUE, got {pair!r}")
        key = config_key(raw_key)
        if key in SECRETS:  # a command line shows in `ps` and in the shell's history
            raise ConfigError(
                f"--config {raw_key}=...: a secret never goes on the command line; set "
                f"${ENVIRONMENT_VARIABLES[key]} or give {key}_file=PATH"
            )
        value = parse_setting(key, raw)
        if key in out and out[key][0] != value:
            raise ConfigError(f"--config {out[key][1]} conflicts with --config {pair}: give {key} once")
        out[key] = (value, pair)
    return out


def resolve_worker_config(
    flags: Mapping[str, Any],
    config_pairs: Sequence[str],
    app_config: Mapping[str, Any],
    environ: Mapping[str, str],
) -> dict[str, Any]:
    """The worker's settings, each taken from the highest level that sets it.

    Levels, highest first: an explicit flag (`--threads`, `--state-dir`, `--bootstrap-servers`; None means not
    given), a `--config KEY=VALUE` entry, the App's keyword config, the environment (`ENVIRONMENT_VARIABLES`,
    e.g. $STREAMLET_BOOTSTRAP_SERVERS), then the default. A flag and a `--config` entry that set the same
    setting to different values are an error naming both: neither silently wins.

    Pure (the environment is a parameter) so every level is testable without Kafka. Settings no level gives
    are left out, for StreamsConfig's defaults; env-backed ones get their default here, so the result does
    not depend on the process environment.
    """
    resolved: dict[str, Any] = {"bootstrap_servers": DEFAULT_BOOTSTRAP_SERVERS}
    resolved.update({key: environ[var] for key, var in ENVIRONMENT_VARIABLES.items() if environ.get(var)})
    resolved.update({config_key(key): value for key, value in app_config.items()})
    configs = parse_config_pairs(config_pairs)
    resolved.update({key: value for key, (value, _) in configs.items()})
    for flag, value in flags.items():
        if value is None:
            continue
        key = WORKER_FLAGS[flag]
        if key in configs and configs[key][0] != value:
            raise ConfigError(f"{flag} {value} conflicts with --config {configs[key][1]}: give {key} once")
        resolved[key] = value
    return resolved


def _target_app(args: argparse.Namespace) -> AppLike:
    """The App a command runs: the one `App.main()` was called on, else the MODULE:ATTRIBUTE target."""
    bound: AppLike | None = getattr(args, "app", None)
    return bound if bound is not None else args.resolve_app(args.target, args.application_id)


def _app_config(app: AppLike) -> Mapping[str, Any]:
    """The App's own keyword config, a level of its own in `resolve_worker_config`."""
    return app.settings


def _worker(args: argparse.Namespace) -> int:
    logging.basicConfig(level=getattr(logging, args.log_level.upper()), format=LOG_FORMAT)
    app = _target_app(args)
    flags = {
        "--state-dir": args.state_dir,
        "--threads": args.threads,
        "--bootstrap-servers": args.bootstrap_servers,
        "--leave": args.leave,
        "--web-port": args.web_port,
        "--web-host": args.web_host,
        "--process-per-thread": args.process_per_thread,
    }
    settings = resolve_worker_config(flags, args.config, _app_config(app), os.environ)
    config = StreamsConfig.from_mapping({"application_id": app.application_id, **settings})
    if not (config.process_per_thread and config.num_stream_threads > 1):
        _run_worker(app, settings)
        return 0

    def run_process(index: int) -> int:
        try:
            _run_worker(app, process_settings(settings, config, index), worker_timers=index == 0)
        except StreamletError as exc:
            print(f"streamlet: error: {exc}", file=sys.stderr)
            return 2
        return 0

    return supervise(run_process, config.num_stream_threads, LOG_FORMAT)


def _run_worker(app: AppLike, settings: Mapping[str, Any], *, worker_timers: bool = True) -> None:
    # a broker outage makes aiokafka log the same error ~100 times a second: one line per 10 s is enough
    with repeat_filtered(logging.getLogger().handlers), worker_gc():
        asyncio.run(app.run_worker(worker_timers=worker_timers, **settings))


def _cleanup(args: argparse.Namespace) -> int:
    """Delete an application's local state on this machine (`KafkaStreams#cleanUp`); the changelogs stay.

    It resolves `state_dir` exactly as `streamlet worker` does, so it wipes the directory that worker uses.
    """
    app = _target_app(args)
    settings = resolve_worker_config({"--state-dir": args.state_dir}, args.config, _app_config(app), os.environ)
    state_dir = StreamsConfig.from_mapping({"application_id": app.application_id, **settings}).state_dir
    # a process-per-thread worker's processes keep theirs in <state_dir>/process-<i>/ (thread_processes)
    process_dirs = sorted(p for p in Path(state_dir).glob("process-*") if (p / app.application_id).is_dir())
    for directory in [state_dir, *map(str, process_dirs)]:
        app.cleanup(**{**settings, "state_dir": directory})
        print(f"deleted the local state of {app.application_id} in {os.path.join(directory, app.application_id)}")
    return 0


def _acls(args: argparse.Namespace) -> int:
    """Print (or create) the ACLs of `required_acls`, for the app as `streamlet worker` would configure it."""
    app = _target_app(args)
    flags = {"--bootstrap-servers": args.bootstrap_servers}
    settings = resolve_worker_config(flags, args.config, _app_config(app), os.environ)
    acls = app.required_acls(args.principal, **settings)
    cluster = StreamsConfig.from_mapping({"application_id": app.application_id, **settings}).cluster
    if not args.create:
        for acl in acls:
            print(acl.command(cluster.bootstrap_servers))
        return 0

    async def create() -> None:
        admin = connect.admin(cluster)
        await connect.start(admin, cluster, "streamlet acls")
        try:
            await create_acls(admin, acls)
        finally:
            await admin.close()

    asyncio.run(create())
    print(f"created {len(acls)} ACLs for {args.principal}", file=sys.stderr)
    return 0


def _describe(args: argparse.Namespace) -> int:
    bound: AppLike | None = getattr(args, "app", None)
    app = bound if bound is not None else args.resolve_app(args.target, args.application_id or "describe")
    print(app.topology().describe())
    return 0


def bootstrap_flag() -> dict[str, Any]:
    # default None: resolved when the command runs (flag > [--config > App >] environment > default)
    return {
        "default": None,
        "help": f"Kafka bootstrap servers (default ${ENVIRONMENT_VARIABLES['bootstrap_servers']} "
        f"or {DEFAULT_BOOTSTRAP_SERVERS})",
    }


def add_app_commands(sub: Any, bootstrap: dict[str, Any], resolve_app: Resolver | None = None) -> None:
    """worker, cleanup, acls and topology: bound to the App of `App.main()`, or (given `resolve_app`, the
    `streamlet` command) taking a MODULE:ATTRIBUTE target that `resolve_app(target, application_id)` loads."""

    def target(parser: argparse.ArgumentParser, help_text: str) -> None:
        if resolve_app is not None:
            parser.add_argument("target", help=help_text)
            parser.set_defaults(resolve_app=resolve_app)
            parser.add_argument("--application-id", default=None, help="needed when the target is a bare Topology")

    worker = sub.add_parser("worker", help="run an application's worker (a Kafka Streams client) until SIGINT/SIGTERM")
    target(worker, "MODULE:ATTRIBUTE of an App, a Topology, or a function returning one")
    worker.add_argument("--state-dir", default=None, help="state directory (state_dir; default: see --config)")
    worker.add_argument("--threads", type=int, default=None, help="number of stream threads (num_stream_threads)")
    worker.add_argument("--bootstrap-servers", **bootstrap)
    worker.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any StreamsConfig setting; precedence: flag > --config > App(...) > environment > default",
    )
    worker.add_argument(
        "--leave",
        action="store_const",
        const=True,
        default=None,
        help="with group_instance_id: leave the group on shutdown, so this worker's tasks move at once",
    )
    worker.add_argument(
        "--web-port",
        type=int,
        default=None,
        help="serve interactive queries (GET /stores/STORE/KEY) and @app.page handlers on this port (web_port); "
        "application_server defaults to WEB_HOST:WEB_PORT",
    )
    worker.add_argument(
        "--web-host", default=None, help="the web server's bind address (web_host; default 127.0.0.1, local only)"
    )
    worker.add_argument(
        "--process-per-thread",
        action="store_const",
        const=True,
        default=None,
        help="run each stream thread in a process of its own, so --threads N uses N cores (process_per_thread)",
    )
    worker.add_argument("-l", "--log-level", "--loglevel", dest="log_level", default="info", help="as in Faust")
    worker.set_defaults(handler=_worker)

    cleanup = sub.add_parser(
        "cleanup",
        help="delete an application's local state here (stop its worker first); the next start restores it "
        "from the changelogs",
    )
    target(cleanup, "MODULE:ATTRIBUTE, as for worker")
    cleanup.add_argument("--state-dir", default=None, help="state directory (resolved as for worker)")
    cleanup.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="as for worker")
    cleanup.set_defaults(handler=_cleanup)

    acls = sub.add_parser(
        "acls",
        help="the minimal ACLs an application's user needs, as kafka-acls.sh commands (or created with --create)",
    )
    target(acls, "MODULE:ATTRIBUTE, as for worker")
    acls.add_argument("--principal", required=True, help="the application's Kafka principal, e.g. User:wordcount")
    acls.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="as for worker")
    acls.add_argument("--bootstrap-servers", **bootstrap)
    acls.add_argument(
        "--create",
        action="store_true",
        help="create them, as the user the environment's security settings name (it needs ALTER on the cluster)",
    )
    acls.set_defaults(handler=_acls)

    topology = sub.add_parser("topology", help="inspect an application's topology")
    topology.add_argument("action", choices=["describe"])
    target(topology, "MODULE:ATTRIBUTE")
    topology.set_defaults(handler=_describe)


def build_app_parser(prog: str) -> argparse.ArgumentParser:
    """The command line of `App.main()`: `python myapp.py worker -l info`, as Faust's `app.main()`."""
    parser = argparse.ArgumentParser(prog=prog, description="run or inspect this streamlet application")
    sub = parser.add_subparsers(dest="command", required=True)
    add_app_commands(sub, bootstrap_flag())
    return parser


def app_main(app: AppLike, argv: Sequence[str] | None = None) -> int:
    """`App.main()`: the worker, cleanup and topology commands for `app`, from `argv` (default: sys.argv)."""
    parser = build_app_parser(os.path.basename(sys.argv[0]) or app.application_id)
    args = parser.parse_args(argv)
    args.app = app
    return run(args)


def run(args: argparse.Namespace) -> int:
    handler: Handler = args.handler
    try:
        return handler(args)
    except StreamletError as exc:
        print(f"streamlet: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
