"""WordCount worker processes (`streamlet worker examples.wordcount.app:app`) for e2e and chaos tests."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from streamlet.kafka import connect
from tests.support.kafka import KafkaTestCluster, unique_name

ROOT = Path(__file__).resolve().parents[2]
DROPPED_DIRTY = re.compile(r"^.*closing [1-9][0-9]* active tasks (?:as lost|without committing).*$", re.MULTILINE)
# Every Workers made since the current test began: a failed test's report shows their logs' tails (conftest)
MADE_IN_TEST: list[Workers] = []


class Workers:
    """Worker processes of one application; every process is stopped when the test ends."""

    def __init__(
        self,
        bootstrap: str,
        source: str,
        sink: str,
        app_id: str,
        root: Path,
        config: dict[str, str] | None = None,
        target: str = "examples.wordcount.app:app",
        env: dict[str, str] | None = None,
    ) -> None:
        self.bootstrap, self.root, self.target, self.application_id = bootstrap, root, target, app_id
        self.config = {"commit_interval_ms": "500", **(config or {})}
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "WORDCOUNT_INPUT_TOPIC": source,
            "WORDCOUNT_OUTPUT_TOPIC": sink,
            "WORDCOUNT_APPLICATION_ID": app_id,
            **(env or {}),
        }
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self._terminating: set[int] = set()
        MADE_IN_TEST.append(self)

    def state_dir(self, index: int) -> Path:
        return self.root / f"state-{index}"

    def start(self, index: int, threads: int = 2, **config: str) -> None:
        """Start worker `index`; `config` adds `--config` entries for this worker only."""
        log = open(self.root / f"worker-{index}.log", "ab")  # noqa: SIM115 (closed with the process)
        cmd = [
            sys.executable,
            "-m",
            "streamlet.cli",
            "worker",
            self.target,
            "--threads",
            str(threads),
            "--state-dir",
            str(self.state_dir(index)),
            "--bootstrap-servers",
            self.bootstrap,
        ]
        for key, value in {**self.config, **config}.items():
            cmd += ["--config", f"{key}={value}"]
        self.procs[index] = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)

    def signal(self, index: int, sig: signal.Signals) -> None:
        self.procs[index].send_signal(sig)

    def kill9(self, index: int) -> None:
        self.procs[index].send_signal(signal.SIGKILL)
        self.procs[index].wait(timeout=30)

    def stop(self, index: int, timeout: float = 60) -> int:
        """SIGTERM (a clean shutdown: commit, flush, checkpoint, leave the group); returns the exit code.

        Sent once: a second SIGTERM that lands after the worker removed its handler, at the very end of its
        shutdown, would kill it (-15) although it stopped cleanly.
        """
        proc = self.procs[index]
        if proc.poll() is None and index not in self._terminating:
            proc.send_signal(signal.SIGCONT)  # a paused worker cannot handle SIGTERM
            proc.send_signal(signal.SIGTERM)
        self._terminating.add(index)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()
        finally:
            self._terminating.discard(index)

    async def terminate(self, index: int, timeout: float = 60) -> int:
        """`stop` without blocking the event loop (the test's input keeps flowing while the worker shuts down)."""
        proc = self.procs[index]
        if proc.poll() is None and index not in self._terminating:
            proc.send_signal(signal.SIGCONT)
            proc.send_signal(signal.SIGTERM)
        self._terminating.add(index)
        try:
            deadline = asyncio.get_running_loop().time() + timeout
            while proc.poll() is None and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.1)
            if proc.poll() is None:
                proc.kill()
            return proc.wait()
        finally:
            self._terminating.discard(index)

    def alive(self, index: int) -> bool:
        return self.procs[index].poll() is None

    def stop_all(self) -> dict[int, int]:
        for index, proc in self.procs.items():
            if proc.poll() is None and index not in self._terminating:
                proc.send_signal(signal.SIGCONT)
                proc.send_signal(signal.SIGTERM)
                self._terminating.add(index)
        return {index: self.stop(index) for index in self.procs}

    def log(self, index: int) -> str:
        path = self.root / f"worker-{index}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def log_tails(self, lines: int) -> list[tuple[str, str]]:
        """(title, last `lines` lines) of each worker's log that exists: what a failed test shows of them."""
        tails = []
        for index in sorted(self.procs):
            text = self.log(index)
            if text:
                tail = "\n".join(text.splitlines()[-lines:])
                tails.append((f"{self.application_id} worker-{index}.log, last {lines} lines", tail))
        return tails

    def dropped_tasks_dirty(self, index: int) -> list[str]:
        """The worker's log lines saying a thread closed its active tasks without flushing or committing.

        A zombie takes the lost path when its stall watch or heartbeat notices first, and the migrated path
        when a commit it was in the middle of when it froze is refused first: both drop the tasks dirty.
        """
        return DROPPED_DIRTY.findall(self.log(index))

    def assignments(self, index: int) -> int:
        """How many assignments the worker's threads have logged so far (over all its runs)."""
        return self.log(index).count("] assigned active ")

    async def wait_assigned(self, index: int, *, more_than: int, timeout: float = 60) -> None:
        """Until the worker logs an assignment beyond `more_than` (a restarted worker has joined the group)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self.assignments(index) <= more_than:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"worker {index} got no assignment within {timeout} s")
            await asyncio.sleep(0.2)


async def wordcount_workers(
    kafka: KafkaTestCluster,
    root: Path,
    *,
    name: str = "streams-wordcount",
    input_topic: str = "streams-plaintext-input",
    output_topic: str = "streams-wordcount-output",
    source_config: dict[str, str] | None = None,
    config: dict[str, str] | None = None,
    target: str = "examples.wordcount.app:app",
) -> tuple[str, str, Workers]:
    """Fresh 6-partition input and output topics, a fresh application id `<name>-...` whose internal topics the
    session deletes, and the `Workers` of that application (none started) under `root`."""
    source = await kafka.create_topic(input_topic, partitions=6, config=source_config)
    sink = await kafka.create_topic(output_topic, partitions=6)
    app_id = unique_name(name)
    for suffix in ("counts-store-repartition", "counts-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    return source, sink, Workers(kafka.bootstrap_servers, source, sink, app_id, root, config, target=target)


def running(pid: int) -> bool:
    """The process runs (a zombie waiting for its parent to reap it counts as stopped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def produce_steadily(
    kafka: KafkaTestCluster, topic: str, lines: Sequence[str], *, per_second: int, batch: int = 20
) -> None:
    """Produce `lines` at a bounded rate (batches of `batch` lines), as a steady input stream."""
    for start in range(0, len(lines), batch):
        chunk = lines[start : start + batch]
        await kafka.produce(topic, [(None, line.encode()) for line in chunk])
        await asyncio.sleep(len(chunk) / per_second)


class SteadyInput:
    """Text lines produced at a bounded rate (batches of `batch`, each acknowledged before the next) from `run()`
    until `stop()`; `lines` holds every line produced, in order, for an independent count."""

    def __init__(
        self, kafka: KafkaTestCluster, topic: str, text: Sequence[str], *, per_second: int, batch: int = 20
    ) -> None:
        self.kafka, self.topic, self.text, self.per_second, self.batch = kafka, topic, text, per_second, batch
        self.lines: list[str] = []
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"steady-input-{self.topic}")

    async def _run(self) -> None:
        # acks=all and idempotent: on a replicated cluster a line acknowledged survives its leader's kill -9 and
        # is written once although the send is retried on the new leader, so `lines` stays the input's truth
        producer = connect.producer(self.kafka.cluster, linger_ms=5, acks="all", enable_idempotence=True)
        await producer.start()
        try:
            lines = itertools.cycle(self.text)
            while not self._stopping.is_set():
                chunk = list(itertools.islice(lines, self.batch))
                futures = [await producer.send(self.topic, value=line.encode()) for line in chunk]
                for fut in futures:
                    await fut
                self.lines.extend(chunk)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), len(chunk) / self.per_second)
        finally:
            await producer.stop()

    async def stop(self) -> list[str]:
        """Stop after the batch in flight; every line returned was acknowledged by the broker. Idempotent."""
        self._stopping.set()
        if self._task is not None:
            task, self._task = self._task, None
            await task
        return self.lines


def pyspark_verify_wordcount(bootstrap: str, source: str, sink: str) -> subprocess.CompletedProcess[str]:
    """`streamlet verify wordcount`: PySpark's batch count of `source` against the latest counts in `sink`
    (read_committed); exit code 0 when every word agrees."""
    return subprocess.run(
        [
            sys.executable,
            *("-m", "streamlet.cli", "verify", "wordcount", "--bootstrap-servers", bootstrap),
            *("--input-topic", source, "--output-topic", sink),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
