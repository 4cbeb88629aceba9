"""WordCount throughput: streamlet vs Kafka Streams, Faust, Quix Streams, Spark, and the limits.

One broker, one input (bench/corpus.py: >= 2,000,000 words of real text, loaded once into
`streams-plaintext-input`, 6 partitions), each peer in turn with a fresh application id / consumer group
and a fresh output topic. For each peer the watcher (started before the peer) reads the output topic and
compares the latest count of every word with the independent count of the input.

Times (all taken by this script, on one clock):
  launch  the peer's processes are started
  ready   "first record in": the peer's consumer group is first Stable (it owns partitions and starts
          fetching; the input is already there), or its first output record if that comes earlier; for
          Spark (no group) the moment its query has started
  done    the latest count of every word equals the expected one (and no unexpected word was counted)
Rate = words / (done - ready) (records are words, the unit every peer counts); "wall" includes start-up.

The limits: `raw aiokafka` is the same dataflow as a bare aiokafka pipe with no framework (no changelog,
no state store), and `Kafka consumer` is Kafka's own ConsumerPerformance reading the input topic
(lines/s x words per line; it only reads).

Before/after a change: `--baseline REV` adds, for every streamlet peer, its twin running the code of git
revision REV (a temporary worktree), and `--rounds N` runs the selected peers N times interleaved
(A B A B ...). The closing table gives each round's ratio current / baseline and the median.

Usage: .venv/bin/python bench/wordcount.py [--peers a,b,...] [--words N] [--timeout S] [--baseline REV --rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import corpus as corpus_mod  # noqa: E402
from common import JAVA_CP, KAFKA_STREAMS, LIB_PY, PEERS_PY, Proc, log, spawn  # noqa: E402

INPUT = "streams-plaintext-input"
PARTITIONS = 6
COMMIT_MS = 1000
CACHE_BYTES = 10 * 1024 * 1024  # the default of both streamlet and Kafka Streams


@dataclass
class PeerRun:
    """What a peer needs: fresh names for this run."""

    bootstrap: str
    app_id: str
    output: str
    work: Path


@dataclass
class Peer:
    name: str
    kind: str  # "framework" | "limit"
    description: str
    launch: Callable[[PeerRun], list[Proc]]
    group: str | None = "app"  # consumer group to watch for "ready": "app" = the app id, None = log marker
    ready_marker: str | None = None
    timeout: float = 300.0
    requires: Callable[[], str | None] = lambda: None  # returns the reason it cannot run, or None
    rss_total: bool = False  # peak RSS: the sum over a launched process's own processes, not the largest


def _streamlet(
    workers: int,
    threads: int,
    *extra: str,
    root: Path = common.ROOT,
    pre_aggregate: bool = False,
    connect: tuple[str, dict[str, str]] | None = None,
) -> Callable[[PeerRun], list[Proc]]:
    """`root` is the source tree the workers import streamlet and the example from (a baseline worktree);
    `pre_aggregate` turns on the example's `count(pre_aggregate=True)`; `connect`: the workers' own bootstrap
    servers and STREAMLET_* security variables (bench/tls_cost.py's secured listener), instead of the bench's."""

    def launch(r: PeerRun) -> list[Proc]:
        bootstrap, security = connect if connect is not None else (r.bootstrap, {})
        env = {
            **security,
            "WORDCOUNT_INPUT_TOPIC": INPUT,
            "WORDCOUNT_OUTPUT_TOPIC": r.output,
            "WORDCOUNT_APPLICATION_ID": r.app_id,
            "WORDCOUNT_PRE_AGGREGATE": "1" if pre_aggregate else "0",
            "PYTHONPATH": str(root),
        }
        return [
            spawn(
                f"streamlet-{i}",
                [
                    str(LIB_PY),
                    "-m",
                    "streamlet.cli",
                    "worker",
                    "examples.wordcount.app:app",
                    "--threads",
                    str(threads),
                    "--state-dir",
                    str(r.work / f"state-{i}"),
                    "--bootstrap-servers",
                    bootstrap,
                    "--log-level",
                    "warning",
                    "--config",
                    f"commit_interval_ms={COMMIT_MS}",
                    "--config",
                    f"statestore_cache_max_bytes={CACHE_BYTES}",
                    *(a for kv in extra for a in ("--config", kv)),
                ],
                r.work / f"worker-{i}.log",
                env=env,
                cwd=root,
            )
            for i in range(workers)
        ]

    return launch


def _kafka_streams(
    threads: int, cache: int, guarantee: str = "at_least_once", configs: dict[str, str] | None = None
) -> Callable[[PeerRun], list[Proc]]:
    """`configs`: further Kafka Streams configs (e.g. `producer.batch.size`), passed as -Dstreams.<name>."""
    jvm_props = [f"-Dstreams.{name}={value}" for name, value in (configs or {}).items()]

    def launch(r: PeerRun) -> list[Proc]:
        return [
            spawn(
                "kafka-streams",
                [
                    "java",
                    "-Xmx2g",
                    *jvm_props,
                    "-cp",
                    JAVA_CP,
                    "bench.WordCount",
                    r.bootstrap,
                    r.app_id,
                    INPUT,
                    r.output,
                    str(r.work / "state"),
                    str(threads),
                    str(COMMIT_MS),
                    str(cache),
                    guarantee,
                ],
                r.work / "kafka-streams.log",
            )
        ]

    return launch


def _peer_script(script: str, *extra: str, env: dict[str, str] | None = None) -> Callable[[PeerRun], list[Proc]]:
    def launch(r: PeerRun) -> list[Proc]:
        args = [
            a.format(
                bootstrap=r.bootstrap,
                app=r.app_id,
                input=INPUT,
                output=r.output,
                state=r.work / "state",
                commit_s=COMMIT_MS / 1000,
                spark=_spark_version(),
            )
            for a in extra
        ]
        return [
            spawn(
                script,
                [str(PEERS_PY), str(common.BENCH / "peers" / script), *args],
                r.work / f"{script}.log",
                env={"PYTHONPATH": str(common.BENCH / "peers"), **(env or {})},
                cwd=common.BENCH / "peers",
            )
        ]

    return launch


def _needs_peers_module(module: str) -> Callable[[], str | None]:
    def check() -> str | None:
        if not PEERS_PY.exists():
            return f"{PEERS_PY} missing (run bench/setup_peers.sh)"
        proc = subprocess.run([str(PEERS_PY), "-c", f"import {module}"], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            return f"import {module} failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
        return None

    return check


def _needs_java() -> str | None:
    if not (common.JAVA_CLASSES / "bench" / "WordCount.class").exists():
        return "bench/kafka-streams not built (run `mvn -q -B package` there; bench/run_all does)"
    return None


_SPARK_VERSION: list[str] = []


def _spark_version() -> str:
    if not _SPARK_VERSION:
        out = subprocess.run(
            [str(PEERS_PY), "-c", "import pyspark; print(pyspark.__version__)"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        _SPARK_VERSION.append(out or "?")
    return _SPARK_VERSION[0]


def _faust(take: int = 0) -> Callable[[PeerRun], list[Proc]]:
    """peers/faust_wordcount.py as a Faust worker; `take` > 0: its stream.take variant."""
    args = ("{bootstrap}", "{app}", "{input}", "{output}", "{state}", "worker", "-l", "warn", "--without-web")
    return _peer_script("faust_wordcount.py", *args, env={"FAUST_TAKE": str(take)} if take else None)


PEERS: list[Peer] = [
    Peer(
        "raw aiokafka",
        "limit",
        "bare aiokafka consume->split->produce->consume->count, 1 process",
        _peer_script("raw_pipe.py", "{bootstrap}", "{app}", "{input}", "{output}", "{commit_s}"),
        requires=_needs_peers_module("aiokafka"),
    ),
    Peer(
        "streamlet 1 proc x 2 threads",
        "framework",
        "examples/wordcount/app.py, commit 1 s, 10 MiB cache",
        _streamlet(1, 2),
    ),
    Peer(
        "streamlet 1 worker x 2 thread processes",
        "framework",
        "examples/wordcount/app.py, commit 1 s, 10 MiB cache, --process-per-thread (RSS: the sum of its 3 processes)",
        _streamlet(1, 2, "process_per_thread=true"),
        rss_total=True,
    ),
    Peer(
        "streamlet 2 procs x 2 threads",
        "framework",
        "examples/wordcount/app.py, commit 1 s, 10 MiB cache",
        _streamlet(2, 2),
    ),
    Peer(
        f"{KAFKA_STREAMS} (2 threads)",
        "framework",
        "WordCountDemo topology, commit 1 s, 10 MiB cache",
        _kafka_streams(2, CACHE_BYTES),
        requires=_needs_java,
    ),
    Peer(
        f"{KAFKA_STREAMS} (2 threads), streamlet's producer batching",
        "framework",
        "WordCountDemo topology, commit 1 s, 10 MiB cache, producer batch.size 256 KiB and linger.ms 5 (streamlet's)",
        _kafka_streams(2, CACHE_BYTES, configs={"producer.batch.size": "262144", "producer.linger.ms": "5"}),
        requires=_needs_java,
    ),
    Peer(
        "streamlet 1 proc x 2 threads, pre-aggregated",
        "framework",
        "examples/wordcount/app.py with count(pre_aggregate=True), commit 1 s, 10 MiB cache",
        _streamlet(1, 2, pre_aggregate=True),
    ),
    Peer(
        "streamlet 2 procs x 2 threads, pre-aggregated",
        "framework",
        "examples/wordcount/app.py with count(pre_aggregate=True), commit 1 s, 10 MiB cache",
        _streamlet(2, 2, pre_aggregate=True),
    ),
    *(
        Peer(
            f"streamlet {n} proc{'s' if n > 1 else ''} x 1 thread",
            "framework",
            "scaling: examples/wordcount/app.py, one stream thread per process, commit 1 s, 10 MiB cache",
            _streamlet(n, 1),
        )
        for n in (1, 2, 4)
    ),
    Peer(
        "streamlet 2 procs x 2 threads, exactly_once_v2",
        "framework",
        "examples/wordcount/app.py, commit 1 s, 10 MiB cache, one transaction per thread per commit",
        _streamlet(2, 2, "processing_guarantee=exactly_once_v2"),
    ),
    Peer(
        f"{KAFKA_STREAMS} (2 threads), exactly_once_v2",
        "framework",
        "WordCountDemo topology, commit 1 s, 10 MiB cache, exactly_once_v2",
        _kafka_streams(2, CACHE_BYTES, "exactly_once_v2"),
        requires=_needs_java,
    ),
    Peer(
        "Quix Streams",
        "framework",
        "group_by + stateful apply (RocksDB), commit 1 s",
        _peer_script("quix_wordcount.py", "{bootstrap}", "{app}", "{input}", "{output}", "{state}", "{commit_s}"),
        requires=_needs_peers_module("quixstreams"),
    ),
    Peer(
        "Faust",
        "framework",
        "faust-streaming agents + Table on rocksdb:// (rocksdict)",
        _faust(),
        requires=_needs_peers_module("faust"),
    ),
    Peer(
        "Faust with stream.take batching",
        "framework",
        "the same with stream.take(1000, within=0.2 s) in the split agent (Faust refuses table writes there)",
        _faust(take=1000),
        requires=_needs_peers_module("faust"),
    ),
    Peer(
        "Spark Structured Streaming",
        "framework",
        "PySpark, Kafka source/sink, RocksDB state store, local[2]",
        _peer_script("spark_wordcount.py", "{bootstrap}", "{app}", "{input}", "{output}", "{state}", "{spark}"),
        group=None,
        ready_marker="SPARK_QUERY_STARTED",
        requires=_needs_peers_module("pyspark"),
    ),
]


# --------------------------------------------------------------------------------------------------------


async def _group_stable(bootstrap: str, group: str, stop: asyncio.Event) -> float | None:
    """Polls DescribeGroups until the group is Stable; returns that time (monotonic)."""
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        while not stop.is_set():
            try:
                for resp in await admin.describe_consumer_groups([group]):
                    for g in resp.to_object().get("groups", []):
                        state = next((v for k, v in g.items() if "state" in k), "")
                        if state == "Stable":
                            return time.monotonic()
            except Exception:  # coordinator not there yet
                pass
            await asyncio.sleep(0.1)
    finally:
        await admin.close()
    return None


async def _log_marker(proc_list: list[Proc], marker: str, stop: asyncio.Event) -> float | None:
    while not stop.is_set():
        for p in proc_list:
            try:
                if marker in p.log_path.read_text(errors="replace"):
                    return time.monotonic()
            except OSError:
                pass
        await asyncio.sleep(0.1)
    return None


async def run_peer(peer: Peer, bootstrap: str, c: corpus_mod.Corpus, run_id: str, timeout: float) -> dict[str, Any]:
    slug = re.sub(r"[^a-z0-9]+", "-", peer.name.lower()).strip("-")
    res: dict[str, Any] = {"peer": peer.name, "kind": peer.kind, "description": peer.description}
    reason = peer.requires()
    if reason:
        res.update(status="not run", reason=reason)
        return res
    r = PeerRun(bootstrap, f"bench-{slug}-{run_id}", f"bench-out-{slug}-{run_id}", common.WORK / run_id / slug)
    r.work.mkdir(parents=True, exist_ok=True)
    await common.recreate_topics(bootstrap, {r.output: PARTITIONS})
    watcher = common.OutputWatcher(bootstrap, r.output, c.expected)
    await watcher.start()
    procs: list[Proc] = []
    stop = asyncio.Event()
    sampling: asyncio.Task[None] | None = None
    try:
        procs = peer.launch(r)
        launched = min(p.started for p in procs)
        cpu = common.CpuSampler([p.popen.pid for p in procs], common.listener_pid(bootstrap))
        sampling = asyncio.create_task(cpu.run(stop))
        ready_task = asyncio.create_task(
            _group_stable(bootstrap, r.app_id, stop)
            if peer.group
            else _log_marker(procs, peer.ready_marker or "", stop)
        )
        result = await watcher.wait(timeout, alive=lambda: all(p.alive() for p in procs))
        # per launched process, before they stop
        res["peak_rss_mib"] = [common.peak_rss_mib(p, total=peer.rss_total) for p in procs]
        cpu_end = cpu.sample()
        stop.set()
        ready = await ready_task
        end = result.done or time.monotonic()
        if result.first_output is not None:
            ready = min(ready or result.first_output, result.first_output)
        res.update(
            app_id=r.app_id,
            output_topic=r.output,
            output_records=result.output_records,
            startup_s=round((ready - launched), 2) if ready else None,
            wall_s=round(end - launched, 2),
            work_dir=str(r.work),
        )
        if result.ok and ready is not None:
            secs = result.done - ready  # type: ignore[operator]
            # CPU over the same interval as the rate (start-up excluded)
            _, peer_cpu, broker_cpu = cpu.at(ready)
            res.update(
                status="ok",
                seconds=round(secs, 2),
                words_per_s=round(c.words / secs),
                wall_words_per_s=round(c.words / (result.done - launched)),
                startup_cpu_s=round(peer_cpu, 2),
                cpu_us_per_word=round((cpu_end[1] - peer_cpu) * 1e6 / c.words, 2),
                broker_cpu_us_per_word=None
                if broker_cpu is None or cpu_end[2] is None
                else round((cpu_end[2] - broker_cpu) * 1e6 / c.words, 2),
                repartition_records=sum(
                    n
                    for topic, n in (await common.topic_records(bootstrap, r.app_id)).items()
                    if topic.endswith("-repartition")
                ),
            )  # type: ignore[operator]
        else:
            secs = end - (ready or launched)
            res.update(
                status="failed" if result.reason != f"timed out after {timeout:.0f}s" else "timeout",
                reason=result.reason,
                progress=round(result.counted_words / c.words, 3),
                words_per_s_partial=round(result.counted_words / secs) if secs > 0 else None,
                wrong_examples=[(w, watcher.latest.get(w), c.expected.get(w)) for w in result.wrong],
                log_tail=[p.tail(12) for p in procs],
                topic_records=await common.topic_records(bootstrap, r.app_id),
            )
    finally:
        stop.set()
        if sampling is not None:
            await sampling
        for p in procs:
            common.stop(p, grace=30)
        await watcher.close()
        for state in r.work.glob("state*"):  # keep the logs, drop the state stores (disk)
            shutil.rmtree(state, ignore_errors=True)
    return res


def consumer_perf(bootstrap: str, c: corpus_mod.Corpus, run_id: str) -> dict[str, Any]:
    """Kafka's ConsumerPerformance on the input topic (the kafka-consumer-perf-test tool's class)."""
    res: dict[str, Any] = {
        "peer": "Kafka consumer (ConsumerPerformance)",
        "kind": "limit",
        "description": "Java consumer reads the input topic, no processing",
    }
    reason = _needs_java()
    if reason:
        res.update(status="not run", reason=reason)
        return res
    cmd = [
        "java",
        "-cp",
        JAVA_CP,
        "org.apache.kafka.tools.ConsumerPerformance",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        INPUT,
        "--messages",
        str(len(c.lines)),
        "--group",
        f"bench-perf-{run_id}",
        "--timeout",
        "60000",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    rows = [ln for ln in proc.stdout.splitlines() if ln and ln[0].isdigit()]
    if proc.returncode != 0 or not rows:
        res.update(status="failed", reason=(proc.stdout + proc.stderr).strip()[-500:])
        return res
    header = [h.strip() for h in next(ln for ln in proc.stdout.splitlines() if "nMsg.sec" in ln).split(",")]
    vals = dict(zip(header, [v.strip() for v in rows[-1].split(",")], strict=False))
    lines_s = float(vals.get("fetch.nMsg.sec") or vals["nMsg.sec"])
    words_per_line = c.words / len(c.lines)
    res.update(
        status="ok",
        lines_per_s=round(lines_s),
        words_per_s=round(lines_s * words_per_line),
        mb_per_s=float(vals.get("fetch.MB.sec") or vals["MB.sec"]),
        raw=vals,
        note=f"lines/s x {words_per_line:.2f} words/line (fetch time, excludes the group join)",
    )
    return res


def _cpu_per_word(r: dict[str, Any]) -> str:
    peer, broker = r.get("cpu_us_per_word"), r.get("broker_cpu_us_per_word")
    if peer is None:
        return "-"
    return f"{peer:.1f} + {broker:.1f}" if broker is not None else f"{peer:.1f}"


def render(results: list[dict[str, Any]]) -> str:
    ok = [r for r in results if r.get("status") == "ok" and r["kind"] == "framework"]
    best = max((r["words_per_s"] for r in ok), default=None)
    raw = next((r["words_per_s"] for r in results if r["peer"] == "raw aiokafka" and r.get("status") == "ok"), None)
    java = next(
        (r["words_per_s"] for r in results if r["peer"].startswith("Kafka consumer") and r.get("status") == "ok"), None
    )
    rows = []
    for r in results:
        rate = r.get("words_per_s") if r.get("status") == "ok" else None
        partial = r.get("words_per_s_partial")
        if r.get("status") == "ok":
            status = "ok, counts verified" if not r["peer"].startswith("Kafka consumer") else "ok (reads only)"
        elif r.get("status") == "not run":
            status = f"NOT RUN: {r.get('reason')}"
        else:
            status = f"{r.get('status', '?').upper()}: {r.get('reason', '')}; {100 * r.get('progress', 0):.0f}% counted"
        shown = f"{rate:,}" if rate else (f"~{partial:,} (partial)" if partial else "-")
        ratio = rate or partial
        rows.append(
            [
                r["peer"],
                shown,
                r.get("seconds", "-"),
                r.get("startup_s", "-"),
                f"{ratio / best:.2f}" if ratio and best and r["kind"] == "framework" else "-",
                f"{ratio / raw:.2f}" if ratio and raw else "-",
                f"{ratio / java:.3f}" if ratio and java else "-",
                " / ".join(f"{m:,.0f}" for m in r.get("peak_rss_mib") or [] if m) or "-",
                _cpu_per_word(r),
                status,
            ]
        )
    return common.table(
        [
            "peer",
            "words/s",
            "processing s",
            "start-up s",
            "x best framework",
            "x raw aiokafka",
            "x Kafka consumer",
            "peak RSS MiB per process",
            "CPU us/word: peer + broker",
            "status",
        ],
        rows,
    )


def baseline_peers(peers: list[Peer], rev: str) -> tuple[list[Peer], Path]:
    """For each streamlet peer, a twin on revision `rev`, checked out in a temporary git worktree."""
    sha, tree = common.baseline_worktree(rev)
    twins = []
    for peer in peers:
        match = re.fullmatch(r"streamlet (\d) procs? x (\d) threads?(, exactly_once_v2|, pre-aggregated)?", peer.name)
        if match:
            variant = match[3] or ""
            extra = ["processing_guarantee=exactly_once_v2"] if "exactly_once_v2" in variant else []
            launch = _streamlet(
                int(match[1]), int(match[2]), *extra, root=tree, pre_aggregate="pre-aggregated" in variant
            )
            twins.append(Peer(f"{peer.name} @{sha}", peer.kind, f"baseline {sha}: {peer.description}", launch))
    return twins, tree


REFERENCE = f"{KAFKA_STREAMS} (2 threads)"


def _total_cpu_per_word(r: dict[str, Any]) -> float | None:
    """The peer's and the broker's CPU per word (None if either was not measured)."""
    if r.get("status") != "ok" or r.get("cpu_us_per_word") is None or r.get("broker_cpu_us_per_word") is None:
        return None
    return float(r["cpu_us_per_word"] + r["broker_cpu_us_per_word"])


def _cpu_ratios(rounds: list[list[dict[str, Any]]], name: str, reference: str) -> list[float]:
    """Per round: the reference's CPU per word over `name`'s (> 1: `name` needs less CPU per word)."""
    ratios = []
    for results in rounds:
        cpu = {r["peer"]: _total_cpu_per_word(r) for r in results}
        if cpu.get(name) and cpu.get(reference):
            ratios.append(cpu[reference] / cpu[name])  # type: ignore[operator]
    return ratios


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "-"


def render_vs_reference(rounds: list[list[dict[str, Any]]]) -> str:
    """Per framework peer: its ratio to Kafka Streams in each round (peers interleaved), and the median; and
    the same for CPU per word (peer + broker): whether the peer does the same work with less CPU."""
    rows = []
    names = [r["peer"] for r in rounds[0] if r["kind"] == "framework" and r["peer"] != REFERENCE]
    for name in names:
        ratios = []
        for results in rounds:
            rate = {r["peer"]: r.get("words_per_s") for r in results if r.get("status") == "ok"}
            if rate.get(name) and rate.get(REFERENCE):
                ratios.append(rate[name] / rate[REFERENCE])
        cpu_ratios = _cpu_ratios(rounds, name, REFERENCE)
        repartition = [r.get("repartition_records") for res in rounds for r in res if r["peer"] == name]
        shown = next((f"{n:,}" for n in repartition if n), "-")
        rows.append(
            [
                name,
                " ".join(f"{x:.2f}" for x in ratios) or "-",
                _median(ratios),
                " ".join(f"{x:.2f}" for x in cpu_ratios) or "-",
                _median(cpu_ratios),
                shown,
            ]
        )
    return common.table(
        [
            "peer",
            f"x {REFERENCE} per round",
            "median",
            "CPU/word: Kafka Streams' over the peer's, per round",
            "median",
            "repartition records",
        ],
        rows,
    )


def render_rounds(rounds: list[list[dict[str, Any]]], twins: dict[str, str]) -> str:
    """Per current/baseline pair: words/s of each round, each round's ratio, and the median ratio."""
    rows = []
    for current, baseline in twins.items():
        ratios, cur_rates, base_rates = [], [], []
        for results in rounds:
            rate = {r["peer"]: r.get("words_per_s") for r in results if r.get("status") == "ok"}
            if rate.get(current) and rate.get(baseline):
                cur_rates.append(rate[current])
                base_rates.append(rate[baseline])
                ratios.append(rate[current] / rate[baseline])
        cpu_ratios = _cpu_ratios(rounds, current, baseline)
        rows.append(
            [
                current,
                " ".join(f"{x:,}" for x in cur_rates),
                " ".join(f"{x:,}" for x in base_rates),
                " ".join(f"{x:.2f}" for x in ratios),
                _median(ratios),
                " ".join(f"{x:.2f}" for x in cpu_ratios) or "-",
                _median(cpu_ratios),
            ]
        )
    return common.table(
        [
            "peer",
            "words/s (current)",
            "words/s (baseline)",
            "ratios",
            "median ratio",
            "CPU/word: baseline's over current's",
            "median",
        ],
        rows,
    )


async def prepare(bootstrap: str, c: corpus_mod.Corpus) -> float:
    await common.recreate_topics(bootstrap, {INPUT: PARTITIONS})
    return await common.produce_lines(bootstrap, INPUT, c.lines, PARTITIONS)


def main(argv: list[str] | None = None) -> int:
    global PARTITIONS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers", default="", help="comma-separated peer names, or substrings of them (default: all)")
    parser.add_argument("--words", type=int, default=corpus_mod.TARGET_WORDS)
    parser.add_argument("--timeout", type=float, default=240.0, help="per peer, from launch, seconds")
    parser.add_argument("--no-consumer-perf", action="store_true")
    parser.add_argument("--baseline", default="", help="git revision: add a twin of each streamlet peer running it")
    parser.add_argument("--rounds", type=int, default=1, help="run the selected peers this many times, interleaved")
    parser.add_argument("--partitions", type=int, default=PARTITIONS, help="of the input and output topics")
    parser.add_argument("--result", default="wordcount", help="results/<RESULT>.json (focused runs keep the main one)")
    args = parser.parse_args(argv)
    PARTITIONS = args.partitions
    wanted = [s.strip().lower() for s in args.peers.split(",") if s.strip()]
    # a spec equal to a peer's whole name selects that peer only; otherwise it selects every name containing it
    exact = {w for w in wanted if any(w == p.name.lower() for p in PEERS)}
    peers = [
        p
        for p in PEERS
        if not wanted or p.name.lower() in exact or any(w in p.name.lower() for w in wanted if w not in exact)
    ]
    twins: dict[str, str] = {}
    if args.baseline:
        extra, tree = baseline_peers(peers, args.baseline)
        twins = {t.name.rsplit(" @", 1)[0]: t.name for t in extra}
        peers = [q for p in peers for q in [p, *[t for t in extra if twins.get(p.name) == t.name]]]
    run_id = time.strftime("%m%d%H%M%S")
    common.quiet_logs()
    c = corpus_mod.build(args.words)
    log(f"corpus: {c.summary()}")
    results: list[dict[str, Any]] = []
    with common.broker() as bootstrap:
        secs = asyncio.run(prepare(bootstrap, c))
        log(f"loaded {len(c.lines)} lines ({c.words} words) into {INPUT} in {secs:.1f}s")
        if not args.no_consumer_perf:
            results.append(consumer_perf(bootstrap, c, run_id))
            log(f"{results[-1]['peer']}: {results[-1].get('words_per_s') or results[-1].get('reason')}")
        rounds: list[list[dict[str, Any]]] = []
        for round_no in range(args.rounds):
            rounds.append([])
            for peer in peers:
                log(f"round {round_no + 1}/{args.rounds}: running {peer.name} ...")
                res = asyncio.run(run_peer(peer, bootstrap, c, f"{run_id}r{round_no}", args.timeout))
                res["round"] = round_no + 1
                rounds[-1].append(res)
                results.append(res)
                log(f"{peer.name}: {res.get('status')} {res.get('words_per_s') or res.get('reason', '')}")
                slug = re.sub(r"[^a-z0-9]+", "-", peer.name.lower()).strip("-")
                asyncio.run(common.delete_topics_with_prefix(bootstrap, f"bench-{slug}-{run_id}r{round_no}"))
    if args.baseline:
        subprocess.run(["git", "-C", str(common.ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    text = render(results)
    if any(r["peer"] == REFERENCE for r in rounds[0]):
        text += f"\n\nEach peer vs {REFERENCE} in the same round, {args.rounds} interleaved round(s):\n"
        text += render_vs_reference(rounds)
    if twins:
        text += f"\n\nCurrent vs baseline {args.baseline}, {args.rounds} interleaved rounds:\n" + render_rounds(
            rounds, twins
        )
    where = f"{c.words:,} words ({len(c.lines):,} lines), {PARTITIONS} partitions, one local broker"
    print(f"\nWordCount, {where}:\n" + text)
    command = " ".join(["bench/wordcount.py", *(argv or sys.argv[1:])])
    path = common.write_result(
        args.result,
        {"corpus": c.summary(), "partitions": PARTITIONS, "results": results, "table": text, "command": command},
    )
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
