"""End-to-end latency of WordCount at a fixed input rate: streamlet vs Kafka Streams, at-least-once vs
exactly_once_v2.

Input lines are produced at a fixed word rate (default 20,000 words/s) with their wall-clock time as the
record timestamp. Both engines give a count update the timestamp of the input record that caused it, so
the latency of an update is the moment a consumer of the output topic receives it minus its timestamp
(read_committed for exactly-once: an update counts as delivered when it is visible). After a warm-up, every
update of the measured window is counted; the table gives p50, p99 and max per peer.

Every peer runs with the same settings: 2 stream threads in all (streamlet: 2 processes x 1 thread, Kafka
Streams: 1 JVM x 2 threads), commit interval 100 ms, record cache off, producer linger 5 ms (streamlet's;
Kafka Streams' own default is 100 ms), so an update is sent as soon as it is computed (exactly-once: made
visible at the next commit). The peers run one after another, interleaved
over `--rounds` (A B C D A B C D ...); the table reports each peer's median over the rounds.

Usage: .venv/bin/python bench/latency.py [--rate WORDS_PER_S] [--seconds S] [--warmup S] [--rounds N] [--peers a,b]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import common
import corpus as corpus_mod
from common import JAVA_CP, KAFKA_STREAMS, LIB_PY, Proc, log, spawn, stop

INPUT = "bench-latency-input"
PARTITIONS = 6
COMMIT_MS = 100
GUARANTEES = ("at_least_once", "exactly_once_v2")


@dataclass
class Peer:
    name: str
    guarantee: str
    launch: Callable[[str, str, str, Path], list[Proc]]  # bootstrap, app id, output topic, work dir


def _streamlet(guarantee: str) -> Callable[[str, str, str, Path], list[Proc]]:
    def launch(bootstrap: str, app_id: str, output: str, work: Path) -> list[Proc]:
        env = {"WORDCOUNT_INPUT_TOPIC": INPUT, "WORDCOUNT_OUTPUT_TOPIC": output, "WORDCOUNT_APPLICATION_ID": app_id}
        return [
            spawn(
                f"streamlet-{i}",
                [
                    str(LIB_PY),
                    *("-m", "streamlet.cli", "worker", "examples.wordcount.app:app", "--threads", "1"),
                    *("--state-dir", str(work / f"state-{i}"), "--bootstrap-servers", bootstrap),
                    *("--log-level", "warning", "--config", f"commit_interval_ms={COMMIT_MS}"),
                    *("--config", "statestore_cache_max_bytes=0", "--config", f"processing_guarantee={guarantee}"),
                ],
                work / f"worker-{i}.log",
                env=env,
            )
            for i in range(2)
        ]

    return launch


def _kafka_streams(guarantee: str) -> Callable[[str, str, str, Path], list[Proc]]:
    def launch(bootstrap: str, app_id: str, output: str, work: Path) -> list[Proc]:
        args = [bootstrap, app_id, INPUT, output, str(work / "state"), "2", str(COMMIT_MS), "0", guarantee, "5"]
        return [spawn("kafka-streams", ["java", "-Xmx1g", "-cp", JAVA_CP, "bench.WordCount", *args], work / "ks.log")]

    return launch


PEERS = [
    *(Peer(f"streamlet 2 procs x 1 thread, {g}", g, _streamlet(g)) for g in GUARANTEES),
    *(Peer(f"{KAFKA_STREAMS} (2 threads), {g}", g, _kafka_streams(g)) for g in GUARANTEES),
]


async def _wait_for_group(bootstrap: str, group: str, timeout: float = 90) -> None:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.errors import KafkaError

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                described = await admin.describe_consumer_groups([group])
            except KafkaError as exc:  # the coordinator is not known yet (a fresh broker, a new group)
                if not exc.retriable:
                    raise
                described = []
            state = described[0].groups[0][2] if described and described[0].groups else ""
            if state == "Stable":
                return
            await asyncio.sleep(0.5)
        raise TimeoutError(f"group {group} never became Stable")
    finally:
        await admin.close()


async def _produce(bootstrap: str, lines: list[str], rate: float, seconds: float) -> tuple[int, float]:
    """Lines at `rate` words/s for `seconds`, in 20 ms ticks, each stamped with its send time."""
    from aiokafka import AIOKafkaProducer

    words_per_line = [len(corpus_mod.java_split(line)) for line in lines]
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, acks=1)
    await producer.start()
    sent_words, i = 0, 0
    start = time.monotonic()
    try:
        while (now := time.monotonic()) - start < seconds:
            due = rate * (now - start)
            while sent_words < due:
                line = lines[i % len(lines)]
                await producer.send(INPUT, line.encode(), timestamp_ms=int(time.time() * 1000))
                sent_words += words_per_line[i % len(lines)]
                i += 1
            await asyncio.sleep(0.02)
        await producer.flush()
    finally:
        await producer.stop()
    return sent_words, time.monotonic() - start


async def _collect(bootstrap: str, output: str, committed: bool, since_ms: int, stop_at: asyncio.Event) -> list[int]:
    """Latency (ms) of every update stamped at or after `since_ms`, as received."""
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        output,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        isolation_level="read_committed" if committed else "read_uncommitted",
        fetch_max_wait_ms=10,
    )
    await consumer.start()
    latencies: list[int] = []
    try:
        while not stop_at.is_set():
            batch = await consumer.getmany(timeout_ms=50)
            now = int(time.time() * 1000)
            for records in batch.values():
                latencies.extend(now - r.timestamp for r in records if r.timestamp >= since_ms)
    finally:
        await consumer.stop()
    return latencies


async def run_peer(peer: Peer, bootstrap: str, lines: list[str], args: argparse.Namespace) -> dict[str, Any]:
    run = uuid.uuid4().hex[:8]
    app_id, output = f"bench-latency-{run}", f"bench-latency-out-{run}"
    work = common.WORK / "latency" / run
    await common.recreate_topics(bootstrap, {INPUT: PARTITIONS, output: PARTITIONS})
    procs = peer.launch(bootstrap, app_id, output, work)
    try:
        await _wait_for_group(bootstrap, app_id)
        since_ms = int((time.time() + args.warmup) * 1000)
        stop_at = asyncio.Event()
        collecting = asyncio.create_task(
            _collect(bootstrap, output, peer.guarantee == "exactly_once_v2", since_ms, stop_at)
        )
        words, took = await _produce(bootstrap, lines, args.rate, args.warmup + args.seconds)
        await asyncio.sleep(3)  # the last updates arrive
        stop_at.set()
        latencies = sorted(await collecting)
        dead = [p.name for p in procs if not p.alive()]
    finally:
        for proc in procs:
            stop(proc)
    if dead or not latencies:
        return {"peer": peer.name, "status": f"failed: {'died: ' + ', '.join(dead) if dead else 'no output'}"}
    return {
        "peer": peer.name,
        "status": "ok",
        "input_words_per_s": round(words / took),
        "updates": len(latencies),
        "p50_ms": latencies[len(latencies) // 2],
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "max_ms": latencies[-1],
    }


def render(rounds: list[list[dict[str, Any]]]) -> str:
    rows = []
    for name in dict.fromkeys(r["peer"] for results in rounds for r in results):
        ok = [r for results in rounds for r in results if r["peer"] == name and r["status"] == "ok"]
        if not ok:
            rows.append([name, "-", "-", "-", "-", "-", "failed"])
            continue

        def med(key: str, ok: list[dict[str, Any]] = ok) -> int:
            return round(statistics.median(r[key] for r in ok))

        p50s = " ".join(str(r["p50_ms"]) for r in ok)
        rows.append([name, med("input_words_per_s"), med("updates"), p50s, med("p50_ms"), med("p99_ms"), med("max_ms")])
    return common.table(["peer", "input words/s", "updates", "p50 per round ms", "p50 ms", "p99 ms", "max ms"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=20_000, help="input words per second")
    parser.add_argument("--seconds", type=float, default=20, help="measured window")
    parser.add_argument("--warmup", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peers", default="", help="comma-separated substrings of peer names (default: all)")
    args = parser.parse_args(argv)
    common.quiet_logs()
    wanted = [s for s in args.peers.split(",") if s]
    peers = [p for p in PEERS if not wanted or any(w in p.name for w in wanted)]
    if (
        any("Kafka Streams" in p.name for p in peers)
        and not (common.JAVA_CLASSES / "bench" / "WordCount.class").exists()
    ):
        sys.exit("bench/kafka-streams not built (run `mvn -q -B package` there; bench/run_all does)")
    lines = corpus_mod.build(200_000).lines
    rounds: list[list[dict[str, Any]]] = []
    with common.broker() as bootstrap:
        for n in range(args.rounds):
            results = []
            for peer in peers:
                log(f"round {n + 1}/{args.rounds}: {peer.name} ...")
                result = asyncio.run(run_peer(peer, bootstrap, lines, args))
                log(f"{peer.name}: {result}")
                results.append(result)
            rounds.append(results)
    text = render(rounds)
    print(text)
    settings = {"rate": args.rate, "seconds": args.seconds, "warmup": args.warmup, "commit_interval_ms": COMMIT_MS}
    common.write_result("latency", {"settings": settings, "rounds": rounds, "table": text})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
