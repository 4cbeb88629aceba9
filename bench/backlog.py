"""Replaying a backlog: how many records each peer drops as late, and how many windows it gets wrong (issue 23 §3).

One broker, one backlog loaded before any peer starts: `--records` orders (30,000) over `--minutes` (40) of event
time on 6 partitions, keyed by order id (so spread over the partitions by the default partitioner), the customer
(one of `--customers`) as value, produced in time order: each partition is in time order, and the partitions are
as far apart as a live stream's. Each peer re-keys by customer (`group_by` → a repartition topic) and counts per
customer in tumbling 1-minute windows with 1 minute of grace (bench/kafka-streams' BacklogCount.java and
bench/peers/streamlet_backlog.py, node for node; 10 MiB cache, 1 s commits), from a fresh application id.

A peer is done when its group has committed the end of the input and of its repartition topic (checked twice, a
second apart). Then, per peer:

  dropped late    records minus the sum of the final window counts of its output (tumbling windows: each record
                  is in one window, so this is the records its windows dropped as late)
  metric          its own count: Kafka Streams' dropped-records-total, streamlet's dropped_records_total (the
                  metrics event)
  wrong windows   windows whose final count differs from the truth computed from the input (missing ones too)

Peers: Kafka Streams (common.KAFKA_STREAMS_VERSION) with 1 and 2 threads; streamlet with 1 thread, 2 threads and
2 processes of 1 thread;
with `--baseline REV`, streamlet at REV (1 and 2 threads, a git worktree) as "before". Rounds run every peer in
turn, the order reversed every other round. The closing lines give each peer's median and the median per-round
ratio of its drops to Kafka Streams' with as many threads (2 processes: Kafka Streams with 2 threads).

Usage: .venv/bin/python bench/backlog.py [--records N] [--minutes M] [--customers C] [--rounds R]
           [--peers a,b] [--baseline REV] [--timeout S]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import random
import re
import statistics
import struct
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import JAVA_CP, KAFKA_STREAMS, LIB_PY, Proc, log, spawn  # noqa: E402

PARTITIONS = 6
MINUTE = 60_000
COMMIT_MS = 1000
CACHE_BYTES = 10 * 1024 * 1024
PEERS_DIR = common.BENCH / "peers"
Window = tuple[bytes, int]


def backlog(records: int, minutes: int, customers: int, seed: int = 23) -> list[tuple[bytes, bytes, int]]:
    """(order id, customer, timestamp) in timestamp order, spread evenly over the minutes, recent enough to be
    inside the topic's retention."""
    rng = random.Random(seed)
    base = (int(time.time() * 1000) // MINUTE - minutes - 5) * MINUTE
    span = minutes * MINUTE
    return [
        (f"order-{i}".encode(), f"customer-{rng.randrange(customers)}".encode(), base + i * span // records)
        for i in range(records)
    ]


def truth(records: list[tuple[bytes, bytes, int]]) -> dict[Window, int]:
    return dict(collections.Counter((customer, ts // MINUTE * MINUTE) for _, customer, ts in records))


@dataclass
class Peer:
    name: str
    threads: int  # of Kafka Streams to compare with
    launch: Callable[[str, str, str, str, Path], list[Proc]]  # (bootstrap, app id, input, output, work)
    metric: Callable[[str, str, list[Proc]], Any]  # (bootstrap, app id, procs) -> awaitable dropped count


def _kafka_streams(threads: int) -> Peer:
    def launch(bootstrap: str, app_id: str, source: str, output: str, work: Path) -> list[Proc]:
        cmd = ["java", "-Xmx1g", "-cp", JAVA_CP, "bench.BacklogCount", bootstrap, app_id, source, output]
        cmd += [str(work / "state"), str(threads), str(COMMIT_MS), str(CACHE_BYTES)]
        return [spawn("kafka-streams", cmd, work / "kafka-streams.log")]

    async def metric(bootstrap: str, app_id: str, procs: list[Proc]) -> int | None:
        await asyncio.sleep(1.5)  # it prints its metric every second
        found = re.findall(r"^DROPPED (\d+)$", procs[0].log_path.read_text(errors="replace"), re.M)
        return int(found[-1]) if found else None

    return Peer(f"{KAFKA_STREAMS} ({threads} thread{'s' * (threads > 1)})", threads, launch, metric)


def _streamlet(name: str, processes: int, threads: int, root: Path) -> Peer:
    def launch(bootstrap: str, app_id: str, source: str, output: str, work: Path) -> list[Proc]:
        env = {
            "BENCH_APPLICATION_ID": app_id,
            "BENCH_INPUT_TOPIC": source,
            "BENCH_OUTPUT_TOPIC": output,
            "PYTHONPATH": f"{root}:{PEERS_DIR}",  # streamlet from `root`, the app from this tree
        }
        procs = []
        for i in range(processes):
            cmd = [str(LIB_PY), "-m", "streamlet.cli", "worker", "streamlet_backlog:app", "--threads", str(threads)]
            cmd += ["--state-dir", str(work / f"state-{i}"), "--bootstrap-servers", bootstrap, "--log-level", "warning"]
            for kv in (f"commit_interval_ms={COMMIT_MS}", f"statestore_cache_max_bytes={CACHE_BYTES}"):
                cmd += ["--config", kv]
            cmd += ["--config", "metrics_interval_ms=1000"]
            procs.append(spawn(f"streamlet-{i}", cmd, work / f"worker-{i}.log", env=env, cwd=root))
        return procs

    async def metric(bootstrap: str, app_id: str, procs: list[Proc]) -> int | None:
        from streamlet.runtime.metrics_event import metrics_topic, parse_metrics_event

        await asyncio.sleep(2.5)  # a metrics event per second: let one after the last commit be written
        latest: dict[str, int] = {}
        for _, value in await _read_all(bootstrap, metrics_topic(app_id)):
            event = parse_metrics_event(value)
            if event is not None:
                latest[event["process_id"]] = event.get("dropped_records_total", 0)
        return sum(latest.values()) if latest else None

    return Peer(name, max(threads, processes), launch, metric)


async def _read_all(bootstrap: str, topic: str) -> list[tuple[bytes, bytes]]:
    """(key, value) of every record in `topic` up to its end offsets now (a missing topic: none)."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    try:
        partitions = consumer.partitions_for_topic(topic) or set()
        if not partitions:
            await consumer._client.force_metadata_update()  # noqa: SLF001 (a freshly created topic)
            partitions = consumer.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        if not tps:
            return []
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        out: list[tuple[bytes, bytes]] = []
        deadline = time.monotonic() + 60
        while any([await consumer.position(tp) < ends[tp] for tp in tps]) and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500, max_records=50_000)).values():
                out.extend((r.key, r.value) for r in records)
        return out
    finally:
        await consumer.stop()


async def _final_counts(bootstrap: str, output: str) -> dict[Window, int]:
    latest: dict[Window, int] = {}
    for key, value in await _read_all(bootstrap, output):  # TimeWindowedSerde keys: key + 8-byte window start
        latest[(key[:-8], struct.unpack(">q", key[-8:])[0])] = struct.unpack(">q", value)[0]
    return latest


async def _committed_to_end(bootstrap: str, app_id: str, source: str) -> bool:
    """Has the group committed the end of the input and of every repartition topic of the app?"""
    from aiokafka import AIOKafkaConsumer
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.errors import KafkaError
    from aiokafka.structs import TopicPartition

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        committed = await admin.list_consumer_group_offsets(app_id)
        topics = [source] + [
            t for t in await admin.list_topics() if t.startswith(app_id) and t.endswith("-repartition")
        ]
    except KafkaError:  # the group's coordinator is not there yet: not done
        return False
    finally:
        await admin.close()
    if len(topics) < 2:
        return False
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        tps = [TopicPartition(t, p) for t in topics for p in range(PARTITIONS)]
        ends = await consumer.end_offsets(tps)
    finally:
        await consumer.stop()
    return all(tp in committed and committed[tp].offset >= ends[tp] for tp in tps)


async def run_peer(
    peer: Peer, bootstrap: str, source: str, expected: dict[Window, int], tag: str, timeout: float
) -> dict[str, Any]:
    slug = re.sub(r"[^a-z0-9]+", "-", peer.name.lower()).strip("-")
    app_id, output = f"bench-backlog-{slug}-{tag}", f"bench-backlog-{slug}-{tag}-out"
    await common.recreate_topics(bootstrap, {output: PARTITIONS})
    procs = peer.launch(bootstrap, app_id, source, output, common.WORK / "backlog" / tag / slug)
    started = time.monotonic()
    try:
        done_checks = 0
        while done_checks < 2:
            if time.monotonic() - started > timeout or not all(p.alive() for p in procs):
                log(f"{peer.name}: not done; log tail:\n{procs[0].tail()}")
                return {"peer": peer.name, "done": False}
            await asyncio.sleep(1.0)
            done_checks = done_checks + 1 if await _committed_to_end(bootstrap, app_id, source) else 0
        wall = time.monotonic() - started
        metric = await peer.metric(bootstrap, app_id, procs)
        counts = await _final_counts(bootstrap, output)
    finally:
        for proc in procs:
            common.stop(proc)
        await common.delete_topics_with_prefix(bootstrap, app_id)
        await common.delete_topics_with_prefix(bootstrap, output)
    records = sum(expected.values())
    counted = sum(counts.get(window, 0) for window in expected)
    wrong = sum(counts.get(window) != count for window, count in expected.items()) + len(counts.keys() - expected)
    return {
        "peer": peer.name,
        "done": True,
        "records": records,
        "dropped": records - counted,
        "metric": metric,
        "wrong_windows": wrong,
        "windows": len(expected),
        "wall_s": round(wall, 1),
    }


def peers(baseline: str) -> list[Peer]:
    out = [
        _kafka_streams(1),
        _kafka_streams(2),
        _streamlet("streamlet (1 thread)", 1, 1, common.ROOT),
        _streamlet("streamlet (2 threads)", 1, 2, common.ROOT),
        _streamlet("streamlet (2 processes)", 2, 1, common.ROOT),
    ]
    if baseline:
        _, tree = common.baseline_worktree(baseline)
        out += [
            _streamlet(f"streamlet before @{baseline} (1 thread)", 1, 1, tree),
            _streamlet(f"streamlet before @{baseline} (2 threads)", 1, 2, tree),
            _streamlet(f"streamlet before @{baseline} (2 processes)", 2, 1, tree),
        ]
    return out


def summary(rounds: list[list[dict[str, Any]]], names: list[str]) -> str:
    """Per peer: median dropped (share of the records), median wrong windows, and the median per-round ratio of
    its drops to Kafka Streams' with as many threads."""
    by_threads = {1: f"{KAFKA_STREAMS} (1 thread)", 2: f"{KAFKA_STREAMS} (2 threads)"}
    threads = {name: 2 if ("2 threads" in name or "2 processes" in name) else 1 for name in names}
    rows = []
    for name in names:
        runs = [r for results in rounds for r in results if r["peer"] == name and r.get("done")]
        if not runs:
            rows.append([name, "-", "-", "-", "-", "-"])
            continue
        ratios = []
        for results in rounds:
            mine = next((r for r in results if r["peer"] == name and r.get("done")), None)
            ks = next((r for r in results if r["peer"] == by_threads[threads[name]] and r.get("done")), None)
            if mine is not None and ks is not None and ks["dropped"]:
                ratios.append(mine["dropped"] / ks["dropped"])
        dropped = statistics.median(r["dropped"] for r in runs)
        records = runs[0]["records"]
        rows.append(
            [
                name,
                len(runs),
                f"{dropped:,.0f} ({100 * dropped / records:.1f} %)",
                statistics.median(r["wrong_windows"] for r in runs),
                ", ".join(f"{r:.3f}" for r in ratios),
                f"{statistics.median(ratios):.3f}" if ratios else "-",
            ]
        )
    headers = ["peer", "runs", "median dropped late", "median wrong windows", "ratios to KS", "median ratio"]
    return common.table(headers, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=30_000)
    parser.add_argument("--minutes", type=int, default=40)
    parser.add_argument("--customers", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peers", default="", help="comma-separated substrings of peer names (default: all)")
    parser.add_argument("--baseline", default="", help="git revision: add streamlet at it as 'before'")
    parser.add_argument("--timeout", type=float, default=300.0, help="per peer, seconds")
    args = parser.parse_args(argv)
    if not (common.JAVA_CLASSES / "bench" / "BacklogCount.class").exists():
        log("bench/kafka-streams is not built: run `mvn -q -B package -DskipTests` there (bench/setup_peers.sh does)")
        return 2
    common.quiet_logs()
    selected = [p for p in peers(args.baseline) if not args.peers or any(s in p.name for s in args.peers.split(","))]
    records = backlog(args.records, args.minutes, args.customers)
    expected = truth(records)
    run_id = uuid.uuid4().hex[:6]
    source = f"bench-backlog-input-{run_id}"
    rounds: list[list[dict[str, Any]]] = []
    with common.broker() as bootstrap:
        asyncio.run(common.recreate_topics(bootstrap, {source: PARTITIONS}))
        try:
            asyncio.run(common.produce_keyed(bootstrap, source, records))
            log(f"{len(records):,} records over {len(expected):,} windows in {source}")
            for round_no in range(1, args.rounds + 1):
                order = selected[:: 1 if round_no % 2 else -1]
                results = []
                for peer in order:
                    result = asyncio.run(
                        run_peer(peer, bootstrap, source, expected, f"{run_id}r{round_no}", args.timeout)
                    )
                    log(f"round {round_no}: {result}")
                    results.append(result)
                rounds.append(results)
        finally:
            asyncio.run(common.delete_topics_with_prefix(bootstrap, source))
    rows = [
        [i, r["peer"], r.get("records"), r.get("dropped"), r.get("metric"), r.get("wrong_windows"), r.get("wall_s")]
        for i, results in enumerate(rounds, 1)
        for r in results
    ]
    print(common.table(["round", "peer", "records", "dropped late", "metric", "wrong windows", "wall s"], rows))
    print()
    print(summary(rounds, [p.name for p in selected]))
    path = common.write_result(
        "backlog",
        {
            "records": len(records),
            "windows": len(expected),
            "minutes": args.minutes,
            "customers": args.customers,
            "baseline": args.baseline,
            "rounds": rounds,
        },
    )
    log(f"wrote {path}")
    return 0 if all(r.get("done") for results in rounds for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
