"""Shared plumbing of the benchmarks: the one broker, topics, peer processes, the output watcher, results.

Every benchmark runs in the library's venv (`.venv`, it imports streamlet); peers that need other
packages run as subprocesses of `bench/.venv-peers`. Every process a benchmark starts gets its own
process group and is stopped by that group's id (SIGTERM, then SIGKILL after a grace period).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import json
import os
import platform
import re
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
WORK = BENCH / ".work"  # state dirs and logs of the latest run (gitignored)
PEERS_VENV = BENCH / ".venv-peers"
PEERS_PY = PEERS_VENV / "bin" / "python"
LIB_PY = Path(sys.executable)

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamlet.kafka.broker import KAFKA_VERSION, selected_kafka_version  # noqa: E402

#: The Kafka Streams release of the Java peers: STREAMLET_BENCH_KAFKA_STREAMS_VERSION (setup_peers.sh builds it),
#: default the project's Kafka version. Peers of several versions are built side by side (bench/kafka-streams/pom.xml).
KAFKA_STREAMS_VERSION = os.environ.get("STREAMLET_BENCH_KAFKA_STREAMS_VERSION", "").strip() or KAFKA_VERSION
#: The peers' names start with this, e.g. "Kafka Streams 4.4.0 (2 threads)".
KAFKA_STREAMS = f"Kafka Streams {KAFKA_STREAMS_VERSION}"
JAVA_DIR = BENCH / "kafka-streams"


def java_build(version: str) -> Path:
    """Where `mvn package -Dkafka.version=<version>` puts the Java peers (classes/ and lib/)."""
    return JAVA_DIR / "target" / f"kafka-{version}"


def java_classpath(version: str) -> str:
    return f"{java_build(version) / 'classes'}:{java_build(version) / 'lib'}/*"


JAVA_BUILD = java_build(KAFKA_STREAMS_VERSION)
JAVA_CLASSES = JAVA_BUILD / "classes"
JAVA_CP = java_classpath(KAFKA_STREAMS_VERSION)


def quiet_logs() -> None:
    """aiokafka warns about transient metadata (NotLeaderForPartition right after topic creation)."""
    import logging

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("aiokafka").setLevel(logging.ERROR)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --------------------------------------------------------------------------------------------------------
# The broker: the one in STREAMLET_BOOTSTRAP_SERVERS (run_all starts it), else a private one for this script


@contextlib.contextmanager
def broker() -> Iterator[str]:
    bootstrap = os.environ.get("STREAMLET_BOOTSTRAP_SERVERS")
    if bootstrap:
        yield bootstrap
        return
    from streamlet.kafka.broker import LocalBroker

    b = LocalBroker(WORK / "broker", heap="1g")
    b.wipe()
    log("starting a local Kafka broker ...")
    status = b.start()
    try:
        yield status.bootstrap_servers
    finally:
        b.stop()
        log("broker stopped")


# --------------------------------------------------------------------------------------------------------
# Topics


async def recreate_topics(bootstrap: str, topics: dict[str, int], *, compact: set[str] | None = None) -> None:
    """Delete these topics (and wait until they are gone), then create them with the given partitions."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    await admin.start()
    try:
        existing = [t for t in await admin.list_topics() if t in topics]
        if existing:
            await admin.delete_topics(existing)
            for _ in range(60):
                if not set(existing) & set(await admin.list_topics()):
                    break
                await asyncio.sleep(0.5)
        new = [
            NewTopic(name, n, 1, topic_configs={"cleanup.policy": "compact"} if name in (compact or ()) else {})
            for name, n in topics.items()
        ]
        for attempt in range(20):
            try:
                await admin.create_topics(new)
                break
            except Exception as exc:  # TopicAlreadyExists while a deletion completes
                if attempt == 19:
                    raise
                log(f"create_topics retry: {exc!r}")
                await asyncio.sleep(1)
        for _ in range(60):
            meta = await admin.describe_topics(list(topics))
            if all(
                len(m.get("partitions", [])) == topics[m["topic"]]
                and m.get("error_code", 0) == 0
                and all(p.get("leader", -1) >= 0 and p.get("error_code", 0) == 0 for p in m["partitions"])
                for m in meta
            ):
                return
            await asyncio.sleep(0.5)
    finally:
        await admin.close()


async def delete_topics_with_prefix(bootstrap: str, prefix: str) -> None:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        names = [t for t in await admin.list_topics() if t.startswith(prefix)]
        if names:
            await admin.delete_topics(names)
    finally:
        await admin.close()


async def topic_records(bootstrap: str, prefix: str) -> dict[str, int]:
    """Sum of end offsets of every topic whose name starts with `prefix` (diagnostics, changelog sizes)."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.structs import TopicPartition

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        names = sorted(t for t in await admin.list_topics() if t.startswith(prefix))
        meta = await admin.describe_topics(names) if names else []
    finally:
        await admin.close()
    if not meta:  # (aiokafka's stop right after start raises CancelledError: its reset task never ran)
        return {}
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        out = {}
        for m in meta:
            tps = [TopicPartition(m["topic"], p["partition"]) for p in m.get("partitions", [])]
            out[m["topic"]] = sum((await consumer.end_offsets(tps)).values()) if tps else 0
        return out
    finally:
        await consumer.stop()


async def produce_lines(bootstrap: str, topic: str, lines: list[str], partitions: int) -> float:
    """Write the lines (no key) round-robin over the partitions; returns seconds taken."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        linger_ms=20,
        acks="all",
        max_batch_size=512 * 1024,
        max_request_size=8 * 1024 * 1024,
    )
    await producer.start()
    began = time.monotonic()
    try:
        pending = []
        for i, line in enumerate(lines):
            pending.append(await producer.send(topic, value=line.encode(), partition=i % partitions))
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
        await producer.flush()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return time.monotonic() - began


async def produce_keyed(bootstrap: str, topic: str, records: Sequence[tuple[bytes, bytes, int]]) -> None:
    """Write (key, value, timestamp) records, partitioned by key, in batches of 20,000 awaited sends."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, max_batch_size=512 * 1024)
    await producer.start()
    try:
        pending = []
        for key, value, timestamp in records:
            pending.append(await producer.send(topic, value, key=key, timestamp_ms=timestamp))
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
        await producer.flush()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()


def _build_native(tree: Path) -> None:
    """Compile the tree's C extensions in place (the worktree has no install) as its `setup.py` would: a baseline
    without them runs the pure-Python fallbacks and looks slower than it is. That includes the source hash
    (`SOURCE_SHA256`): a tree that checks it (streamlet.kafka.native_modules) refuses a module built without it."""
    if (tree / "streamlet" / "_compiled.py").exists():  # setup.py builds the C and the mypyc modules as installed
        subprocess.run([str(LIB_PY), "setup.py", "-q", "build_ext", "--inplace"], cwd=tree, check=True)
    else:
        _compile_c(tree)
    # the tree's own loader (where it has one) must take what was built, or the baseline would run pure Python
    subprocess.run(
        [str(LIB_PY), "-c", _NATIVE_CHECK], env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree, check=True
    )


def _compile_c(tree: Path) -> None:
    """The C files of a tree from before `setup.py` built mypyc modules, compiled by hand with its flags and hash."""
    import hashlib
    import sysconfig

    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    flags = [*str(sysconfig.get_config_var("CFLAGS")).split(), *str(sysconfig.get_config_var("CCSHARED")).split()]
    for source in sorted((tree / "streamlet" / "_native").glob("*.c")):
        target = tree / "streamlet" / f"_{source.stem}{suffix}"
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        command = [
            *str(sysconfig.get_config_var("CC")).split(),
            "-shared",
            *flags,
            "-O2",
            f'-DSOURCE_SHA256="{digest}"',
        ]
        command += [f"-I{sysconfig.get_paths()['include']}", str(source), "-o", str(target)]
        subprocess.run(command, check=True)


_NATIVE_CHECK = """
import sys
from pathlib import Path
try:
    from streamlet.kafka.native_modules import load_native
except ImportError:
    sys.exit(0)  # a tree from before the source hash: it imports whatever is built
refused = [
    name
    for name, source in (
        ("streamlet._record_batch", "record_batch.c"),
        ("streamlet._record_encoder", "record_encoder.c"),
    )
    if Path("streamlet/_native", source).is_file() and load_native(name, source) is None
]
if refused:
    sys.exit(f"the baseline's C extensions were refused: {refused}")
try:
    from streamlet import _compiled
except ImportError:
    sys.exit(0)
reasons = _compiled.from_source({})[1]
if reasons:
    sys.exit(f"the baseline's mypyc modules would not be used: {reasons}")
"""


def baseline_worktree(rev: str) -> tuple[str, Path]:
    """(short sha, tree): git revision `rev` checked out in a detached worktree under WORK (reused if there), whose
    streamlet a baseline peer imports (PYTHONPATH=tree, cwd=tree); exits if another streamlet shadows it."""
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev], check=True, capture_output=True, text=True
    ).stdout.strip()
    tree = WORK / f"baseline-{sha}"
    if not tree.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), sha], check=True)
    _build_native(tree)
    where = subprocess.run(
        [str(LIB_PY), "-c", "import streamlet; print(streamlet.__file__)"],
        env={**os.environ, "PYTHONPATH": str(tree)},
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not where.startswith(str(tree)):
        raise SystemExit(f"the baseline worktree's streamlet is shadowed by {where}")
    return sha, tree


# --------------------------------------------------------------------------------------------------------
# Processes


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    started: float  # time.monotonic() at launch

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, n: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


async def task_owners(admin: Any, group: str, repartition: str) -> dict[int, str]:
    """Task 1_p -> the client that owns it now (client id without its thread suffix), from DescribeGroups."""
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

    owners: dict[int, str] = {}
    for response in await admin.describe_consumer_groups([group]):
        for described in response.groups:
            for member in described[5]:  # (error, group, state, protocol type, protocol, members, ...)
                client_id, assignment = member[-4], member[-1]
                if not assignment:
                    continue
                client = client_id.split("-StreamThread-")[0]
                for topic, partitions in ConsumerProtocolMemberAssignment.decode(assignment).assignment:
                    if topic == repartition:
                        for p in partitions:
                            owners[p] = client
    return owners


async def sample_owners(
    admin: Any, group: str, repartition: str, stop: asyncio.Event, samples: list[tuple[float, dict[int, str]]], tag: str
) -> None:
    """Until `stop`: (time, task 1_p -> owner) every 0.5 s, the same way for every peer."""
    while not stop.is_set():
        try:
            samples.append((time.time(), await task_owners(admin, group, repartition)))
        except Exception as exc:  # a rebalance in progress: no assignment to read this time
            log(f"{tag}: describe group: {exc!r}")
        await asyncio.sleep(0.5)


SYNCED = re.compile(r"Successfully synced group in generation Generation\{generationId=(\d+)")


def highest_generation(procs: list[Proc]) -> int:
    """The highest group generation any client has logged so far (0: none): Kafka's consumer and streamlet's
    group membership log the same line, so rebalances count the same way for every peer."""
    generations = [0]
    for proc in procs:
        if proc.log_path.exists():
            generations += [int(g) for g in SYNCED.findall(proc.log_path.read_text(errors="replace"))]
    return max(generations)


def spawn(name: str, cmd: list[str], log_path: Path, *, env: dict[str, str] | None = None, cwd: Path = ROOT) -> Proc:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    out = open(log_path, "wb")  # noqa: SIM115 (owned by the child)
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", **(env or {})}
    popen = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    out.close()
    return Proc(name, popen, log_path, time.monotonic())


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid_dir: Path) -> list[str]:
    """Fields 3.. of /proc/PID/stat (after the command name, which may hold spaces)."""
    return (pid_dir / "stat").read_text().rsplit(")", 1)[1].split()


def _group_members(pgids: Collection[int]) -> Iterator[tuple[Path, list[str]]]:
    """(/proc/PID, its stat fields) of each live process in one of the process groups `pgids`: one pass over /proc."""
    for pid_dir in Path("/proc").glob("[0-9]*"):
        try:
            fields = _stat(pid_dir)
            if int(fields[2]) in pgids:  # field 5 of stat: the process group
                yield pid_dir, fields
        except (OSError, IndexError, ValueError):
            continue


def group_memory_mib(pgid: int, field: str = "VmHWM", *, total: bool = False) -> float | None:
    """Largest `field` (VmHWM: peak RSS, VmRSS: current) among the live processes of process group `pgid`, or
    with `total` their sum (pages a fork shares count once per process: an upper bound), in MiB (Linux only)."""
    largest = []
    for pid_dir, _ in _group_members({pgid}):
        try:
            for line in (pid_dir / "status").read_text().splitlines():
                if line.startswith(field + ":"):
                    largest.append(int(line.split()[1]) / 1024)
        except (OSError, IndexError, ValueError):
            continue
    return round(sum(largest) if total else max(largest), 1) if largest else None


def peak_rss_mib(proc: Proc, *, total: bool = False) -> float | None:
    """Peak RSS of the largest process of `proc`'s process group (spawn starts each in a group of its own), or
    with `total` the sum of its processes' peaks."""
    return group_memory_mib(proc.popen.pid, total=total)


def group_cpu_s(pgids: Collection[int]) -> float:
    """CPU seconds (user + system) used so far by the live processes of the process groups `pgids`, with their
    waited-for children (Linux only; 0.0 elsewhere)."""
    ticks = sum(sum(int(f) for f in fields[11:15]) for _, fields in _group_members(pgids))  # utime .. cstime
    return ticks / _CLK_TCK


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) used so far by one process, or None if it is gone."""
    try:
        fields = _stat(Path(f"/proc/{pid}"))
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def listener_pid(bootstrap: str) -> int | None:
    """The local process listening on the first bootstrap server's port (the broker), or None (a remote
    broker, or not Linux): its CPU time is part of what a peer costs."""
    port = int(bootstrap.split(",")[0].rsplit(":", 1)[1])
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:  # LISTEN on that port
                inodes.add(f"socket:[{cols[9]}]")
    if not inodes:
        return None
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) in inodes for fd in fd_dir.iterdir()):
                return int(fd_dir.parent.name)
        except OSError:
            continue
    return None


class CpuSampler:
    """CPU seconds of a peer's process groups and of the broker, sampled every `every_s`, so that the CPU of an
    interval that is only known afterwards (first record in -> last count out) can be read back."""

    def __init__(self, pgids: list[int], broker_pid: int | None, every_s: float = 0.25) -> None:
        self.pgids, self.broker_pid, self.every_s = pgids, broker_pid, every_s
        self.samples: list[tuple[float, float, float | None]] = []  # (monotonic, peer CPU s, broker CPU s)

    def sample(self) -> tuple[float, float, float | None]:
        taken = (
            time.monotonic(),
            group_cpu_s(self.pgids),
            process_cpu_s(self.broker_pid) if self.broker_pid else None,
        )
        self.samples.append(taken)
        return taken

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.every_s)

    def at(self, moment: float) -> tuple[float, float, float | None]:
        """The last sample taken at or before `moment` (the first one if none was)."""
        earlier = [s for s in self.samples if s[0] <= moment]
        return earlier[-1] if earlier else self.samples[0]


def stop(proc: Proc, grace: float = 30.0) -> None:
    """SIGTERM to the process group we created for it, SIGKILL after `grace` seconds."""
    if proc.popen.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.popen.pid, signal.SIGTERM)
        try:
            proc.popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    # the leader may be gone while children (a JVM under pyspark) remain in the group
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.popen.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.popen.wait(timeout=10)


# --------------------------------------------------------------------------------------------------------
# The output watcher: latest count per word, compared incrementally with the expected counts


@dataclass
class WatchResult:
    ok: bool
    first_output: float | None  # time.monotonic() of the first output record seen
    done: float | None  # time.monotonic() when the latest counts first equalled the expected ones
    matched_words: int  # words whose latest count is the expected one
    counted_words: int  # sum of the latest counts of expected words, capped at the expected count (progress)
    output_records: int
    wrong: list[str] = field(default_factory=list)
    reason: str = ""


class OutputWatcher:
    """Reads an output topic (word -> int64 BE) from the beginning and tracks when it matches `expected`.

    Start it before the peer so nothing is missed; the comparison is incremental (O(1) per record).
    """

    def __init__(self, bootstrap: str, topic: str, expected: dict[str, int]) -> None:
        self.bootstrap, self.topic, self.expected = bootstrap, topic, expected
        self.total = sum(expected.values())
        self.latest: dict[str, int] = {}
        self.matched = 0
        self.extra = 0  # words with a count that are not expected
        self.progress = 0
        self.records = 0
        self.first: float | None = None
        self._consumer: Any = None

    async def start(self) -> None:
        from aiokafka import AIOKafkaConsumer

        self._consumer = AIOKafkaConsumer(
            self.topic,
            bootstrap_servers=self.bootstrap,
            group_id=None,
            auto_offset_reset="earliest",
            fetch_max_bytes=16 * 1024 * 1024,
            max_partition_fetch_bytes=4 * 1024 * 1024,
        )
        await self._consumer.start()

    def _apply(self, key: bytes | None, value: bytes | None) -> None:
        word = key.decode() if key is not None else None
        count = struct.unpack(">q", value)[0] if value is not None and len(value) == 8 else None
        exp = self.expected.get(word)  # type: ignore[arg-type]
        old = self.latest.get(word)  # type: ignore[arg-type]
        if exp is None:
            if old is None:
                self.extra += 1
            self.latest[word] = count  # type: ignore[index]
            return
        if old == exp:
            self.matched -= 1
        self.progress += min(count or 0, exp) - min(old or 0, exp)
        self.latest[word] = count  # type: ignore[index,assignment]
        if count == exp:
            self.matched += 1

    async def wait(self, timeout: float, alive: Any = None, idle_grace: float = 0.0) -> WatchResult:
        """Until all counts match, `timeout` seconds pass, or `alive()` turns False."""
        deadline = time.monotonic() + timeout
        n = len(self.expected)
        reason = ""
        while True:
            now = time.monotonic()
            if now >= deadline:
                reason = f"timed out after {timeout:.0f}s"
                break
            if alive is not None and not alive():
                reason = "the peer process exited"
                # drain what it wrote before giving up
                batch = await self._consumer.getmany(timeout_ms=2000)
                for records in batch.values():
                    for r in records:
                        self._apply(r.key, r.value)
                if self.matched == n and self.extra == 0:
                    reason = ""
                    return self._result(True, time.monotonic())
                break
            batch = await self._consumer.getmany(timeout_ms=200, max_records=50_000)
            got = time.monotonic()
            for records in batch.values():
                if records and self.first is None:
                    self.first = got
                self.records += len(records)
                for r in records:
                    self._apply(r.key, r.value)
            if self.matched == n and self.extra == 0:
                return self._result(True, got)
        res = self._result(False, None)
        res.reason = reason
        return res

    def _result(self, ok: bool, done: float | None) -> WatchResult:
        wrong = (
            []
            if ok
            else sorted(
                (w for w in self.expected.keys() | self.latest.keys() if self.latest.get(w) != self.expected.get(w)),
                key=lambda w: -(self.expected.get(w) or 0),
            )[:8]
        )
        return WatchResult(ok, self.first, done, self.matched, self.progress, self.records, wrong)

    async def close(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()


# --------------------------------------------------------------------------------------------------------
# Results


def machine_info() -> dict[str, Any]:
    import importlib.metadata as md

    def ver(pkg: str) -> str:
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return "-"

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()
    git = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--", "streamlet", "examples"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    cpu = ""
    with contextlib.suppress(OSError):
        cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "")
    return {
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "java": java[0] if java else "?",
        "kafka": selected_kafka_version(),
        "kafka_streams_peers": KAFKA_STREAMS_VERSION,
        "loadavg_at_end": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "streamlet": ver("streamlet"),
        "commit": git + (" (streamlet/ or examples/ modified)" if dirty else ""),
        "aiokafka": ver("aiokafka"),
        "rocksdict": ver("rocksdict"),
    }


def write_result(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine_info(), **payload}, indent=2, default=str) + "\n")
    return path


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[("" if c is None else str(c)) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)
