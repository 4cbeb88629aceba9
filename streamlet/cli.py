"""The `streamlet` command: broker, worker, cleanup, topology, topics, produce/consume, status, assign, verify,
experiment."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from streamlet.app import App
from streamlet.app_commands import AppLike, add_app_commands, bootstrap_flag, run
from streamlet.config import DEFAULT_BOOTSTRAP_SERVERS, cluster_from_environment
from streamlet.console_keys import KEY_SERDE_HELP, console_key_serde, format_key
from streamlet.errors import StreamletError
from streamlet.kafka import connect
from streamlet.kafka.connect import Cluster
from streamlet.targets import load_target
from streamlet.topology import Topology

if TYPE_CHECKING:
    from streamlet.kafka.cluster import LocalCluster


def _broker(args: argparse.Namespace) -> int:
    from streamlet.kafka.broker import LocalBroker
    from streamlet.kafka.cluster import LocalCluster

    racks = [r.strip() for r in args.racks.split(",")] if args.racks else None
    if racks is not None and (args.brokers < 2 or len(racks) != args.brokers):
        raise SystemExit(
            f"streamlet broker: --racks names {len(racks)} racks for {args.brokers} nodes: give one per node of a "
            "cluster (--brokers 2 or more)"
        )
    cluster = LocalCluster(
        args.dir, nodes=max(args.brokers, 1), security=args.security, kafka_version=args.kafka_version, racks=racks
    )
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
        if layout is not None and args.security not in ("plaintext", layout.security):  # restarts keep theirs
            raise SystemExit(
                f"streamlet broker: {cluster.directory} holds a {layout.security} cluster, not {args.security}; "
                "use another --dir"
            )
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
        for variable, value in cluster.client_settings().items():
            print(f"export {variable}={shlex.quote(value)}")
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
        "--racks",
        default=None,
        help="with --brokers N: each node's broker.rack, comma-separated (az-1,az-2,az-3), for rack-aware replica "
        "placement and rack_aware_assignment_strategy; fixed at the first start",
    )
    broker.add_argument(
        "--kafka-version",
        default=None,
        help="the Apache Kafka release to run, resolved from Maven Central once (default $STREAMLET_KAFKA_VERSION "
        "or the project's Kafka version; 3.9.1 is the oldest streamlet supports)",
    )
    broker.set_defaults(handler=_broker)

    bootstrap = bootstrap_flag()

    add_app_commands(sub, bootstrap, resolve_app=_app_of)

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


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
