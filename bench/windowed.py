"""Windowed count throughput: streamlet vs Kafka Streams on the same input, in interleaved rounds.

One broker, one input loaded once: `--records` records over `--keys` keys, their timestamps in order over
`--minutes` minutes of event time (6 partitions). Each peer counts them per key in tumbling 1-minute windows
with 10 s grace (bench/peers/streamlet_windowed.py and bench/kafka-streams' WindowedCount.java, node for
node; 10 MiB cache, 1 s commits, one process with `--threads` threads) and writes every update with
TimeWindowedSerde keys. Each run has a fresh application id and output topic; a watcher started before the
peer reads the output and keeps each window's latest count.

  wall  from launching the peer to the moment every window's latest count equals the input's (start-up
        included, the same for both: the input is already there)
Rate = records / wall. Rounds alternate the order (A B, B A, ...); the closing line is the median of the
per-round ratios streamlet / Kafka Streams.

Usage: .venv/bin/python bench/windowed.py [--records N] [--keys K] [--minutes M] [--rounds R] [--timeout S]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import random
import statistics
import struct
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import JAVA_CP, LIB_PY, Proc, log, spawn  # noqa: E402

PARTITIONS = 6
MINUTE = 60_000
COMMIT_MS = 1000
CACHE_BYTES = 10 * 1024 * 1024
Window = tuple[bytes, int]


def windowed_input(records: int, keys: int, minutes: int, seed: int = 7) -> list[tuple[bytes, int]]:
    """(key, timestamp) in timestamp order, spread evenly over the minutes."""
    rng = random.Random(seed)
    base = (int(time.time() * 1000) // MINUTE - minutes - 5) * MINUTE  # recent: inside the topic's retention
    span = minutes * MINUTE
    return [(f"user-{rng.randrange(keys)}".encode(), base + i * span // records) for i in range(records)]


class WindowWatcher:
    """Reads the output topic from the beginning; `done` once every window's latest count is the expected one."""

    def __init__(self, bootstrap: str, topic: str, expected: dict[Window, int]) -> None:
        from aiokafka import AIOKafkaConsumer

        self._consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
        )
        self._expected = expected
        self._latest: dict[Window, int] = {}
        self.matched = 0
        self.records = 0

    async def start(self) -> None:
        await self._consumer.start()

    async def wait(self, timeout: float, alive: Proc) -> float | None:
        """time.monotonic() when all windows matched; None on timeout or if the peer died."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and alive.alive():
            batch = await self._consumer.getmany(timeout_ms=200, max_records=50_000)
            for records in batch.values():
                for record in records:
                    self._apply((record.key[:-8], struct.unpack(">q", record.key[-8:])[0]), record.value)
            if self.matched == len(self._expected):
                return time.monotonic()
        return None

    def _apply(self, window: Window, value: bytes) -> None:
        self.records += 1
        expected = self._expected.get(window)
        before = self._latest.get(window) == expected
        count = self._latest[window] = struct.unpack(">q", value)[0]
        self.matched += (count == expected) - before

    async def close(self) -> None:
        await self._consumer.stop()


def launch(peer: str, bootstrap: str, app_id: str, source: str, output: str, work: Path, threads: int) -> Proc:
    if peer == "streamlet":
        cmd = [str(LIB_PY), "-m", "streamlet.cli", "worker", "bench.peers.streamlet_windowed:app"]
        cmd += ["--threads", str(threads), "--state-dir", str(work / "state"), "--bootstrap-servers", bootstrap]
        cmd += ["--config", f"commit_interval_ms={COMMIT_MS}", "--config", f"statestore_cache_max_bytes={CACHE_BYTES}"]
        env = {"BENCH_APPLICATION_ID": app_id, "BENCH_INPUT_TOPIC": source, "BENCH_OUTPUT_TOPIC": output}
        return spawn(peer, cmd, work / f"{peer}.log", env=env)
    cmd = ["java", "-Xmx2g", "-cp", JAVA_CP, "bench.WindowedCount", bootstrap, app_id, source, output]
    cmd += [str(work / "state"), str(threads), str(COMMIT_MS), str(CACHE_BYTES)]
    return spawn(peer, cmd, work / f"{peer}.log")


async def run_peer(
    peer: str, bootstrap: str, source: str, expected: dict[Window, int], tag: str, threads: int, timeout: float
) -> tuple[float | None, float | None]:
    """Seconds from launch until every window matched (None: it did not), and the peer's peak RSS in MiB."""
    app_id, output = f"bench-windowed-{peer}-{tag}", f"bench-windowed-{peer}-{tag}-out"
    await common.recreate_topics(bootstrap, {output: PARTITIONS})
    watcher = WindowWatcher(bootstrap, output, expected)
    await watcher.start()
    proc = launch(peer, bootstrap, app_id, source, output, common.WORK / "windowed" / tag / peer, threads)
    try:
        done = await watcher.wait(timeout, proc)
        if done is None:
            log(f"{peer}: {watcher.matched}/{len(expected)} windows matched; log tail:\n{proc.tail()}")
        return (None if done is None else done - proc.started), common.peak_rss_mib(proc)
    finally:
        common.stop(proc)
        await watcher.close()
        await common.delete_topics_with_prefix(bootstrap, app_id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--minutes", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    if not (common.JAVA_CLASSES / "bench" / "WindowedCount.class").exists():
        log("bench/kafka-streams is not built: run `mvn -q -B package -DskipTests` there (bench/setup_peers.sh does)")
        return 2
    common.quiet_logs()
    records = windowed_input(args.records, args.keys, args.minutes)
    expected = dict(collections.Counter((key, ts // MINUTE * MINUTE) for key, ts in records))
    run_id = uuid.uuid4().hex[:6]
    source = f"bench-windowed-input-{run_id}"
    rows, ratios = [], []
    with common.broker() as bootstrap:
        asyncio.run(common.recreate_topics(bootstrap, {source: PARTITIONS}))
        try:
            asyncio.run(common.produce_keyed(bootstrap, source, [(key, b"x", ts) for key, ts in records]))
            log(f"{len(records):,} records over {len(expected):,} windows in {source}")
            for round_no in range(1, args.rounds + 1):
                order = ["streamlet", "kafka-streams"][:: 1 if round_no % 2 else -1]
                walls: dict[str, float | None] = {}
                rss: dict[str, float | None] = {}
                for peer in order:
                    tag = f"{run_id}r{round_no}"
                    walls[peer], rss[peer] = asyncio.run(
                        run_peer(peer, bootstrap, source, expected, tag, args.threads, args.timeout)
                    )
                    log(f"round {round_no} {peer}: {walls[peer]}")
                s, k = walls["streamlet"], walls["kafka-streams"]
                ratio = None if s is None or k is None else round(k / s, 3)  # = rate(streamlet) / rate(KS)
                if ratio is not None:
                    ratios.append(ratio)
                rows.append(
                    [
                        round_no,
                        *(None if w is None else f"{len(records) / w:,.0f}/s ({w:.1f} s)" for w in (s, k)),
                        ratio,
                        rss["streamlet"],
                        rss["kafka-streams"],
                    ]
                )
        finally:
            asyncio.run(common.delete_topics_with_prefix(bootstrap, source))
    headers = ["round", "streamlet", "Kafka Streams", "ratio", "peak RSS MiB (streamlet)", "peak RSS MiB (KS)"]
    table = common.table(headers, rows)
    print(table)
    median = statistics.median(ratios) if ratios else None
    print(f"median ratio streamlet / Kafka Streams: {median}")
    path = common.write_result(
        "windowed",
        {
            "records": len(records),
            "windows": len(expected),
            "threads": args.threads,
            "rounds": rows,
            "median": median,
            "table": table,
            "command": " ".join(["bench/windowed.py", *(argv if argv is not None else sys.argv[1:])]),
        },
    )
    log(f"wrote {path}")
    return 0 if len(ratios) == args.rounds else 1


if __name__ == "__main__":
    sys.exit(main())
