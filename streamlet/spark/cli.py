"""`streamlet verify wordcount`: recompute WordCount from the input topic with Spark and check the output topic.

Exit codes: 0 the output agrees with the ground truth, 1 it does not (every mismatch is printed), 2 an error
(no broker, a missing topic, PySpark not installed, Spark failed).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import sys
import time
from collections.abc import Coroutine
from typing import Any, TextIO

from streamlet.errors import StreamletError

DEFAULT_INPUT_TOPIC = "streams-plaintext-input"
DEFAULT_OUTPUT_TOPIC = "streams-wordcount-output"
_BOUNDS = {"starting": ("earliest", -2), "ending": ("latest", -1)}


def add_verify_parser(subparsers: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """Register `verify wordcount`; returns verify's own subparsers.

    `subparsers` is either the top-level one (a `verify` command is added) or that of an existing `verify`
    command (only `wordcount` is added to it).
    """
    prefix = getattr(subparsers, "_prog_prefix", "").split()
    if prefix and prefix[-1] == "verify":
        add_wordcount_parser(subparsers)
        return subparsers
    verify = subparsers.add_parser("verify", help="check a streaming application's output against a Spark batch job")
    verify_sub = verify.add_subparsers(dest="verify_command", required=True)
    add_wordcount_parser(verify_sub)
    return verify_sub


def add_wordcount_parser(verify_subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = verify_subparsers.add_parser(
        "wordcount",
        help="recompute WordCount from the input topic with Spark; compare with the output topic's latest counts",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--bootstrap-servers",
        default=os.environ.get("STREAMLET_BOOTSTRAP_SERVERS"),
        help="Kafka bootstrap servers (default $STREAMLET_BOOTSTRAP_SERVERS, else the broker "
        "`streamlet broker start` runs)",
    )
    parser.add_argument(
        "--input-topic", default=DEFAULT_INPUT_TOPIC, help=f"text lines (default {DEFAULT_INPUT_TOPIC})"
    )
    parser.add_argument(
        "--output-topic", default=DEFAULT_OUTPUT_TOPIC, help=f"word -> int64 count (default {DEFAULT_OUTPUT_TOPIC})"
    )
    parser.add_argument(
        "--starting-offsets",
        default="earliest",
        help="input range start: earliest, a JSON object as Spark takes it, or P:OFFSET[,P:OFFSET...] "
        "(partitions not named start at the earliest offset)",
    )
    parser.add_argument(
        "--ending-offsets",
        default="latest",
        help="input range end (exclusive): latest, JSON, or P:OFFSET[,...] (others: latest)",
    )
    parser.add_argument(
        "--max-mismatches", type=int, default=None, metavar="N", help="print at most N mismatches (default: all)"
    )
    parser.add_argument("--master", default=None, help="Spark master (default $STREAMLET_SPARK_MASTER or local[2])")
    parser.add_argument("--driver-memory", default=None, help="Spark driver heap (default 1g)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the broker's metadata")
    parser.set_defaults(handler=verify_wordcount)
    return parser


def verify_wordcount(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """The `verify wordcount` handler: 0 = output agrees, 1 = mismatches (all printed), 2 = error."""
    out = out or sys.stdout
    try:
        return _verify_wordcount(args, out)
    except StreamletError as exc:
        print(f"streamlet: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # Spark's and py4j's errors: report them, don't dump a JVM stack trace
        lines = str(exc).strip().splitlines()
        shown = "\n".join(lines[:12]) + ("\n..." if len(lines) > 12 else "")
        print(f"streamlet: error: {type(exc).__name__}: {shown}", file=sys.stderr)
        return 2


def _verify_wordcount(args: argparse.Namespace, out: TextIO) -> int:
    from streamlet.spark.session import get_spark, require_pyspark

    require_pyspark()
    from streamlet.spark.wordcount import compare, ground_truth_wordcount, read_output_counts

    bootstrap = args.bootstrap_servers or _local_broker_bootstrap()
    partitions = _run(_partition_counts(bootstrap, [args.input_topic, args.output_topic], args.timeout))
    starting = parse_offsets(args.starting_offsets, partitions[args.input_topic], "starting")
    ending = parse_offsets(args.ending_offsets, partitions[args.input_topic], "ending")

    began = time.monotonic()
    spark = get_spark(args.master, driver_memory=args.driver_memory)
    truth = ground_truth_wordcount(spark, bootstrap, args.input_topic, starting, ending)
    output = read_output_counts(spark, bootstrap, args.output_topic)
    mismatches = compare(truth, output.counts)
    elapsed = time.monotonic() - began

    print(f"verify wordcount on {bootstrap} ({elapsed:.1f}s with Spark)", file=out)
    print(
        f"  input  {args.input_topic} ({partitions[args.input_topic]} partitions, offsets "
        f"{_describe_offsets(starting)} .. {_describe_offsets(ending)}): {len(truth)} distinct words, "
        f"{sum(truth.values())} words in total",
        file=out,
    )
    print(
        f"  output {args.output_topic} ({partitions[args.output_topic]} partitions, {output.records} records): "
        f"{len(output.counts)} distinct words, latest counts summing to {sum(output.counts.values())}",
        file=out,
    )
    problems = len(mismatches) + len(output.split_keys) + len(output.malformed)
    for word, parts in sorted(output.split_keys.items()):
        print(
            f"  key in several partitions: {word!r} in partitions {list(parts)} (the latest by partition is used)",
            file=out,
        )
    for record in output.malformed:
        print(
            f"  malformed output record at partition {record.partition} offset {record.offset}: {record.reason} "
            f"(key {record.key!r}, value {record.value!r})",
            file=out,
        )
    print(f"  mismatches: {len(mismatches)}", file=out)
    shown = mismatches if args.max_mismatches is None else mismatches[: max(args.max_mismatches, 0)]
    for mismatch in shown:
        print(f"    {mismatch}", file=out)
    if len(shown) < len(mismatches):
        print(f"    ... and {len(mismatches) - len(shown)} more (--max-mismatches {args.max_mismatches})", file=out)
    if problems:
        print(f"FAILED: {problems} problem(s) in {args.output_topic}", file=out)
        return 1
    print(f"OK: {args.output_topic} agrees with the ground truth", file=out)
    return 0


def parse_offsets(text: str, partitions: int, bound: str) -> str | dict[int, int]:
    """`earliest`/`latest`, a JSON object (passed to Spark as is), or `P:OFFSET,...` filled up to every partition."""
    default_name, default_offset = _BOUNDS[bound]
    text = text.strip()
    if text in ("earliest", "latest"):
        if text != default_name:
            raise StreamletError(f"--{bound}-offsets {text} is not allowed in a batch read (use {default_name})")
        return text
    if text.startswith("{"):
        try:
            json.loads(text)
        except ValueError as exc:
            raise StreamletError(f"--{bound}-offsets is not valid JSON: {exc}") from exc
        return text
    offsets = dict.fromkeys(range(partitions), default_offset)
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            partition, offset = (int(x) for x in item.split(":"))
        except ValueError as exc:
            raise StreamletError(f"--{bound}-offsets: {item!r} is not PARTITION:OFFSET") from exc
        if not 0 <= partition < partitions:
            raise StreamletError(f"--{bound}-offsets: the topic has no partition {partition} (it has {partitions})")
        offsets[partition] = offset
    return offsets


def _describe_offsets(offsets: str | dict[int, int]) -> str:
    if isinstance(offsets, str):
        return offsets
    names = {-2: "earliest", -1: "latest"}
    return ",".join(f"{p}:{names.get(o, o)}" for p, o in sorted(offsets.items()))


def _local_broker_bootstrap() -> str:
    from streamlet.kafka.broker import LocalBroker

    status = LocalBroker().status()
    if status is None:
        raise StreamletError(
            "no Kafka broker given: pass --bootstrap-servers, set STREAMLET_BOOTSTRAP_SERVERS, or run "
            "`streamlet broker start`"
        )
    return status.bootstrap_servers


async def _partition_counts(bootstrap: str, topics: list[str], timeout: float) -> dict[str, int]:
    """Each topic's partition count; fails fast (rather than Spark waiting on metadata) when one is missing."""
    from aiokafka.errors import KafkaError

    from streamlet.config import cluster_from_environment
    from streamlet.kafka import connect

    # security from the environment, as every streamlet command (Spark's own Kafka reader does not take it yet)
    admin = connect.admin(cluster_from_environment(bootstrap), request_timeout_ms=int(timeout * 1000))
    started = False
    try:
        await asyncio.wait_for(admin.start(), timeout)
        started = True
        described = await asyncio.wait_for(admin.describe_topics(list(dict.fromkeys(topics))), timeout)
    except (TimeoutError, KafkaError, OSError) as exc:
        raise StreamletError(f"cannot read metadata from Kafka at {bootstrap}: {exc!r}") from exc
    finally:
        if started:
            await admin.close()
    counts = {d["topic"]: len(d.get("partitions") or []) for d in described if d.get("error_code", 0) == 0}
    for topic in topics:
        if not counts.get(topic):
            raise StreamletError(f"topic {topic!r} does not exist on {bootstrap}")
    return counts


def _run(coro: Coroutine[Any, Any, Any]) -> Any:
    """asyncio.run, also from code already inside an event loop (e.g. an async test calling the handler)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
