"""Recovery after a kill -9 under exactly-once: wipe-and-restore vs transactional stores (KIP-892).

One WordCount instance (1 stream thread, `exactly_once_v2`, commit interval 1 s as examples/wordcount/app.py
sets it, a 10 MiB cache, both peers' default; static membership so that a restart takes its tasks back at once)
counts a backlog of N distinct words, so its count store grows to N keys. When its count task has committed
`--kill-at` of them it is killed with SIGKILL, then restarted on the same state dir at once. Measured from the
restart, the same way for every peer:

* time to first processed record: until the count task's committed offsets (on the repartition topic it reads)
  move past where they were at the kill (under exactly-once nothing is visible before its transaction commits,
  so this is the first record the count store processed after the restart, as any reader sees it);
* records restored: the totals the restarted instance's restore listener reports at on_restore_end (streamlet
  logs them; the Java peer prints them from a `StateRestoreListener`), and the offset spans it announced at
  on_restore_start (span = changelog end - store offset, commit markers and aborted records included);
* time until caught up: until the whole backlog is committed, input and count task.

The records since the last commit, for KIP-892's goal (restore no more than 2x those): the kill follows the count
task's committed offsets, so it lands right after a transaction commit, possibly before the store wrote that commit
(the store is then one transaction behind, as the commit sequence allows). So two figures: the last transaction's
records (the step of the committed offsets before the kill) and the open one's (changelog end minus its last stable
offset right after the kill, before the restart).

Peers, interleaved per round (A B C D E A B C D E ...), all reading one input topic produced once:
* `before`: the worker of git revision `--baseline` (default 84f14b5, the last commit before transactional stores:
  a dirty close under exactly-once wipes the task's stores, restored in full);
* `after`: this tree's worker (transactional stores);
* `Kafka Streams 4.1.1 (wipe)`: bench/kafka-streams' WordCount on 4.1.1, which wipes after a dirty close under EOS;
* `Kafka Streams 4.4.0 (default)`: the same on 4.4.0 as it comes, `enable.transactional.statestores` left at its
  default (false; the peer's logged StreamsConfig must show it);
* `Kafka Streams 4.4.0 (transactional)`: the same on 4.4.0 with `enable.transactional.statestores=true` (KIP-892).
Build the Java peers first: `STREAMLET_BENCH_KAFKA_STREAMS_VERSION=4.1.1 bench/setup_peers.sh` and the same with
4.4.0 (or `mvn -q -B package -Dkafka.version=V` in bench/kafka-streams).

Usage: .venv/bin/python bench/recovery.py [--keys N] [--partitions P] [--kill-at F] [--rounds R] [--baseline REV]
       [--peers before,after,...] [--output NAME]
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import LIB_PY, ROOT, WORK, Proc, java_build, java_classpath, log, spawn  # noqa: E402

from streamlet.kafka.broker import KAFKA_VERSION  # noqa: E402

#: The Kafka Streams release that wipes after a dirty close under exactly-once (the last before KIP-892 that the
#: project used); the transactional peer is the project's KAFKA_VERSION.
WIPE_KAFKA_STREAMS = "4.1.1"
INSTANCE = "recovery-worker"  # group.instance.id: static membership, the restart takes its tasks back at once
SESSION_TIMEOUT_MS = "10000"
COMMIT_INTERVAL_MS = "1000"  # examples/wordcount/app.py's (both peers' default under exactly_once_v2: 100)
CACHE_BYTES = str(10 * 1024 * 1024)  # both peers' default statestore cache

# streamlet's logging restore listener and main loop
RESTORE_START = re.compile(r"restoring store \S+ from \S+ offsets (\d+)\.\.(\d+) ")
RESTORE_END = re.compile(r"restored store \S+ from \S+: (\d+) records in ")
STAMP = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) "
FIRST_LINE = re.compile(STAMP, re.MULTILINE)
COUNT_RUNNING = re.compile(STAMP + r".*task 1_\d+ restored, now RUNNING", re.MULTILINE)
# bench/kafka-streams' WordCount: its StateRestoreListener and state listener (epoch ms)
KS_RESTORE_START = re.compile(r"^RESTORE_START \d+ \S+ (\d+) (\d+)$", re.MULTILINE)
KS_RESTORE_END = re.compile(r"^RESTORE_END \d+ \S+ (\d+)$", re.MULTILINE)
KS_RUNNING = re.compile(r"^STATE RUNNING (\d+)$", re.MULTILINE)
KS_TRANSACTIONAL = re.compile(r"enable\.transactional\.statestores = (\w+)")


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


Launch = Callable[[str, str, str, str, str, Path], Proc]  # (name, bootstrap, app id, source, sink, run dir)


@dataclass(frozen=True)
class Peer:
    name: str
    launch: Launch
    #: (the restarted instance's log, restart epoch seconds) -> restored records, offset spans, when RUNNING, ...
    restoration: Callable[[str, float], dict[str, Any]]


def stamp(text: str) -> float:
    """A log line's time (local time, as the worker logs it) in epoch seconds."""
    return time.mktime(time.strptime(text[:19], "%Y-%m-%d %H:%M:%S")) + int(text[20:]) / 1000


def streamlet_peer(name: str, tree: Path) -> Peer:
    def launch(proc: str, bootstrap: str, app_id: str, source: str, sink: str, run_dir: Path) -> Proc:
        cmd = [str(LIB_PY), "-m", "streamlet.cli", "worker", "examples.wordcount.app:app", "--threads", "1"]
        cmd += ["--state-dir", str(run_dir / "state"), "--bootstrap-servers", bootstrap]
        for key, value in {
            "processing_guarantee": "exactly_once_v2",
            "group_instance_id": INSTANCE,
            "commit_interval_ms": COMMIT_INTERVAL_MS,
            "session_timeout_ms": SESSION_TIMEOUT_MS,
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
        return spawn(proc, cmd, run_dir / f"{proc}.log", env=env, cwd=tree)

    def restoration(text: str, restarted_at: float) -> dict[str, Any]:
        first_line, running = FIRST_LINE.search(text), COUNT_RUNNING.findall(text)
        return {
            "records_restored": sum(int(n) for n in RESTORE_END.findall(text)),
            "restore_offset_span": sum(int(end) - int(start) for start, end in RESTORE_START.findall(text)),
            # where the time to the first processed record goes: the process starting, then the restore
            "process_started_s": round(stamp(first_line.group(1)) - restarted_at, 2) if first_line else None,
            "count_task_running_s": round(max(map(stamp, running)) - restarted_at, 2) if running else None,
        }

    return Peer(name, launch, restoration)


#: How a Kafka Streams peer runs: its logged `enable.transactional.statestores` must be the value given (None: a
#: release before KIP-892, which has no such setting)
KS_MODES: dict[str, str | None] = {"wipe": None, "default": "false", "transactional": "true"}


def kafka_streams_peer(version: str, mode: str) -> Peer:
    """bench/kafka-streams' WordCount of Kafka `version`. `mode`: `wipe` (a release before KIP-892), `default`
    (4.4+ with enable.transactional.statestores left at its default, false) or `transactional` (set to true);
    the peer's logged StreamsConfig must show the setting `KS_MODES` names."""
    name = f"Kafka Streams {version} ({mode})"
    expected = KS_MODES[mode]

    def launch(proc: str, bootstrap: str, app_id: str, source: str, sink: str, run_dir: Path) -> Proc:
        if not (java_build(version) / "classes" / "bench" / "WordCount.class").exists():
            raise RuntimeError(f"bench/kafka-streams not built for {version} (see this script's docstring)")
        cmd = ["java", "-Xmx1g", f"-Dstreams.group.instance.id={INSTANCE}"]
        cmd += [f"-Dstreams.session.timeout.ms={SESSION_TIMEOUT_MS}"]
        if mode == "transactional":
            cmd += ["-Dstreams.enable.transactional.statestores=true"]
        cmd += ["-cp", java_classpath(version), "bench.WordCount", bootstrap, app_id, source, sink]
        cmd += [str(run_dir / "state"), "1", COMMIT_INTERVAL_MS, CACHE_BYTES, "exactly_once_v2"]
        return spawn(proc, cmd, run_dir / f"{proc}.log")

    def restoration(text: str, restarted_at: float) -> dict[str, Any]:
        setting = KS_TRANSACTIONAL.findall(text)
        if setting != ([] if expected is None else [expected]):
            raise RuntimeError(f"{name}: its StreamsConfig shows enable.transactional.statestores = {setting}")
        running = KS_RUNNING.findall(text)
        return {
            "records_restored": sum(int(n) for n in KS_RESTORE_END.findall(text)),
            "restore_offset_span": sum(int(end) - int(start) for start, end in KS_RESTORE_START.findall(text)),
            "process_started_s": None,  # the JVM's first log line has no wall-clock time
            "count_task_running_s": round(int(running[-1]) / 1000 - restarted_at, 2) if running else None,
        }

    return Peer(name, launch, restoration)


async def changelog_since_commit(bootstrap: str, topic: str, partitions: int) -> tuple[int, int]:
    """(end offsets, end - last stable offsets) of the changelog, summed over partitions: right after the kill the
    killed instance's open transaction holds the LSO back, so the difference is what it wrote since its last
    commit (plus nothing else: the changelog has one writer)."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition

    tps = [TopicPartition(topic, p) for p in range(partitions)]
    ends: dict[str, int] = {}
    for isolation in ("read_uncommitted", "read_committed"):
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, isolation_level=isolation)
        await consumer.start()
        try:
            ends[isolation] = sum((await consumer.end_offsets(tps)).values())
        finally:
            await consumer.stop()
    return ends["read_uncommitted"], ends["read_uncommitted"] - ends["read_committed"]


async def run_peer(
    bootstrap: str, peer: Peer, source: str, keys: int, partitions: int, kill_at: float, app_id: str, timeout: float
) -> dict[str, Any]:
    sink = f"{app_id}-out"
    run_dir = WORK / "recovery" / app_id
    shutil.rmtree(run_dir, ignore_errors=True)
    await common.recreate_topics(bootstrap, {sink: partitions})
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

    first = peer.launch("first", bootstrap, app_id, source, sink, run_dir)
    try:
        kill_when = int(keys * kill_at)
        steps = [0]  # the count task's committed offsets as they moved: one step per transaction it committed

        async def loaded() -> bool:
            total = await counted_total()
            if total != steps[-1]:
                steps.append(total)
            return total >= kill_when

        await wait_for(loaded, timeout)
        os.killpg(first.popen.pid, signal.SIGKILL)
        first.popen.wait(timeout=30)
        at_kill = await counted_total()
        if at_kill != steps[-1]:
            steps.append(at_kill)
        if await caught_up():
            raise RuntimeError("the whole backlog was counted before the kill: give more --keys")
        changelog_end, since_commit = await changelog_since_commit(
            bootstrap, f"{app_id}-counts-store-changelog", partitions
        )
        restarted_at = time.time()
        second = peer.launch("second", bootstrap, app_id, source, sink, run_dir)

        async def moved_on() -> bool:
            return await counted_total() > at_kill

        try:
            to_first = await wait_for(moved_on, timeout)
            to_caught_up = await wait_for(caught_up, timeout)
        finally:
            common.stop(second)
        return {
            "peer": peer.name,
            "status": "ok",
            "counted_at_kill": at_kill,
            "changelog_records_at_kill": changelog_end,
            "changelog_since_commit_at_kill": since_commit,
            # the last transaction's records (its committed-offset step; two if a poll missed one)
            "last_commit_records": steps[-1] - steps[-2],
            "first_processed_s": round(to_first, 2),
            "caught_up_s": round(to_first + to_caught_up, 2),  # from the restart, as first_processed_s
            **peer.restoration(second.tail(100_000), restarted_at),
        }
    except Exception as exc:
        log(f"{peer.name}: {exc!r}")
        return {"peer": peer.name, "status": f"failed: {exc!r}"}
    finally:
        common.stop(first)
        await common.delete_topics_with_prefix(bootstrap, app_id)


def ratios(results: list[dict[str, Any]], peer: str, field: str, against: str = "after") -> float | None:
    """Median over rounds of peer's `field` / `against`'s in the same round (rounds where both are ok)."""
    ok = {(r["peer"], r["round"]): r for r in results if r["status"] == "ok"}
    pairs = [(r, ok.get((against, rnd))) for (name, rnd), r in ok.items() if name == peer]
    values = [r[field] / base[field] for r, base in pairs if base and base[field] > 0]
    return statistics.median(values) if values else None


def render(results: list[dict[str, Any]], peers: list[str]) -> str:
    rows: list[list[Any]] = []
    for peer in peers:
        ok = [r for r in results if r["peer"] == peer and r["status"] == "ok"]
        if not ok:
            rows.append([peer, "failed", *[""] * 9])
            continue

        def med(field: str, ok: list[dict[str, Any]] = ok) -> float:
            return float(statistics.median(r[field] for r in ok))

        def ratio(field: str, peer: str = peer) -> str:
            value = ratios(results, peer, field)
            return "" if value is None else f"{value:.2f}x"

        rows.append(
            [
                peer,
                len(ok),
                f"{med('changelog_records_at_kill'):,.0f}",
                f"{med('last_commit_records'):,.0f}",
                f"{med('changelog_since_commit_at_kill'):,.0f}",
                f"{med('records_restored'):,.0f}",
                f"{med('restore_offset_span'):,.0f}",
                f"{med('first_processed_s'):.2f}",
                ratio("first_processed_s"),
                f"{med('caught_up_s'):.2f}",
                ratio("caught_up_s"),
            ]
        )
    headers = ["peer", "rounds", "changelog at kill", "last commit", "open txn", "records restored", "restore span"]
    headers += ["first processed (s)", "vs after", "caught up (s)", "vs after"]
    return common.table(headers, rows)


def goals(results: list[dict[str, Any]], transactional_peer: str) -> list[str]:
    """The issue's two goals for `after`, checked on this run's figures."""
    after = [r for r in results if r["peer"] == "after" and r["status"] == "ok"]
    if not after:
        return ["goals: `after` has no successful round"]
    since = [r["last_commit_records"] + r["changelog_since_commit_at_kill"] for r in after]
    met = sum(r["records_restored"] <= 2 * n for r, n in zip(after, since, strict=True))
    lines = [
        f"goal restored <= 2x the records since the last commit (last + open transaction): {met} of {len(after)} "
        f"rounds (restored {[r['records_restored'] for r in after]}, since the last commit {since})"
    ]
    ratio = ratios(results, transactional_peer, "first_processed_s")
    if ratio is not None:
        verdict = "met" if ratio >= 1 else "not met"
        lines.append(
            f"goal first processed record <= {transactional_peer}'s: {verdict} ({transactional_peer} takes "
            f"{ratio:.2f}x `after`'s time, median of the same-round ratios)"
        )
    return lines


PEERS = [
    "before",
    "after",
    f"Kafka Streams {WIPE_KAFKA_STREAMS} (wipe)",
    f"Kafka Streams {KAFKA_VERSION} (default)",
    f"Kafka Streams {KAFKA_VERSION} (transactional)",  # last: the goals' peer
]


def save(
    args: argparse.Namespace, sha: str | None, peers: list[str], results: list[dict[str, Any]], complete: bool
) -> Path:
    """bench/results/<output>.json with every round so far; `complete` false while rounds are still to come."""
    return common.write_result(
        args.output,
        {
            "complete": complete,
            "keys": args.keys,
            "partitions": args.partitions,
            "kill_at": args.kill_at,
            "rounds": args.rounds,
            "baseline": sha,
            "kafka_streams_versions": {
                "wipe": WIPE_KAFKA_STREAMS,
                "default": KAFKA_VERSION,
                "transactional": KAFKA_VERSION,
            },
            "ratios_vs_after": {
                peer: {f: ratios(results, peer, f) for f in ("first_processed_s", "caught_up_s")}
                for peer in peers
                if peer != "after"
            },
            "results": results,
            "table": render(results, peers),
            "goals": goals(results, PEERS[-1]),
            "command": " ".join(["bench/recovery.py", *sys.argv[1:]]),
        },
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=5_000_000)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--kill-at", type=float, default=0.6, help="fraction of the input committed at the kill")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--baseline", default="84f14b5", help="git revision of the 'before' worker (wipes on a crash)")
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated, in this order per round")
    parser.add_argument("--output", default="recovery", help="bench/results/<OUTPUT>.json")
    args = parser.parse_args(argv)
    chosen = [p.strip() for p in args.peers.split(",") if p.strip()]
    if unknown := set(chosen) - set(PEERS):
        parser.error(f"unknown peers {sorted(unknown)}; known: {PEERS}")
    common.quiet_logs()
    sha = None
    peers: dict[str, Peer] = {}
    for name in chosen:
        if name == "before":
            sha, baseline = common.baseline_worktree(args.baseline)
            peers[name] = streamlet_peer(name, baseline)
        elif name == "after":
            peers[name] = streamlet_peer(name, ROOT)
        else:
            _, _, version, mode = name.split()
            peers[name] = kafka_streams_peer(version, mode.strip("()"))
    results: list[dict[str, Any]] = []
    prefix = f"bench-recovery-{time.strftime('%m%d%H%M%S')}"
    with common.broker() as bootstrap:
        source = f"{prefix}-in"
        asyncio.run(common.recreate_topics(bootstrap, {source: args.partitions}))
        words = [f"w{i:08d}" for i in range(args.keys)]
        produced = asyncio.run(common.produce_lines(bootstrap, source, words, args.partitions))
        log(f"produced {args.keys:,} words in {produced:.1f} s")
        try:
            for round_no in range(args.rounds):
                for slot, peer in enumerate(peers.values()):  # interleaved: A B C D E A B C D E ...
                    app_id = f"{prefix}-r{round_no}-p{slot}"
                    row = asyncio.run(
                        run_peer(
                            bootstrap, peer, source, args.keys, args.partitions, args.kill_at, app_id, args.timeout
                        )
                    )
                    log(f"round {round_no + 1} {peer.name}: {row}")
                    results.append({**row, "round": round_no + 1})
                    save(args, sha, list(peers), results, complete=False)  # a run cut short keeps its rounds
        finally:
            asyncio.run(common.delete_topics_with_prefix(bootstrap, source))
    path = save(args, sha, list(peers), results, complete=True)
    print(f"\nRecovery of a {args.keys:,}-key count store after a kill -9 under exactly_once_v2:")
    print(render(results, list(peers)))
    print("\n".join(goals(results, PEERS[-1])))
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
