"""The `streamlet` command: broker, worker, cleanup, topology, topics, produce/consume, status, assign, verify,
experiment."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from streamlet.config import (
    DEFAULT_BOOTSTRAP_SERVERS,
    ENVIRONMENT_VARIABLES,
    SECRETS,
    StreamsConfig,
    cluster_from_environment,
    config_key,
    parse_setting,
)
from streamlet.console_keys import KEY_SERDE_HELP, console_key_serde, format_key
from streamlet.errors import ConfigError, StreamletError
from streamlet.kafka import connect
from streamlet.kafka.acls import Acl
from streamlet.kafka.connect import Cluster
from streamlet.logging_utils import install_repeat_filter
from streamlet.targets import load_target

if TYPE_CHECKING:
    from streamlet.kafka.cluster import LocalCluster

Handler = Callable[[argparse.Namespace], int]


class AppLike(Protocol):
    """What the worker, cleanup and describe commands need of an App.

    A protocol rather than the App class: `App.main()` calls into this module, so this module must not import
    `streamlet.app` at module level (the import graph stays acyclic).
    """

    application_id: str

    @property
    def settings(self) -> Mapping[str, Any]: ...

    async def run_worker(self, **overrides: Any) -> None: ...

    def cleanup(self, **overrides: Any) -> None: ...

    def required_acls(self, principal: str, **overrides: Any) -> list[Acl]: ...

    def topology(self) -> Any: ...


def _broker(args: argparse.Namespace) -> int:
    from streamlet.kafka.broker import LocalBroker
    from streamlet.kafka.cluster import LocalCluster

    cluster = LocalCluster(args.dir, nodes=max(args.brokers, 1), kafka_version=args.kafka_version)
    if args.brokers > 1 or cluster.layout() is not None:  # a cluster's directory: start it again, status, stop
        return _cluster_command(args, cluster)
    default_port = int(DEFAULT_BOOTSTRAP_SERVERS.rpartition(":")[2])
    broker = LocalBroker(
        args.dir,
        port=args.port,
        preferred_port=default_port,
        security=args.security,
        kafka_version=args.kafka_version,
    )
    if args.action == "start":
        began = time.monotonic()
        status = broker.start(timeout=args.timeout)
        # stdout is shell lines only, so `eval "$(streamlet broker start)"` points this shell's clients at it
        for variable, value in status.client_settings().items():
            print(f"export {variable}={shlex.quote(value)}")
        print(
            f"broker pid {status.pid}, Kafka {status.kafka_version}, ready in {time.monotonic() - began:.1f}s; "
            f"log {status.log_file}",
            file=sys.stderr,
        )
        if status.bootstrap_servers != DEFAULT_BOOTSTRAP_SERVERS:
            print(
                f"clients default to {DEFAULT_BOOTSTRAP_SERVERS}, and this broker listens on "
                f"{status.bootstrap_servers}: run the export line above (or eval this command's output)",
                file=sys.stderr,
            )
        return 0
    if args.action == "status":
        current = broker.status()
        if current is None:
            print(f"not running (directory {broker.directory})")
            return 1
        print(f"running: {current.bootstrap_servers} pid {current.pid} Kafka {current.kafka_version}")
        return 0
    if args.action == "stop":
        print("stopped" if broker.stop() else "not running")
        return 0
    raise AssertionError(args.action)


def _cluster_command(args: argparse.Namespace, cluster: LocalCluster) -> int:
    """`streamlet broker start --brokers N` and the `status`/`stop` of a directory holding a cluster."""
    from streamlet.kafka.broker import _port_free

    if args.action == "start":
        layout = cluster.layout()
        if layout is not None and args.brokers > 1 and len(layout.ports) != args.brokers:
            raise SystemExit(
                f"streamlet broker: {cluster.directory} holds a cluster of {len(layout.ports)} nodes, not "
                f"{args.brokers}; use another --dir"
            )
        if args.security != "plaintext":
            raise SystemExit("streamlet broker: --security with --brokers > 1 is not supported yet (plaintext only)")
        default_port = int(DEFAULT_BOOTSTRAP_SERVERS.rpartition(":")[2])
        first = args.port or default_port
        ports = [first + i for i in range(args.brokers)]
        if layout is None and not all(_port_free("127.0.0.1", p) for p in ports):
            if args.port:
                raise SystemExit(f"streamlet broker: ports {ports} are not all free; choose others with --port")
            ports = []  # the defaults are taken: free ports
        cluster.requested_ports = ports or None
        began = time.monotonic()
        running = cluster.start(timeout=args.timeout)
        print(f"export STREAMLET_BOOTSTRAP_SERVERS={shlex.quote(cluster.bootstrap_servers)}")
        print(
            f"{len(running)} nodes (pids {', '.join(str(s.pid) for s in running.values())}), ready in "
            f"{time.monotonic() - began:.1f}s; replication factor {min(len(running), 3)}, logs in {cluster.directory}",
            file=sys.stderr,
        )
        return 0
    if args.action == "status":
        layout, running = cluster.layout(), cluster.status()
        assert layout is not None  # only a cluster's directory comes here without --brokers
        for node_id in layout.node_ids:
            state = running.get(node_id)
            where = f"127.0.0.1:{layout.ports[str(node_id)]}"
            print(f"node {node_id}: " + (f"running: {where} pid {state.pid}" if state else f"not running ({where})"))
        return 0 if len(running) == len(layout.node_ids) else 1
    if args.action == "stop":
        print("stopped" if cluster.stop() else "not running")
        return 0
    raise AssertionError(args.action)


def _app_of(spec: str, application_id: str | None) -> AppLike:
    from streamlet.app import App
    from streamlet.topology import Topology

    target = load_target(spec)
    if callable(target) and not isinstance(target, (App, Topology)):
        target = target()
    if isinstance(target, App):
        return target
    if isinstance(target, Topology):
        if not application_id:
            raise StreamletError(f"{spec} is a Topology: give --application-id")
        return App.from_topology(application_id, target)
    raise StreamletError(f"{spec} is a {type(target).__name__}, expected a streamlet App or Topology")


# The worker's flags that set a StreamsConfig field. Their argparse default is None, so "not given" is visible
# and a flag never hides a lower level with a default of its own.
WORKER_FLAGS: Mapping[str, str] = {
    "--state-dir": "state_dir",
    "--threads": "num_stream_threads",
    "--bootstrap-servers": "bootstrap_servers",
    "--leave": "leave_group_on_close",
    "--web-port": "web_port",
    "--web-host": "web_host",
}


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
    return bound if bound is not None else _app_of(args.target, args.application_id)


def _app_config(app: AppLike) -> Mapping[str, Any]:
    """The App's own keyword config, a level of its own in `resolve_worker_config`."""
    return app.settings


def _worker(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    # a broker outage makes aiokafka log the same error ~100 times a second: one line per 10 s is enough
    install_repeat_filter(logging.getLogger().handlers)
    app = _target_app(args)
    flags = {
        "--state-dir": args.state_dir,
        "--threads": args.threads,
        "--bootstrap-servers": args.bootstrap_servers,
        "--leave": args.leave,
        "--web-port": args.web_port,
        "--web-host": args.web_host,
    }
    settings = resolve_worker_config(flags, args.config, _app_config(app), os.environ)
    asyncio.run(app.run_worker(**settings))
    return 0


def _cleanup(args: argparse.Namespace) -> int:
    """Delete an application's local state on this machine (`KafkaStreams#cleanUp`); the changelogs stay.

    It resolves `state_dir` exactly as `streamlet worker` does, so it wipes the directory that worker uses.
    """
    app = _target_app(args)
    settings = resolve_worker_config({"--state-dir": args.state_dir}, args.config, _app_config(app), os.environ)
    state_dir = StreamsConfig.from_mapping({"application_id": app.application_id, **settings}).state_dir
    app.cleanup(**settings)
    print(f"deleted the local state of {app.application_id} in {os.path.join(state_dir, app.application_id)}")
    return 0


def _acls(args: argparse.Namespace) -> int:
    """Print (or create) the ACLs of `required_acls`, for the app as `streamlet worker` would configure it."""
    from streamlet.kafka.acls import create_acls

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
    app = bound if bound is not None else _app_of(args.target, args.application_id or "describe")
    print(app.topology().describe())
    return 0


def _cluster(args: argparse.Namespace) -> Cluster:
    """For the commands without an App or --config: servers from the flag, else the environment, else the
    default; security settings from the environment ($STREAMLET_SECURITY_PROTOCOL, ...)."""
    return cluster_from_environment(args.bootstrap_servers)


def _topics(args: argparse.Namespace) -> int:
    from streamlet.kafka.topics import InternalTopicManager, TopicSpec

    async def run() -> None:
        manager = InternalTopicManager(_cluster(args), replication_factor=args.replication_factor)
        await manager.start()
        try:
            await manager.ensure([TopicSpec(name, args.partitions) for name in args.names])
        finally:
            await manager.close()

    asyncio.run(run())
    for name in args.names:
        print(f"{name}: {args.partitions} partitions")
    return 0


def _produce(args: argparse.Namespace) -> int:
    stream = open(args.file, encoding="utf-8") if args.file else sys.stdin

    async def run() -> int:
        cluster = _cluster(args)
        producer = connect.producer(cluster, linger_ms=10, acks="all")
        await connect.start(producer, cluster, "streamlet produce")
        sent = 0
        try:
            for line in stream:
                text = line.rstrip("\n")
                key = None
                if args.key_separator and args.key_separator in text:
                    raw_key, text = text.split(args.key_separator, 1)
                    key = raw_key.encode()
                await producer.send(args.topic, value=text.encode(), key=key)
                sent += 1
            await producer.flush()
        finally:
            await producer.stop()
        return sent

    try:
        sent = asyncio.run(run())
    finally:
        if args.file:
            stream.close()
    print(f"produced {sent} records to {args.topic}", file=sys.stderr)
    return 0


def _consume(args: argparse.Namespace) -> int:
    from streamlet.serdes import serde_from_name

    key_serde = console_key_serde(args.key_serde, args.window_size)
    try:
        value_serde = serde_from_name(args.value_serde)
    except ValueError as exc:
        raise StreamletError(f"--value-serde: {exc}") from None

    async def run() -> None:
        cluster = _cluster(args)
        consumer = connect.consumer(
            cluster, args.topic, group_id=None, auto_offset_reset="earliest", enable_auto_commit=False
        )
        await connect.start(consumer, cluster, "streamlet consume")
        seen = 0
        try:
            while args.max_records is None or seen < args.max_records:
                batch = await consumer.getmany(timeout_ms=int(args.idle_timeout * 1000))
                if not batch:
                    break
                for records in batch.values():
                    for r in records:
                        key = format_key(key_serde.deserialize(args.topic, r.key))
                        value = value_serde.deserialize(args.topic, r.value)
                        print(f"{key}{args.separator}{value}")
                        seen += 1
        finally:
            await consumer.stop()

    asyncio.run(run())
    return 0


def _status(args: argparse.Namespace) -> int:
    from streamlet.status import format_status, read_group_events

    application_id = args.application_id or (_app_of(args.target, None).application_id if args.target else None)
    if not application_id:
        raise StreamletError("give --application-id (or MODULE:APP)")
    cluster = _cluster(args)

    async def show() -> None:
        while True:
            text = format_status(await read_group_events(cluster, application_id))
            if args.watch:
                print("\033[2J\033[H" + time.strftime("%H:%M:%S  ") + f"every {args.interval:g}s (Ctrl-C stops)")
            print(text, end="", flush=True)
            if not args.watch:
                return
            await asyncio.sleep(args.interval)

    asyncio.run(show())
    return 0


def _assign(args: argparse.Namespace) -> int:
    from streamlet.assignment.simulation import main as simulate_main

    argv = ["--assignor", args.assignor]
    if args.case:
        argv.append(args.case)
    return simulate_main(argv)


def _bootstrap_flag() -> dict[str, Any]:
    # default None: resolved when the command runs (flag > [--config > App >] environment > default)
    return {
        "default": None,
        "help": f"Kafka bootstrap servers (default ${ENVIRONMENT_VARIABLES['bootstrap_servers']} "
        f"or {DEFAULT_BOOTSTRAP_SERVERS})",
    }


def _add_app_commands(sub: Any, bootstrap: dict[str, Any], *, bound: bool) -> None:
    """worker, cleanup and topology: with a MODULE:ATTRIBUTE target, or `bound` to the App of `App.main()`."""

    def target(parser: argparse.ArgumentParser, help_text: str) -> None:
        if not bound:
            parser.add_argument("target", help=help_text)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="streamlet", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    broker = sub.add_parser("broker", help="run a local Apache Kafka broker (KRaft) for development and tests")
    broker.add_argument("action", choices=["start", "status", "stop"])
    broker.add_argument(
        "--dir", default=None, help="broker directory (default $STREAMLET_BROKER_DIR or ~/.cache/streamlet/broker)"
    )
    broker.add_argument(
        "--port", type=int, default=None, help="listener port (default: 9092 when free, else a free port)"
    )
    broker.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the broker to answer")
    broker.add_argument(
        "--brokers",
        type=int,
        default=1,
        help="nodes: 3 starts a KRaft cluster of 3 broker+controller nodes (ports --port.. or 9092-9094 when free), "
        "replication factor 3 and min.insync.replicas=2 for every topic",
    )
    broker.add_argument(
        "--security",
        choices=["plaintext", "sasl_ssl", "ssl"],
        default="plaintext",
        help="sasl_ssl: TLS and a SCRAM user; ssl: mutual TLS (client certificates). Certificates, CA and users are "
        "made at the first start, in the broker directory",
    )
    broker.add_argument(
        "--kafka-version",
        default=None,
        help="the Apache Kafka release to run, resolved from Maven Central once (default $STREAMLET_KAFKA_VERSION "
        "or the project's Kafka version; 3.9.1 is the oldest streamlet supports)",
    )
    broker.set_defaults(handler=_broker)

    bootstrap = _bootstrap_flag()

    _add_app_commands(sub, bootstrap, bound=False)

    topics = sub.add_parser("topics", help="create topics (validated if they exist)")
    topics.add_argument("action", choices=["create"])
    topics.add_argument("names", nargs="+")
    topics.add_argument("--partitions", type=int, default=6)
    topics.add_argument("--replication-factor", type=int, default=-1)
    topics.add_argument("--bootstrap-servers", **bootstrap)
    topics.set_defaults(handler=_topics)

    produce = sub.add_parser("produce", help="produce each line of a file (or stdin) as one record")
    produce.add_argument("topic")
    produce.add_argument("--file", default=None)
    produce.add_argument("--key-separator", default=None, help="split 'key<SEP>value' lines")
    produce.add_argument("--bootstrap-servers", **bootstrap)
    produce.set_defaults(handler=_produce)

    consume = sub.add_parser("consume", help="print a topic's records from the beginning until it is idle")
    consume.add_argument("topic")
    consume.add_argument("--key-serde", default="str", help=KEY_SERDE_HELP)
    consume.add_argument(
        "--window-size", default=None, help="with --key-serde windowed:INNER: the windows' size (60000, 60s, 5m, 1h)"
    )
    consume.add_argument("--value-serde", default="str")
    consume.add_argument("--separator", default="\t")
    consume.add_argument("--idle-timeout", type=float, default=3.0, help="stop after this many idle seconds")
    consume.add_argument("--max-records", type=int, default=None)
    consume.add_argument("--bootstrap-servers", **bootstrap)
    consume.set_defaults(handler=_consume)

    status = sub.add_parser(
        "status",
        help="print an application's group from its assignments and metrics topics: clients, tasks and their "
        "states, lags, restorations, a pending probing rebalance",
    )
    status.add_argument("target", nargs="?", default=None, help="MODULE:APP (or give --application-id)")
    status.add_argument("--application-id", default=None)
    status.add_argument("--bootstrap-servers", **bootstrap)
    status.add_argument("--watch", action="store_true", help="refresh until Ctrl-C")
    status.add_argument("--interval", type=float, default=2.0, help="seconds between refreshes with --watch")
    status.set_defaults(handler=_status)

    assign = sub.add_parser("assign", help="simulate a task assignor on a case JSON (stdin or file), print JSON")
    assign.add_argument("case", nargs="?", default=None)
    assign.add_argument("--assignor", default="high_availability")
    assign.set_defaults(handler=_assign)

    verify = sub.add_parser("verify", help="compare an application's output with a batch ground truth (PySpark)")
    verify_sub = verify.add_subparsers(dest="what", required=True)
    try:
        from streamlet.spark.cli import add_verify_parser
    except ImportError:  # the spark package is optional
        pass
    else:
        add_verify_parser(verify_sub)

    from streamlet.experiments.cli import add_experiment_parser

    add_experiment_parser(sub)
    return parser


def build_app_parser(prog: str) -> argparse.ArgumentParser:
    """The command line of `App.main()`: `python myapp.py worker -l info`, as Faust's `app.main()`."""
    parser = argparse.ArgumentParser(prog=prog, description="run or inspect this streamlet application")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_app_commands(sub, _bootstrap_flag(), bound=True)
    return parser


def app_main(app: AppLike, argv: Sequence[str] | None = None) -> int:
    """`App.main()`: the worker, cleanup and topology commands for `app`, from `argv` (default: sys.argv)."""
    parser = build_app_parser(os.path.basename(sys.argv[0]) or app.application_id)
    args = parser.parse_args(argv)
    args.app = app
    return _run(args)


def main(argv: Sequence[str] | None = None) -> int:
    return _run(build_parser().parse_args(argv))


def _run(args: argparse.Namespace) -> int:
    handler: Handler = args.handler
    try:
        return handler(args)
    except StreamletError as exc:
        print(f"streamlet: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
