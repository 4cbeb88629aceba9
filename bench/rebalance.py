"""Rebalance pause: WordCount on 2 streamlet clients under steady input, then a third client joins.

- Input: `bench-rebal-<run>-input` (6 partitions), a bounded-rate producer (default 300 lines/s, about
  2,700 words/s, well under what two clients sustain) for the whole run.
- Two workers (`streamlet worker`, 1 stream thread each, record cache off so every update is output at
  once, commit 1 s), warm-up, then a third worker starts at T (default 25 s after the first output).
- The output topic has 6 partitions and is partitioned like the repartition topic, so output partition p
  is written by count task 1_p: the pause of task 1_p (and of everything upstream of it) is the longest
  gap between two output arrivals on partition p after T, next to the longest gap before T (the baseline).
- The new client: from its launch to its first non-empty active assignment and to its first task
  RUNNING, read from its log ("assigned active ..." / "task ... restored, now RUNNING").
- At the end the latest count of every word is checked against an independent count of what was
  produced.
- Who owns each count task is sampled from the group every 0.5 s (DescribeGroups, as `migration.py`): a task
  whose owner never changed after the join stays, the others moved (with this small state the new client is
  caught up at once, so some count tasks move in the join's own rounds).
- `--protocols cooperative,eager --rounds R` runs the protocols interleaved (A B A B ...) and reports, per
  protocol, the longest gap of the tasks that stay and of those that move (median and worst over the runs),
  and the rebalances after the join, counted from the group generations the clients log.

Usage: .venv/bin/python bench/rebalance.py [--rate LINES_PER_S] [--before S] [--after S]
       [--protocols cooperative,eager] [--rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime as dt
import re
import statistics
import struct
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import corpus as corpus_mod  # noqa: E402
from common import LIB_PY, Proc, highest_generation, log, sample_owners, spawn  # noqa: E402

PARTITIONS = 6


PROTOCOLS = ("cooperative", "eager")


def start_worker(
    i: int, bootstrap: str, app_id: str, input_topic: str, output_topic: str, work: Path, protocol: str = "cooperative"
) -> Proc:
    env = {
        "WORDCOUNT_INPUT_TOPIC": input_topic,
        "WORDCOUNT_OUTPUT_TOPIC": output_topic,
        "WORDCOUNT_APPLICATION_ID": app_id,
    }
    return spawn(
        f"worker-{i}",
        [
            str(LIB_PY),
            "-m",
            "streamlet.cli",
            "worker",
            "examples.wordcount.app:app",
            "--threads",
            "1",
            "--state-dir",
            str(work / f"state-{i}"),
            "--bootstrap-servers",
            bootstrap,
            "--log-level",
            "info",
            "--config",
            "commit_interval_ms=1000",
            "--config",
            "statestore_cache_max_bytes=0",
            "--config",
            f"rebalance_protocol={protocol}",
        ],
        work / f"worker-{i}.log",
        env=env,
    )


def _log_events(path: Path) -> list[tuple[float, str]]:
    events = []
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \w+ \S+ (.*)", line)
        if m:
            t = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            events.append((t, m.group(2)))
    return events


async def produce_at_rate(
    bootstrap: str,
    topic: str,
    lines: list[str],
    rate: float,
    stop: asyncio.Event,
    produced: collections.Counter[str],
    partitions: int = PARTITIONS,
) -> None:
    """Send `lines` at `rate` lines/s round-robin over the partitions until `stop`, counting their words."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        began, i = time.monotonic(), 0
        while not stop.is_set() and i < len(lines):
            due = int((time.monotonic() - began) * rate)
            while i < min(due, len(lines)):
                await producer.send(topic, lines[i].encode(), partition=i % partitions)
                produced.update(corpus_mod.java_split(lines[i]))
                i += 1
            await asyncio.sleep(0.01)
        await producer.flush()
    finally:
        await producer.stop()


async def watch_counts(
    consumer: Any, stop: asyncio.Event, arrivals: dict[int, list[float]], latest: dict[str, int]
) -> None:
    """Until `stop`: the arrival times of output per partition, and each word's latest count."""
    while not stop.is_set():
        batch = await consumer.getmany(timeout_ms=50)
        now = time.time()
        for tp, records in batch.items():
            if records:
                arrivals[tp.partition].append(now)
            for r in records:
                latest[r.key.decode()] = struct.unpack(">q", r.value)[0]


async def run(
    bootstrap: str, rate: float, before: float, after: float, run_id: str, protocol: str = "cooperative"
) -> dict[str, Any]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.admin import AIOKafkaAdminClient

    app_id = f"bench-rebal-{run_id}"
    input_topic, output_topic = f"{app_id}-input", f"{app_id}-output"
    work = common.WORK / run_id / "rebalance"
    work.mkdir(parents=True, exist_ok=True)
    await common.recreate_topics(bootstrap, {input_topic: PARTITIONS, output_topic: PARTITIONS})
    pool, _ = corpus_mod.pool()
    lines = [pool[i * 7919 % len(pool)] for i in range(int(rate * (before + after + 60)) + 1)]
    produced: collections.Counter[str] = collections.Counter()
    arrivals: dict[int, list[float]] = {p: [] for p in range(PARTITIONS)}
    latest: dict[str, int] = {}
    stop_producing = asyncio.Event()
    procs: list[Proc] = []

    consumer = AIOKafkaConsumer(output_topic, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest")
    await consumer.start()
    stop_consuming = asyncio.Event()

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    owners_over_time: list[tuple[float, dict[int, str]]] = []
    repartition = f"{app_id}-counts-store-repartition"

    cons_task = asyncio.create_task(watch_counts(consumer, stop_consuming, arrivals, latest))
    owners_task = asyncio.create_task(
        sample_owners(admin, app_id, repartition, stop_consuming, owners_over_time, protocol)
    )
    prod_task = None
    try:
        procs = [start_worker(i, bootstrap, app_id, input_topic, output_topic, work, protocol) for i in range(2)]
        prod_task = asyncio.create_task(produce_at_rate(bootstrap, input_topic, lines, rate, stop_producing, produced))
        deadline = time.monotonic() + 120
        while not any(arrivals.values()) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        if not any(arrivals.values()):
            raise RuntimeError("no output from the two workers within 120 s: " + procs[0].tail())
        log(f"two workers produce output; steady state for {before:.0f}s, then a third worker joins")
        await asyncio.sleep(before)
        t_join = time.time()
        generation_at_join = highest_generation(procs)
        procs.append(start_worker(2, bootstrap, app_id, input_topic, output_topic, work, protocol))
        await asyncio.sleep(after)
        stop_producing.set()
        await prod_task
        # drain: wait until the counts match what was produced (bounded)
        expected = dict(produced)
        deadline = time.monotonic() + 90
        while latest != expected and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        t_end = time.time()
    finally:
        stop_producing.set()
        for p in procs:
            common.stop(p)
        stop_consuming.set()
        await cons_task
        await owners_task
        await consumer.stop()
        await admin.close()
        if prod_task is not None and not prod_task.done():
            prod_task.cancel()

    complete = [(t, o) for t, o in owners_over_time if len(o) == PARTITIONS]
    at_join = next((o for t, o in reversed(complete) if t <= t_join), {})
    per_task = []
    for p in range(PARTITIONS):
        stayed = bool(at_join) and all(o.get(p) == at_join.get(p) for t, o in complete if t > t_join)
        ts = arrivals[p]
        pre = [b - a for a, b in zip(ts, ts[1:], strict=False) if b <= t_join]
        post_pairs = [(a, b) for a, b in zip(ts, ts[1:], strict=False) if b > t_join]
        worst = max(post_pairs, key=lambda ab: ab[1] - ab[0], default=None)
        per_task.append(
            {
                "task": f"1_{p}",
                "baseline_max_gap_s": round(max(pre, default=0), 2),
                "max_gap_after_join_s": round(worst[1] - worst[0], 2) if worst else None,
                "gap_starts_after_join_s": round(worst[0] - t_join, 2) if worst else None,
                "stayed": stayed,
            }
        )
    events = _log_events(procs[2].log_path)
    assigned = next(
        (t for t, msg in events if "assigned active" in msg and not re.search(r"assigned active \[\]", msg)), None
    )
    running = next((t for t, msg in events if "now RUNNING" in msg), None)
    launched_wall = t_join
    last = [msg for _, msg in events if "assigned active" in msg]
    m = re.search(r"assigned active \[(.*?)\] standby \[(.*?)\]", last[-1]) if last else None
    new_client = {
        "first_active_assignment_s": round(assigned - launched_wall, 2) if assigned else None,
        "first_stateful_task_running_s": round(running - launched_wall, 2) if running else None,
        "final_active": m.group(1).replace("'", "") if m else "",
        "final_standby": m.group(2).replace("'", "") if m else "",
        "assignments": last[:6],
    }
    wrong = [w for w in produced.keys() | latest.keys() if latest.get(w) != produced.get(w)]
    return {
        "app_id": app_id,
        "protocol": protocol,
        "rebalances_after_join": highest_generation(procs) - generation_at_join,
        "rate_lines_per_s": rate,
        "before_s": before,
        "after_s": after,
        "words_produced": sum(produced.values()),
        "counts_ok": not wrong,
        "wrong_examples": wrong[:8],
        "per_task": per_task,
        "new_client": new_client,
        "drain_s": round(t_end - t_join - after, 1),
        "worker_logs": [str(p.log_path) for p in procs],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=300.0, help="input lines per second")
    parser.add_argument("--before", type=float, default=25.0, help="seconds of steady state before the join")
    parser.add_argument("--after", type=float, default=45.0, help="seconds observed after the join")
    parser.add_argument("--protocols", default="cooperative", help="comma list of rebalance protocols, interleaved")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]
    if set(protocols) - set(PROTOCOLS):
        parser.error(f"unknown protocols {sorted(set(protocols) - set(PROTOCOLS))}; choose from {PROTOCOLS}")
    common.quiet_logs()
    results = []
    with common.broker() as bootstrap:
        for r in range(args.rounds):
            for protocol in protocols:
                run_id = time.strftime("%m%d%H%M%S") + f"r{r}"
                res = asyncio.run(run(bootstrap, args.rate, args.before, args.after, run_id, protocol))
                asyncio.run(common.delete_topics_with_prefix(bootstrap, f"bench-rebal-{run_id}"))
                results.append(res)
                log(f"{protocol}: {_run_line(res)}")
    text = "\n\n".join(_run_text(res) for res in results) + "\n\n" + _distribution(results)
    print(f"\nRebalance pause, streamlet, 2 -> 3 clients at {args.rate:.0f} lines/s:\n{text}")
    path = common.write_result(
        "rebalance", {"runs": results, "table": text, "command": " ".join(["bench/rebalance.py", *sys.argv[1:]])}
    )
    log(f"wrote {path}")
    return 0 if all(r["counts_ok"] for r in results) else 1


def _staying_gap(res: dict[str, Any]) -> float | None:
    """The longest gap after the join of a task that kept its owner (None: every task moved)."""
    return max((t["max_gap_after_join_s"] or 0 for t in res["per_task"] if t["stayed"]), default=None)


def _moved_gap(res: dict[str, Any]) -> float | None:
    return max((t["max_gap_after_join_s"] or 0 for t in res["per_task"] if not t["stayed"]), default=None)


def _run_line(res: dict[str, Any]) -> str:
    return (
        f"longest gap after the join of a task that stayed {_staying_gap(res)} s, of one that moved "
        f"{_moved_gap(res)} s (baseline "
        f"{max(t['baseline_max_gap_s'] for t in res['per_task'])} s), {res['rebalances_after_join']} rebalances, "
        f"counts {'match' if res['counts_ok'] else 'DO NOT match'}"
    )


def _run_text(res: dict[str, Any]) -> str:
    rows = [
        [t["task"], "stayed" if t["stayed"] else "moved", t["baseline_max_gap_s"], t["max_gap_after_join_s"],
         t["gap_starts_after_join_s"]]
        for t in res["per_task"]
    ]  # fmt: skip
    text = f"{res['protocol']}:\n" + common.table(
        ["task (output partition)", "owner", "max gap before join s", "max gap after join s", "gap began s after join"],
        rows,
    )
    nc = res["new_client"]
    running = nc["first_stateful_task_running_s"]
    return text + (
        f"\nnew client: active tasks [{nc['final_active']}] {nc['first_active_assignment_s']} s after its "
        f"launch (processing from then), standby/warm-up [{nc['final_standby']}]; a stateful task restored and "
        f"RUNNING on it: {f'{running} s' if running else 'none within the window'} (stateful tasks may move "
        f"after warm-up at the next probing rebalance, probing_rebalance_interval_ms default 600 s). "
        f"{res['rebalances_after_join']} rebalances after the join. Final counts "
        f"{'match' if res['counts_ok'] else 'DO NOT match'} the input ({res['words_produced']:,} words)."
    )


def _distribution(results: list[dict[str, Any]]) -> str:
    rows = []
    for protocol in dict.fromkeys(r["protocol"] for r in results):
        runs = [r for r in results if r["protocol"] == protocol]
        staying = [g for g in map(_staying_gap, runs) if g is not None]
        moved = [g for g in map(_moved_gap, runs) if g is not None]
        counts = [r["rebalances_after_join"] for r in runs]
        rows.append(
            [protocol, len(runs), _median(staying), max(staying, default=None), _median(moved),
             max(moved, default=None), statistics.median(counts), max(counts), sum(r["counts_ok"] for r in runs)]
        )  # fmt: skip
    return common.table(
        ["protocol", "runs", "staying tasks' longest gap median s", "worst s", "moved tasks' longest gap median s",
         "worst s", "rebalances median", "max", "runs with exact counts"],
        rows,
    )  # fmt: skip


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


if __name__ == "__main__":
    sys.exit(main())
