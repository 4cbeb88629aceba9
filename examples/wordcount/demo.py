"""The WordCount demo, end to end on a real broker (`scripts/demo` runs it).

1. Uses the broker in STREAMLET_BOOTSTRAP_SERVERS, or starts the project's local KRaft broker.
2. Creates `streams-plaintext-input` and `streams-wordcount-output` (6 partitions each).
3. Starts two worker processes (`streamlet worker examples.wordcount.app:app`, 2 stream threads each).
4. Produces real text: the license texts Debian ships in /usr/share/common-licenses, plus seed 000's
   `a b c ... z` line.
5. Reads the output topic until the latest count of every word equals an independent count of the
   input (plain Python here, not streamlet), prints the counts and the throughput, and stops everything.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from streamlet.kafka.broker import LocalBroker, cache_root
from streamlet.kafka.connect import Cluster
from streamlet.kafka.topics import InternalTopicManager, TopicSpec

ROOT = Path(__file__).resolve().parents[2]
INPUT, OUTPUT, APP_ID = "streams-plaintext-input", "streams-wordcount-output", "streams-wordcount"
SEED_LINE = "a b c d e f g h i j k l m n o p q r s t u v w x y z"
TEXT_DIR = Path("/usr/share/common-licenses")


def input_lines(repeat: int) -> list[str]:
    files = sorted(p for p in TEXT_DIR.iterdir() if p.is_file() and not p.is_symlink()) if TEXT_DIR.is_dir() else []
    if not files:
        sys.exit(f"no text found in {TEXT_DIR}; pass --text FILE")
    lines = [line for f in files for line in f.read_text(encoding="utf-8", errors="replace").splitlines()]
    return lines * repeat + [SEED_LINE]


def count_words(lines: list[str]) -> dict[str, int]:
    """Independent of streamlet: Java's `toLowerCase().split("\\W+")` (ASCII \\W; no match = the whole
    line, so an empty line counts the word ""; trailing empty strings dropped)."""
    counts: collections.Counter[str] = collections.Counter()
    for line in lines:
        lowered = line.lower()
        if re.search(r"[^A-Za-z0-9_]", lowered) is None:
            counts[lowered] += 1
            continue
        words = re.split(r"[^A-Za-z0-9_]+", lowered)
        while words and words[-1] == "":
            words.pop()
        counts.update(words)
    return dict(counts)


async def recreate_topics(bootstrap: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        demo_topics = {INPUT, OUTPUT, f"{APP_ID}-counts-store-repartition", f"{APP_ID}-counts-store-changelog"}
        existing = [t for t in await admin.list_topics() if t in demo_topics]
        if existing:
            print(f"deleting the previous demo's topics {sorted(existing)}")
            await admin.delete_topics(existing)
            await asyncio.sleep(2)
    finally:
        await admin.close()
    manager = InternalTopicManager(Cluster(bootstrap))
    await manager.start()
    try:
        await manager.ensure([TopicSpec(INPUT, 6), TopicSpec(OUTPUT, 6)])
    finally:
        await manager.close()


async def produce(bootstrap: str, lines: list[str]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=10, acks="all")
    await producer.start()
    try:
        for line in lines:
            await producer.send(INPUT, value=line.encode())
        await producer.flush()
    finally:
        await producer.stop()


async def await_counts(bootstrap: str, expected: dict[str, int], timeout: float) -> dict[str, int]:
    consumer = AIOKafkaConsumer(OUTPUT, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest")
    await consumer.start()
    latest: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            for records in batch.values():
                for r in records:
                    latest[r.key.decode()] = struct.unpack(">q", r.value)[0]
            if latest == expected:
                return latest
    finally:
        await consumer.stop()
    return latest


def start_worker(index: int, bootstrap: str, state_root: Path, threads: int) -> subprocess.Popen[bytes]:
    log = open(state_root / f"worker-{index}.log", "wb")  # noqa: SIM115 (owned by the process)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STREAMLET_BOOTSTRAP_SERVERS": bootstrap}
    cmd = [
        sys.executable,
        "-m",
        "streamlet.cli",
        "worker",
        "examples.wordcount.app:app",
        "--threads",
        str(threads),
        "--state-dir",
        str(state_root / f"worker-{index}"),
        "--bootstrap-servers",
        bootstrap,
    ]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="produce the text this many times")
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--top", type=int, default=25, help="how many of the most frequent words to print")
    args = parser.parse_args(argv)

    bootstrap = os.environ.get("STREAMLET_BOOTSTRAP_SERVERS")
    broker = None
    if not bootstrap:
        broker = LocalBroker(cache_root() / "demo-broker")
        broker.wipe()
        print("starting a local Kafka broker (the first run downloads it with Maven) ...")
        bootstrap = broker.start().bootstrap_servers
    print(f"broker: {bootstrap}")
    state_root = Path(tempfile.mkdtemp(prefix="streamlet-demo-"))
    workers: list[subprocess.Popen[bytes]] = []
    try:
        asyncio.run(recreate_topics(bootstrap))
        lines = input_lines(args.repeat)
        expected = count_words(lines)
        total_words = sum(expected.values())
        workers = [start_worker(i, bootstrap, state_root, args.threads) for i in range(args.workers)]
        print(f"started {args.workers} workers x {args.threads} threads (logs in {state_root})")
        began = time.monotonic()
        asyncio.run(produce(bootstrap, lines))
        print(f"produced {len(lines)} lines ({total_words} words) to {INPUT}")
        counts = asyncio.run(await_counts(bootstrap, expected, args.timeout))
        elapsed = time.monotonic() - began
        for i, worker in enumerate(workers):
            if worker.poll() is not None:
                print(f"worker {i} exited with code {worker.returncode}; see {state_root}/worker-{i}.log")
        if counts != expected:
            wrong = sorted(w for w in expected.keys() | counts.keys() if counts.get(w) != expected.get(w))
            print(f"FAILED: {len(wrong)} words differ from the independent count, e.g. {wrong[:10]}")
            return 1
        print(f"\nfinal counts of {len(counts)} words match the independent count of the input")
        for word, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[: args.top]:
            print(f"  {word!r:>16} {count}")
        print(f"  {'a .. z':>16} {[counts[c] for c in 'abcdefghijklmnopqrstuvwxyz']}")
        print(
            f"\n{total_words} words counted end to end in {elapsed:.1f}s = {total_words / elapsed:.0f} records/s "
            "(from the first produced line to the last correct count; includes group start-up)"
        )
        return 0
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
        for worker in workers:
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
        if broker is not None:
            broker.stop()
            print("broker stopped")


if __name__ == "__main__":
    sys.exit(main())
