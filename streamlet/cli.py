"""The `streamlet` command: broker, worker, topology, produce/consume, assign, verify."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence

from streamlet.errors import StreamletError

Handler = Callable[[argparse.Namespace], int]


def _broker(args: argparse.Namespace) -> int:
    from streamlet.kafka.broker import LocalBroker

    broker = LocalBroker(args.dir, port=args.port)
    if args.action == "start":
        began = time.monotonic()
        status = broker.start(timeout=args.timeout)
        print(status.bootstrap_servers)
        print(f"broker pid {status.pid}, Kafka {status.kafka_version}, ready in {time.monotonic() - began:.1f}s; "
              f"log {status.log_file}", file=sys.stderr)  # fmt: skip
        return 0
    if args.action == "status":
        status = broker.status()
        if status is None:
            print(f"not running (directory {broker.directory})")
            return 1
        print(f"running: {status.bootstrap_servers} pid {status.pid} Kafka {status.kafka_version}")
        return 0
    if args.action == "stop":
        print("stopped" if broker.stop() else "not running")
        return 0
    raise AssertionError(args.action)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="streamlet", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    broker = sub.add_parser("broker", help="run a local Apache Kafka broker (KRaft) for development and tests")
    broker.add_argument("action", choices=["start", "status", "stop"])
    broker.add_argument("--dir", default=None, help="broker directory (default $STREAMLET_BROKER_DIR or ~/.cache/streamlet/broker)")
    broker.add_argument("--port", type=int, default=None, help="listener port (default: a free port)")
    broker.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the broker to answer")
    broker.set_defaults(handler=_broker)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except StreamletError as exc:
        print(f"streamlet: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
