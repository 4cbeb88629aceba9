"""Recovery after a kill -9 under exactly-once: wipe-and-restore (before) vs transactional stores (KIP-892).

One `streamlet worker` (WordCount, 1 stream thread, `exactly_once_v2`, static membership so that a restart takes
its tasks back at once) counts a backlog of N distinct words, so its count store grows to N keys. When its count
task has committed `--kill-at` of them it is killed with SIGKILL, then restarted on the same state dir at once.
Measured from the restart:

* time to first processed record: until the count task's committed offsets (on the repartition topic it reads)
  move past where they were at the kill (under exactly-once nothing is visible before its transaction commits,
  so this is the first record the count store processed after the restart, as any reader sees it);
* records restored: the restorations the restarted worker logs (offset spans of its changelog partitions);
* time until caught up: until the whole backlog is committed, input and count task.

Peers, interleaved per round (A B A B ...): `before` = the worker of git revision `--baseline` (default 84f14b5,
the last commit before transactional stores: a dirty close under exactly-once wipes the task's stores, restored
in full), `after` = this tree. The Kafka Streams peers (4.1.1 wipe, 4.4.0 transactional) are not run here yet.

Usage: .venv/bin/python bench/recovery.py [--keys N] [--partitions P] [--kill-at F] [--rounds R] [--baseline REV]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import LIB_PY, ROOT, WORK, log, spawn  # noqa: E402

RESTORE_START = re.compile(r"restoring store \S+ from \S+ offsets (\d+)\.\.(\d+) ")
STAMP = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) "
FIRST_LINE = re.compile(STAMP, re.MULTILINE)
COUNT_RUNNING = re.compile(STAMP + r".*task 1_\d+ restored, now RUNNING", re.MULTILINE)


def stamp(text: str) -> float:
    """A log line's time (local time, as the worker logs it) in epoch seconds."""
    return time.mktime(time.strptime(text[:19], "%Y-%m-%d %H:%M:%S")) + int(text[20:]) / 1000


async def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets on `topic` per partition (0 before its first commit)."""
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.structs import TopicPartition

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(
            group, partitions=[TopicPartition(topic, p) for p in range(partitions)]
        )
        return {tp.partition: max(0, meta.offset) for tp, meta in offsets.items()}
    finally:
        await admin.close()


async def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        ends = await consumer.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
        return {tp.partition: offset for tp, offset in ends.items()}
    finally:
        await consumer.stop()


async def wait_for(check: Any, timeout: float) -> float:
    """Seconds until `await check()` is true (errors while the group forms count as false); raises after `timeout`."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        with contextlib.suppress(Exception):
            if await check():
                return time.monotonic() - began
        await asyncio.sleep(0.05)
    raise TimeoutError(f"not reached in {timeout:.0f} s")


def start_worker(tree: Path, name: str, bootstrap: str, app_id: str, source: str, sink: str, run_dir: Path) -> Any:
    cmd = [
        str(LIB_PY),
        "-m",
        "streamlet.cli",
        "worker",
        "examples.wordcount.app:app",
        "--threads",
        "1",
        "--state-dir",
        str(run_dir / "state"),
        "--bootstrap-servers",
        bootstrap,
    ]
    for key, value in {
        "processing_guarantee": "exactly_once_v2",
        "group_instance_id": "recovery-worker",
        "session_timeout_ms": "10000",
        "metrics_interval_ms": "0",
        "assignment_history": "false",
    }.items():
        cmd += ["--config", f"{key}={value}"]
    env = {
        "PYTHONPATH": str(tree),
        "WORDCOUNT_INPUT_TOPIC": source,
        "WORDCOUNT_OUTPUT_TOPIC": sink,
        "WORDCOUNT_APPLICATION_ID": app_id,
    }
    return spawn(name, cmd, run_dir / f"{name}.log", env=env, cwd=tree)


async def run_peer(
    bootstrap: str, peer: str, tree: Path, keys: int, partitions: int, kill_at: float, run_id: str, timeout: float
) -> dict[str, Any]:
    app_id = f"bench-recovery-{run_id}-{peer}"
    source, sink = f"{app_id}-in", f"{app_id}-out"
    run_dir = WORK / "recovery" / app_id
    shutil.rmtree(run_dir, ignore_errors=True)
    await common.recreate_topics(bootstrap, {source: partitions, sink: partitions})
    await common.produce_lines(bootstrap, source, [f"w{i:08d}" for i in range(keys)], partitions)
    # the count store's task reads the repartition topic: its committed offsets are what the store has counted
    counted = f"{app_id}-counts-store-repartition"

    async def counted_total() -> int:
        return sum((await committed(bootstrap, app_id, counted, partitions)).values())

    async def caught_up() -> bool:
        if sum((await committed(bootstrap, app_id, source, partitions)).values()) < keys:
            return False
        ends = await end_offsets(bootstrap, counted, partitions)
        done = await committed(bootstrap, app_id, counted, partitions)
        return all(done.get(p, 0) >= end - 1 for p, end in ends.items())  # the last one: a commit marker

    first = start_worker(tree, "first", bootstrap, app_id, source, sink, run_dir)
    try:
        kill_when = int(keys * kill_at)

        async def loaded() -> bool:
            return await counted_total() >= kill_when

        await wait_for(loaded, timeout)
        os.killpg(first.popen.pid, signal.SIGKILL)
        first.popen.wait(timeout=30)
        at_kill = await counted_total()
        changelog = await common.topic_records(bootstrap, f"{app_id}-counts-store-changelog")
        restarted_at = time.time()
        second = start_worker(tree, "second", bootstrap, app_id, source, sink, run_dir)

        async def moved_on() -> bool:
            return await counted_total() > at_kill

        try:
            to_first = await wait_for(moved_on, timeout)
            to_caught_up = await wait_for(caught_up, timeout)
        finally:
            common.stop(second)
        text = second.tail(100_000)
        restored = sum(int(end) - int(start) for start, end in RESTORE_START.findall(text))
        first_line, running = FIRST_LINE.search(text), COUNT_RUNNING.findall(text)
        return {
            "peer": peer,
            "status": "ok",
            "counted_at_kill": at_kill,
            "changelog_records_at_kill": sum(changelog.values()),
            "first_processed_s": round(to_first, 2),
            "caught_up_s": round(to_first + to_caught_up, 2),  # from the restart, as first_processed_s
            "records_restored": restored,
            # where the time to the first processed record goes: the process starting, then the restore
            "process_started_s": round(stamp(first_line.group(1)) - restarted_at, 2) if first_line else None,
            "count_task_running_s": round(max(map(stamp, running)) - restarted_at, 2) if running else None,
        }
    except Exception as exc:
        log(f"{peer}: {exc!r}")
        return {"peer": peer, "status": f"failed: {exc!r}"}
    finally:
        common.stop(first)
        await common.delete_topics_with_prefix(bootstrap, app_id)


def render(results: list[dict[str, Any]]) -> str:
    rows = []
    for peer in ("before", "after"):
        ok = [r for r in results if r["peer"] == peer and r["status"] == "ok"]
        if not ok:
            rows.append([peer, "failed", "", "", "", ""])
            continue

        def med(field: str, ok: list[dict[str, Any]] = ok) -> float:
            return statistics.median(r[field] for r in ok)

        rows.append(
            [
                peer,
                len(ok),
                f"{med('changelog_records_at_kill'):,.0f}",
                f"{med('records_restored'):,.0f}",
                f"{med('first_processed_s'):.2f}",
                f"{med('caught_up_s'):.2f}",
            ]
        )
    return common.table(
        ["peer", "rounds", "changelog at kill", "records restored", "first processed (s)", "caught up (s)"], rows
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=5_000_000)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--kill-at", type=float, default=0.6, help="fraction of the input committed at the kill")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--baseline", default="84f14b5", help="git revision of the 'before' worker (wipes on a crash)")
    args = parser.parse_args(argv)
    common.quiet_logs()
    sha, baseline = common.baseline_worktree(args.baseline)
    peers = {"before": baseline, "after": ROOT}
    results: list[dict[str, Any]] = []
    with common.broker() as bootstrap:
        for round_no in range(args.rounds):
            run_id = time.strftime("%m%d%H%M%S") + f"r{round_no}"
            for peer, tree in peers.items():  # interleaved: before, after, before, after, ...
                row = asyncio.run(
                    run_peer(bootstrap, peer, tree, args.keys, args.partitions, args.kill_at, run_id, args.timeout)
                )
                log(f"round {round_no + 1} {peer}: {row}")
                results.append({**row, "round": round_no + 1})
    text = render(results)
    print(f"\nRecovery of a {args.keys:,}-key count store after a kill -9 under exactly_once_v2:\n{text}")
    path = common.write_result(
        "recovery",
        {
            "keys": args.keys,
            "partitions": args.partitions,
            "kill_at": args.kill_at,
            "rounds": args.rounds,
            "baseline": sha,
            "results": results,
            "table": text,
            "command": " ".join(["bench/recovery.py", *sys.argv[1:]]),
        },
    )
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
