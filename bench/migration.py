"""Migration pause: a stateful task moves to a new client, for streamlet and Kafka Streams on one broker.

The scenario, run for each peer in turn with the same settings:
- WordCount (1 stream thread per client, record cache off so every update is output at once, commit 1 s,
  no standbys, Kafka Streams' defaults for warmups: 2 warmup replicas, acceptable recovery lag 10,000),
  `probing_rebalance_interval_ms` 60 s (Kafka Streams' minimum), on 6 partitions.
- The count store starts large: N distinct keys (default 3,000,000) are written into its changelog before
  the first client starts, so the two first clients restore them, and a new client must warm up before a
  stateful task can move to it (HATA keeps the task where it is until the warmup has caught up, then moves
  it at the next probing rebalance).
- Steady input at a fixed rate; after `--before` s a third client joins; observed for `--after` s.
- Who owns which count task, sampled every 0.5 s from the group's assignment (DescribeGroups: the owner of
  repartition partition p is the owner of task 1_p), the same way for both peers.
- Output partition p is written by task 1_p only. For each task that moved to the new client: the pause, from
  its last output before its move to its first output after it. For all tasks: the longest output gap before the
  join (baseline) and after it.
- Final counts are checked against an independent count of the input.
- Rebalances after the join: the group generations every client logs ("Successfully synced group in
  generation Generation{generationId=N ...", the same line in Kafka's consumer and in streamlet's), the highest
  at the end less the highest logged before the third client started.

Peers: `streamlet` (its default, cooperative rebalancing), `streamlet-eager` (rebalance_protocol=eager) and
`kafka-streams` (common.KAFKA_STREAMS_VERSION, cooperative). With `--rounds R` the peers run interleaved
(A B C A B C ...) and the summary gives each peer's median and worst.

The group's shape is a flag too: `--clients 4 --threads 2 --partitions 24 --guarantee exactly_once_v2` is
where eager has the most to revoke (every thread commits a transaction and suspends every task).

Usage: .venv/bin/python bench/migration.py [--keys N] [--rate LINES_PER_S] [--before S] [--after S]
       [--peers streamlet,streamlet-eager,kafka-streams] [--rounds R]
       [--clients N] [--threads T] [--partitions P] [--guarantee at_least_once|exactly_once_v2]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dataclasses import dataclass  # noqa: E402

import common  # noqa: E402
import corpus as corpus_mod  # noqa: E402
from common import JAVA_CP, LIB_PY, Proc, highest_generation, log, sample_owners, spawn  # noqa: E402
from rebalance import produce_at_rate, watch_counts  # noqa: E402
from restore import write_changelog  # noqa: E402

PROBING_MS = 60_000  # Kafka Streams refuses less
COMMIT_MS = 1_000
PEERS = ("streamlet", "streamlet-eager", "kafka-streams")


@dataclass(frozen=True)
class Shape:
    """The group before the join: `clients` clients of `threads` threads; one more client joins."""

    clients: int = 2
    threads: int = 1
    partitions: int = 6
    guarantee: str = "at_least_once"


def start_client(
    peer: str, i: int, bootstrap: str, app_id: str, topics: tuple[str, str], work: Path, shape: Shape
) -> Proc:
    input_topic, output_topic = topics
    state = str(work / f"state-{i}")
    if peer.startswith("streamlet"):
        env = {
            "WORDCOUNT_INPUT_TOPIC": input_topic,
            "WORDCOUNT_OUTPUT_TOPIC": output_topic,
            "WORDCOUNT_APPLICATION_ID": app_id,
        }
        settings = [
            f"commit_interval_ms={COMMIT_MS}",
            "statestore_cache_max_bytes=0",
            f"processing_guarantee={shape.guarantee}",
        ]
        settings.append(f"probing_rebalance_interval_ms={PROBING_MS}")
        if peer == "streamlet-eager":
            settings.append("rebalance_protocol=eager")
        cmd = [
            str(LIB_PY),
            "-m",
            "streamlet.cli",
            "worker",
            "examples.wordcount.app:app",
            "--threads",
            str(shape.threads),
        ]
        cmd += ["--state-dir", state, "--bootstrap-servers", bootstrap, "--log-level", "info"]
        for setting in settings:
            cmd += ["--config", setting]
        return spawn(f"{peer}-{i}", cmd, work / f"{peer}-{i}.log", env=env)
    cmd = ["java", "-Xmx1g", f"-Dstreams.probing.rebalance.interval.ms={PROBING_MS}", "-cp", JAVA_CP]
    cmd += ["bench.WordCount", bootstrap, app_id, input_topic, output_topic, state, str(shape.threads)]
    cmd += [str(COMMIT_MS), "0", shape.guarantee]
    return spawn(f"{peer}-{i}", cmd, work / f"{peer}-{i}.log")


async def run(
    peer: str, bootstrap: str, keys: int, rate: float, before: float, after: float, run_id: str, shape: Shape
) -> dict:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.admin import AIOKafkaAdminClient

    app_id = f"bench-mig-{run_id}-{peer}"
    input_topic, output_topic = f"{app_id}-input", f"{app_id}-output"
    changelog = f"{app_id}-counts-store-changelog"
    repartition = f"{app_id}-counts-store-repartition"
    work = common.WORK / run_id / "migration" / peer
    work.mkdir(parents=True, exist_ok=True)
    await common.recreate_topics(
        bootstrap,
        {input_topic: shape.partitions, output_topic: shape.partitions, changelog: shape.partitions},
        compact={changelog},
    )
    seconds = await write_changelog(bootstrap, changelog, keys, shape.partitions)
    log(f"{peer}: {keys:,} keys written into {changelog} in {seconds:.1f}s")
    pool, _ = corpus_mod.pool()
    lines = [pool[i * 7919 % len(pool)] for i in range(int(rate * (before + after + 120)) + 1)]
    produced: collections.Counter[str] = collections.Counter()
    arrivals: dict[int, list[float]] = {p: [] for p in range(shape.partitions)}
    latest: dict[str, int] = {}
    owners_over_time: list[tuple[float, dict[int, str]]] = []
    stop = asyncio.Event()
    procs: list[Proc] = []

    consumer = AIOKafkaConsumer(
        output_topic,
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        isolation_level="read_committed" if shape.guarantee == "exactly_once_v2" else "read_uncommitted",
    )
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await consumer.start()
    await admin.start()
    watching = asyncio.Event()

    background = [
        asyncio.create_task(watch_counts(consumer, watching, arrivals, latest)),
        asyncio.create_task(sample_owners(admin, app_id, repartition, watching, owners_over_time, peer)),
    ]
    producing: asyncio.Task[None] | None = None
    try:
        procs = [
            start_client(peer, i, bootstrap, app_id, (input_topic, output_topic), work, shape)
            for i in range(shape.clients)
        ]
        producing = asyncio.create_task(
            produce_at_rate(bootstrap, input_topic, lines, rate, stop, produced, shape.partitions)
        )
        deadline = time.monotonic() + 180
        while not all(arrivals.values()) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        if not all(arrivals.values()):
            raise RuntimeError(f"{peer}: not every task produced output within 180 s: {procs[0].tail()}")
        log(f"{peer}: {shape.clients} clients restored {keys:,} keys and produce; {before:.0f}s steady, then one joins")
        await asyncio.sleep(before)
        t_join = time.time()
        generation_at_join = highest_generation(procs)
        procs.append(start_client(peer, shape.clients, bootstrap, app_id, (input_topic, output_topic), work, shape))
        await asyncio.sleep(after)
        stop.set()
        await producing
        expected = dict(produced)
        deadline = time.monotonic() + 90
        while latest != expected and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
    finally:
        stop.set()
        for proc in procs:
            common.stop(proc)
        watching.set()
        await asyncio.gather(*background, return_exceptions=True)
        await consumer.stop()
        await admin.close()
        if producing is not None and not producing.done():
            producing.cancel()

    rebalances = highest_generation(procs) - generation_at_join
    wrong = [w for w in produced.keys() | latest.keys() if latest.get(w) != produced.get(w)]
    before_join = [o for t, o in owners_over_time if t <= t_join and len(o) == shape.partitions]
    old_clients = set(before_join[-1].values()) if before_join else set()
    per_task = []
    for p in range(shape.partitions):
        ts = arrivals[p]
        gaps_before = [b - a for a, b in zip(ts, ts[1:], strict=False) if b <= t_join]
        gaps_after = [(a, b) for a, b in zip(ts, ts[1:], strict=False) if b > t_join]
        worst = max(gaps_after, key=lambda ab: ab[1] - ab[0], default=None)
        moved_at = next((t for t, o in owners_over_time if t > t_join and o.get(p) not in (None, *old_clients)), None)
        pause = None
        if moved_at is not None:  # the output gap around the move: last output before it, first after
            last = max((a for a in ts if a <= moved_at), default=None)
            first = min((b for b in ts if b > moved_at), default=None)
            pause = round(first - last, 2) if last is not None and first is not None else None
        per_task.append(
            {
                "task": f"1_{p}",
                "baseline_max_gap_s": round(max(gaps_before, default=0), 2),
                "max_gap_after_join_s": round(worst[1] - worst[0], 2) if worst else None,
                "moved_to_new_client_s_after_join": round(moved_at - t_join, 1) if moved_at else None,
                "migration_pause_s": pause,
            }
        )
    return {
        "peer": peer,
        "app_id": app_id,
        "keys": keys,
        "rate_lines_per_s": rate,
        "words_produced": sum(produced.values()),
        "rebalances_after_join": rebalances,
        "counts_ok": not wrong,
        "wrong_examples": wrong[:8],
        "per_task": per_task,
        "logs": [str(p.log_path) for p in procs],
    }


def summary(res: dict[str, Any]) -> dict[str, Any]:
    moved = [t["migration_pause_s"] for t in res["per_task"] if t["migration_pause_s"] is not None]
    still = [t["max_gap_after_join_s"] or 0 for t in res["per_task"] if t["migration_pause_s"] is None]
    return {
        "moved_tasks": len(moved),
        "max_migration_pause_s": max(moved, default=None),
        "max_other_task_gap_s": max(still, default=None),
        "max_baseline_gap_s": max(t["baseline_max_gap_s"] for t in res["per_task"]),
    }


def distribution_table(results: list[dict[str, Any]]) -> str:
    """Per peer over its runs: median and worst of the moved tasks' pause, of the staying tasks' longest gap
    after the join, and the rebalances after the join."""
    rows = []
    for peer in dict.fromkeys(r["peer"] for r in results):
        runs = [r for r in results if r["peer"] == peer]
        moved = [r["max_migration_pause_s"] for r in runs if r["max_migration_pause_s"] is not None]
        staying = [r["max_other_task_gap_s"] for r in runs if r["max_other_task_gap_s"] is not None]
        counts = [r["rebalances_after_join"] for r in runs]
        rows.append(
            [peer, len(runs), _median(moved), max(moved, default=None), _median(staying), max(staying, default=None),
             _median(counts), max(counts, default=None), sum(r["counts_ok"] for r in runs)]
        )  # fmt: skip
    return common.table(
        ["peer", "runs", "moved pause median s", "worst", "staying gap median s", "worst", "rebalances median",
         "max", "runs with exact counts"],
        rows,
    )  # fmt: skip


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=3_000_000, help="distinct keys in the count store at start")
    parser.add_argument("--rate", type=float, default=300.0, help="input lines per second")
    parser.add_argument("--before", type=float, default=20.0, help="seconds of steady state before the join")
    parser.add_argument("--after", type=float, default=100.0, help="seconds observed after the join")
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--rounds", type=int, default=1, help="repeat the peers, interleaved")
    parser.add_argument("--clients", type=int, default=2, help="clients before the join (one more joins)")
    parser.add_argument("--threads", type=int, default=1, help="stream threads per client")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--guarantee", default="at_least_once", choices=("at_least_once", "exactly_once_v2"))
    args = parser.parse_args(argv)
    shape = Shape(args.clients, args.threads, args.partitions, args.guarantee)
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = set(peers) - set(PEERS)
    if unknown:
        parser.error(f"unknown peers {sorted(unknown)}; choose from {PEERS}")
    common.quiet_logs()
    results = []
    with common.broker() as bootstrap:
        for r in range(args.rounds):
            for peer in peers:
                run_id = time.strftime("%m%d%H%M%S") + f"r{r}"
                res = asyncio.run(run(peer, bootstrap, args.keys, args.rate, args.before, args.after, run_id, shape))
                asyncio.run(common.delete_topics_with_prefix(bootstrap, res["app_id"]))
                results.append({**res, **summary(res)})
                log(f"{peer}: {summary(res)}")
    rows = []
    for res in results:
        for t in res["per_task"]:
            rows.append(
                [res["peer"], t["task"], t["baseline_max_gap_s"], t["max_gap_after_join_s"],
                 t["moved_to_new_client_s_after_join"], t["migration_pause_s"]]
            )  # fmt: skip
    text = common.table(
        ["peer", "task", "max gap before join s", "max gap after join s", "moved to new client at s",
         "migration pause s"],
        rows,
    )  # fmt: skip
    lines = [text, ""]
    for res in results:
        lines.append(
            f"{res['peer']}: {res['moved_tasks']} stateful task(s) moved, longest migration pause "
            f"{res['max_migration_pause_s']} s, longest gap of the other tasks {res['max_other_task_gap_s']} s "
            f"(baseline {res['max_baseline_gap_s']} s); final counts "
            f"{'match' if res['counts_ok'] else 'DO NOT match'} the input ({res['words_produced']:,} words)"
        )
    lines += ["", distribution_table(results)]
    text = "\n".join(lines)
    title = (
        f"Migration pause, {shape.clients} -> {shape.clients + 1} clients x {shape.threads} thread(s), "
        f"{shape.partitions} partitions, {shape.guarantee}, {args.keys:,} keys in the count store, "
        f"{args.rate:.0f} lines/s"
    )
    print(f"\n{title}:\n{text}")
    path = common.write_result(
        "migration" if shape == Shape() else "migration-" + "-".join(map(str, vars(shape).values())),
        {"runs": results, "table": text, "title": title, "command": " ".join(["bench/migration.py", *sys.argv[1:]])},
    )
    log(f"wrote {path}")
    return 0 if all(r["counts_ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
