"""Stream-table join throughput: streamlet vs Kafka Streams on the same input, in interleaved rounds.

One broker, one input loaded once: a customers topic of `--customers` keys, then `--orders` orders keyed by a
random customer (6 partitions each; every customer's timestamp before every order's). Each peer reads the
customers as a KTable materialized in a change-logged store and left-joins every order with it as
"order|customer" (bench/peers/streamlet_join.py and bench/kafka-streams' StreamTableJoin.java, node for node;
10 MiB cache, 1 s commits, one process with `--threads` threads). Each run has a fresh application id and
output topic; a watcher started before the peer counts the output records, and those joined with no customer
("|-": an order processed before its customer was loaded; Kafka Streams picks records across a task's
partitions by timestamp, so it should have none).

  wall  from launching the peer to the moment the output holds one record per order (start-up and loading
        the table included, the same for both: the input is already there)
Rate = orders / wall. Rounds alternate the order (A B, B A, ...); the closing line is the median of the
per-round ratios streamlet / Kafka Streams.

Usage: .venv/bin/python bench/join.py [--customers N] [--orders M] [--rounds R] [--threads T] [--timeout S]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import JAVA_CP, LIB_PY, Proc, log, spawn  # noqa: E402

PARTITIONS = 6
COMMIT_MS = 1000
CACHE_BYTES = 10 * 1024 * 1024
Records = list[tuple[bytes, bytes, int]]  # key, value, timestamp


def join_input(customers: int, orders: int, seed: int = 12) -> tuple[Records, Records]:
    """(key, value, timestamp) of the customers, then of the orders, all timestamps recent and increasing."""
    rng = random.Random(seed)
    base = int(time.time() * 1000) - 3_600_000  # an hour ago: inside the topics' retention
    table = [(f"c{i}".encode(), f"customer-{i}".encode(), base + i) for i in range(customers)]
    start = base + customers
    stream = [(f"c{rng.randrange(customers)}".encode(), f"o{i}".encode(), start + i) for i in range(orders)]
    return table, stream


class JoinWatcher:
    """Reads the output topic from the beginning; `done` once it holds `expected` records."""

    def __init__(self, bootstrap: str, topic: str, expected: int) -> None:
        from aiokafka import AIOKafkaConsumer

        self._consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
        )
        self._expected = expected
        self.records = 0
        self.unjoined = 0  # joined with no customer

    async def start(self) -> None:
        await self._consumer.start()

    async def wait(self, timeout: float, alive: Proc) -> float | None:
        """time.monotonic() when all orders came out; None on timeout or if the peer died."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and alive.alive():
            batch = await self._consumer.getmany(timeout_ms=200, max_records=50_000)
            for records in batch.values():
                self.records += len(records)
                self.unjoined += sum(record.value.endswith(b"|-") for record in records)
            if self.records >= self._expected:
                return time.monotonic()
        return None

    async def close(self) -> None:
        await self._consumer.stop()


def launch(peer: str, bootstrap: str, app_id: str, topics: tuple[str, str, str], work: Path, threads: int) -> Proc:
    customers, orders, output = topics
    if peer == "streamlet":
        cmd = [str(LIB_PY), "-m", "streamlet.cli", "worker", "bench.peers.streamlet_join:app"]
        cmd += ["--threads", str(threads), "--state-dir", str(work / "state"), "--bootstrap-servers", bootstrap]
        cmd += ["--config", f"commit_interval_ms={COMMIT_MS}", "--config", f"statestore_cache_max_bytes={CACHE_BYTES}"]
        env = {
            "BENCH_APPLICATION_ID": app_id,
            "BENCH_CUSTOMERS_TOPIC": customers,
            "BENCH_ORDERS_TOPIC": orders,
            "BENCH_OUTPUT_TOPIC": output,
        }
        return spawn(peer, cmd, work / f"{peer}.log", env=env)
    cmd = ["java", "-Xmx2g", "-cp", JAVA_CP, "bench.StreamTableJoin", bootstrap, app_id, customers, orders, output]
    cmd += [str(work / "state"), str(threads), str(COMMIT_MS), str(CACHE_BYTES)]
    return spawn(peer, cmd, work / f"{peer}.log")


async def run_peer(
    peer: str, bootstrap: str, inputs: tuple[str, str], orders: int, tag: str, threads: int, timeout: float
) -> tuple[float | None, int, float | None]:
    """Seconds from launch until every order came out (None: they did not), how many were not joined, and the
    peer's peak RSS in MiB."""
    app_id, output = f"bench-join-{peer}-{tag}", f"bench-join-{peer}-{tag}-out"
    await common.recreate_topics(bootstrap, {output: PARTITIONS})
    watcher = JoinWatcher(bootstrap, output, orders)
    await watcher.start()
    proc = launch(peer, bootstrap, app_id, (*inputs, output), common.WORK / "join" / tag / peer, threads)
    try:
        done = await watcher.wait(timeout, proc)
        if done is None:
            log(f"{peer}: {watcher.records:,}/{orders:,} orders out; log tail:\n{proc.tail()}")
        return (None if done is None else done - proc.started), watcher.unjoined, common.peak_rss_mib(proc)
    finally:
        common.stop(proc)
        await watcher.close()
        await common.delete_topics_with_prefix(bootstrap, app_id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--customers", type=int, default=100_000)
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    if not (common.JAVA_CLASSES / "bench" / "StreamTableJoin.class").exists():
        log("bench/kafka-streams is not built: run `mvn -q -B package -DskipTests` there (bench/setup_peers.sh does)")
        return 2
    common.quiet_logs()
    table, stream = join_input(args.customers, args.orders)
    run_id = uuid.uuid4().hex[:6]
    inputs = (f"bench-join-customers-{run_id}", f"bench-join-orders-{run_id}")
    rows, ratios = [], []
    with common.broker() as bootstrap:
        asyncio.run(common.recreate_topics(bootstrap, dict.fromkeys(inputs, PARTITIONS)))
        try:
            asyncio.run(common.produce_keyed(bootstrap, inputs[0], table))
            asyncio.run(common.produce_keyed(bootstrap, inputs[1], stream))
            log(f"{len(table):,} customers in {inputs[0]}, then {len(stream):,} orders in {inputs[1]}")
            for round_no in range(1, args.rounds + 1):
                order = ["streamlet", "kafka-streams"][:: 1 if round_no % 2 else -1]
                walls: dict[str, float | None] = {}
                unjoined: dict[str, int] = {}
                rss: dict[str, float | None] = {}
                for peer in order:
                    tag = f"{run_id}r{round_no}"
                    walls[peer], unjoined[peer], rss[peer] = asyncio.run(
                        run_peer(peer, bootstrap, inputs, len(stream), tag, args.threads, args.timeout)
                    )
                    log(f"round {round_no} {peer}: {walls[peer]} ({unjoined[peer]:,} orders without a customer)")
                s, k = walls["streamlet"], walls["kafka-streams"]
                ratio = None if s is None or k is None else round(k / s, 3)  # = rate(streamlet) / rate(KS)
                if ratio is not None:
                    ratios.append(ratio)
                rows.append(
                    [
                        round_no,
                        *(None if w is None else f"{len(stream) / w:,.0f}/s ({w:.1f} s)" for w in (s, k)),
                        ratio,
                        unjoined["streamlet"],
                        unjoined["kafka-streams"],
                        rss["streamlet"],
                        rss["kafka-streams"],
                    ]
                )
        finally:
            asyncio.run(common.delete_topics_with_prefix(bootstrap, f"bench-join-customers-{run_id}"))
            asyncio.run(common.delete_topics_with_prefix(bootstrap, f"bench-join-orders-{run_id}"))
    headers = [
        "round",
        "streamlet",
        "Kafka Streams",
        "ratio",
        "unjoined (streamlet)",
        "unjoined (KS)",
        "peak RSS MiB (streamlet)",
        "peak RSS MiB (KS)",
    ]
    text = common.table(headers, rows)
    print(text)
    median = statistics.median(ratios) if ratios else None
    print(f"median ratio streamlet / Kafka Streams: {median}")
    result = {"customers": len(table), "orders": len(stream), "threads": args.threads, "rounds": rows}
    command = " ".join(["bench/join.py", *(argv if argv is not None else sys.argv[1:])])
    path = common.write_result("join", {**result, "median": median, "table": text, "command": command})
    log(f"wrote {path}")
    return 0 if len(ratios) == args.rounds else 1


if __name__ == "__main__":
    sys.exit(main())
