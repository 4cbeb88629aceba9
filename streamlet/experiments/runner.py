"""ExperimentRunner: runs a scenario on real `streamlet worker` processes and records it in a run directory.

It starts a broker when none is given, creates the run's topics, tails `<application_id>-assignments` into
`assignments.jsonl` and `<application_id>-metrics` into `metrics.jsonl`, produces the input at the scenario's
rate, walks the timeline with bounded waits, and finally checks the output (WordCount: exact latest counts).
Every process it started is stopped on the way out, whether the run succeeded, failed or was interrupted
(Ctrl-C cancels the run's task, so the `finally` blocks run): an experiment that leaves workers behind
poisons the next one's group.

Run directory:
    scenario.toml          the scenario as given
    run.json               names, topics, the steps with their times and outcomes, the verification, status
    assignments.jsonl      one assignment-history event per line, in order
    metrics.jsonl          the clients' metrics events (one per client every metrics_interval_ms), in order
    report.md              `streamlet experiment report` of this run (written by `experiment run`)
    clients/<name>/        worker.log, pid, state/ (the client's state dir)
    broker/                the broker this run started, if any
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from aiokafka.structs import TopicPartition

from streamlet.assignment.history import assignment_history_topic
from streamlet.config import ENVIRONMENT_VARIABLES, cluster_from_environment
from streamlet.errors import StreamletError
from streamlet.experiments.inputs import count_differences, decode_count, expected_counts, input_lines
from streamlet.experiments.scenario import STOP_TIMEOUT_S, Scenario, ScenarioError, Step, config_text, load_problem
from streamlet.kafka import connect
from streamlet.kafka.broker import LocalBroker
from streamlet.kafka.connect import Cluster
from streamlet.kafka.security import SECURITY_DEFAULTS
from streamlet.kafka.topics import InternalTopicManager, TopicSpec
from streamlet.runtime.metrics_event import metrics_topic
from streamlet.targets import load_target

log = logging.getLogger("streamlet.experiments")

RUN_FORMAT_VERSION = 1
_STOP_TIMEOUT = STOP_TIMEOUT_S  # scenario.load_problem counts a stop at this
_RUNNING_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*\] task (\d+_\d+) restored, now RUNNING", re.M)


class ExperimentError(Exception):
    """A step did not complete (timeout, a worker died); the run stops and reports it."""


def check_app(target: str, cwd: Path) -> None:
    """The app must be importable before anything starts (a missing app is a scenario error, not a hang)."""
    previous = os.getcwd()
    try:
        os.chdir(cwd)
        load_target(target)
    except StreamletError as exc:
        raise ScenarioError(f"[app] target {target!r}: {exc}") from None
    finally:
        os.chdir(previous)


def _die_with_parent() -> None:
    """In the worker before exec: SIGTERM it when the runner dies, even by SIGKILL (Linux prctl)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@dataclass
class Worker:
    """One client: a `streamlet worker` process with its own state dir and process id."""

    name: str
    process_id: uuid.UUID
    threads: int
    directory: Path
    proc: subprocess.Popen[bytes] | None = None
    paused: bool = False

    @property
    def log_path(self) -> Path:
        return self.directory / "worker.log"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def running_since(self, since_ms: int) -> set[str]:
        """Tasks this worker logged as restored and RUNNING at or after `since_ms` (epoch ms, local clock)."""
        found: set[str] = set()
        for stamp, task in _RUNNING_LINE.findall(self.log_text()):
            at = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000
            if at >= since_ms - 1000:  # log stamps have ms precision; the event's clock is the same machine's
                found.add(task)
        return found


@dataclass
class RunRecord:
    """What run.json holds; written after every step so an interrupted run still says how far it got."""

    scenario: str
    assignor: str
    application_id: str
    input_topic: str
    output_topic: str
    protocol: str = ""  # the clients' rebalance protocol (run dirs of older runners have none)
    bootstrap_servers: str = ""
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    status: str = "running"
    error: str | None = None
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    verification: dict[str, Any] | None = None
    produced: int = 0
    #: events recorded when the timeline and the verification ended; later ones are shutdown rebalances
    timeline_events: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"format": RUN_FORMAT_VERSION, **self.__dict__}


class InputProducer:
    """Produces the input lines at a rate that a `rate` step may change (0 pauses)."""

    def __init__(self, cluster: Cluster, topic: str, lines: list[str], rate: float) -> None:
        self.cluster, self.topic, self.lines, self.rate = cluster, topic, lines, rate
        self.sent = 0
        self.done = asyncio.Event()

    async def run(self) -> None:
        producer = connect.producer(self.cluster, linger_ms=10, acks="all")
        await connect.start(producer, self.cluster, "the experiment's input producer")
        try:
            while self.sent < len(self.lines):
                if self.rate <= 0:
                    await asyncio.sleep(0.1)
                    continue
                batch = self.lines[self.sent : self.sent + max(1, int(self.rate / 10))]
                began = time.monotonic()
                for line in batch:
                    await producer.send(self.topic, value=line.encode())
                await producer.flush()
                self.sent += len(batch)
                await asyncio.sleep(max(0.0, len(batch) / self.rate - (time.monotonic() - began)))
            self.done.set()
        finally:
            await producer.stop()


class HistoryCollector:
    """Tails a one-partition event topic into a JSON-lines file and keeps the events (the assignments are
    what the timeline's waits look at)."""

    def __init__(self, cluster: Cluster, topic: str, path: Path) -> None:
        self.cluster, self.topic, self.path = cluster, topic, path
        self.events: list[dict[str, Any]] = []
        self.last_event_at = time.monotonic()

    async def run(self) -> None:
        consumer = connect.consumer(self.cluster, enable_auto_commit=False)
        await connect.start(consumer, self.cluster, f"the collector of {self.topic}")
        try:
            tp = TopicPartition(self.topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            with self.path.open("a", encoding="utf-8") as out:
                while True:
                    batch = await consumer.getmany(timeout_ms=200)
                    for record in batch.get(tp, []):
                        raw = record.value.decode(errors="replace") if record.value else ""
                        out.write(raw.replace("\n", " ") + "\n")
                        out.flush()
                        try:
                            event = json.loads(raw)
                        except ValueError:
                            continue
                        if isinstance(event, dict):
                            self.events.append(event)
                            self.last_event_at = time.monotonic()
        finally:
            await consumer.stop()


class ExperimentRunner:
    """Runs one scenario into `run_dir` (see the module docstring)."""

    def __init__(
        self,
        scenario: Scenario,
        run_dir: Path,
        *,
        bootstrap_servers: str | None = None,
        cwd: Path | None = None,
        python: str = sys.executable,
    ) -> None:
        self.scenario = scenario
        self.run_dir = run_dir
        self.cwd = (cwd or Path.cwd()).resolve()
        self.python = python
        self._bootstrap = bootstrap_servers
        stamp = time.strftime("%Y%m%d-%H%M%S")
        run_id = f"{scenario.name}-{stamp}-{uuid.uuid4().hex[:4]}"
        self.record = RunRecord(
            scenario=scenario.name,
            assignor=scenario.app.task_assignor,
            protocol=scenario.app.rebalance_protocol,
            application_id=run_id,
            input_topic=f"{run_id}-input",
            output_topic=f"{run_id}-output",
        )
        self.workers: dict[str, Worker] = {}
        self.lines = input_lines(scenario.input)
        self._broker: LocalBroker | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.collector: HistoryCollector | None = None
        self.metrics: HistoryCollector | None = None
        self.producer: InputProducer | None = None

    # ---- the run ----------------------------------------------------------------------------------------

    async def run(self) -> RunRecord:
        """Run the scenario; returns the record (status "passed", "failed" or "interrupted")."""
        check_app(self.scenario.app.target, self.cwd)
        problem = load_problem(self.scenario)
        if problem:
            log.warning("scenario %s: %s", self.scenario.name, problem)
        if self.run_dir.exists() and any(self.run_dir.iterdir()):
            raise ScenarioError(f"run directory {self.run_dir} is not empty: give a new one")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.scenario.source is not None:
            (self.run_dir / "scenario.toml").write_bytes(self.scenario.source.read_bytes())
        try:
            await self._run()
            self.record.status = "passed" if (self.record.verification or {}).get("ok", True) else "failed"
        except asyncio.CancelledError:
            self.record.status, self.record.error = "interrupted", "interrupted (Ctrl-C or SIGTERM)"
            raise
        except Exception as exc:
            self.record.status, self.record.error = "failed", f"{type(exc).__name__}: {exc}"
            log.error("experiment failed: %s", exc)
        finally:
            await self._shutdown()
            self.record.ended_at = time.time()
            self._save()
        return self.record

    async def _run(self) -> None:
        cluster = await self._ensure_broker()
        self.record.bootstrap_servers = cluster.bootstrap_servers
        await self._create_topics(cluster)
        self._save()
        self.collector = HistoryCollector(
            cluster, assignment_history_topic(self.record.application_id), self.run_dir / "assignments.jsonl"
        )
        self.producer = InputProducer(cluster, self.record.input_topic, self.lines, self.scenario.input.rate)
        producing = asyncio.create_task(self.producer.run(), name="input-producer")
        self.metrics = HistoryCollector(
            cluster, metrics_topic(self.record.application_id), self.run_dir / "metrics.jsonl"
        )
        self._tasks = [
            asyncio.create_task(self.collector.run(), name="history-collector"),
            asyncio.create_task(self.metrics.run(), name="metrics-collector"),
            producing,
        ]
        for step in self.scenario.steps:
            await self._step(step)
        await self._finish_input(producing)
        if self.scenario.app.verify == "wordcount":
            self.record.verification = await self._verify_wordcount(cluster)
        self.record.timeline_events = len(self.collector.events)

    async def _step(self, step: Step) -> None:
        began = time.time()
        entry: dict[str, Any] = {"index": step.index, "action": step.action, "describe": step.describe()}
        entry["started_at"] = began
        entry["event_index"] = len(self.collector.events) if self.collector else 0
        self.record.steps.append(entry)
        self._save()
        log.info("step %d: %s", step.index, step.describe())
        try:
            await self._do(step)
        except BaseException as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            entry["ended_at"] = time.time()
            entry["events_after"] = len(self.collector.events) if self.collector else 0
            self._save()
        self._check_workers_alive(step)

    async def _do(self, step: Step) -> None:
        if step.action == "start":
            for name in step.clients:
                self._start_worker(name, step.threads or 2)
        elif step.action == "add":
            self._start_worker(step.client, step.threads or 2)
        elif step.action == "stop":
            await self._stop_worker(self.workers[step.client], step.signal)
        elif step.action == "replace":
            old = self.workers[step.client]
            await self._stop_worker(old, step.signal)
            self._start_worker(step.by, step.threads or old.threads)
        elif step.action == "pause":
            self._signal(self.workers[step.client], signal.SIGSTOP)
            self.workers[step.client].paused = True
            if step.seconds is not None:
                await asyncio.sleep(step.seconds)
                self._signal(self.workers[step.client], signal.SIGCONT)
                self.workers[step.client].paused = False
        elif step.action == "resume":
            self._signal(self.workers[step.client], signal.SIGCONT)
            self.workers[step.client].paused = False
        elif step.action == "rate":
            assert self.producer is not None and step.rate is not None
            self.producer.rate = step.rate
        elif step.action == "sleep":
            await asyncio.sleep(step.seconds or 0.0)
        elif step.action in ("wait_stable", "wait_converged"):
            await self._wait(step, converged=step.action == "wait_converged")
        else:  # parse_scenario refuses unknown actions; this is a bug guard
            raise ScenarioError(f"step {step.index}: unknown action {step.action!r}")

    # ---- waits ------------------------------------------------------------------------------------------

    def stable_problem(self, converged: bool) -> str | None:
        """Why the group is not (yet) stable/converged, or None. Stable: the last event covers exactly the
        running clients with their thread counts. Converged also: no follow-up rebalance scheduled, and every
        stateful active task RUNNING (still running where it ran, or logged restored since the event)."""
        events = self.collector.events if self.collector else []
        if not events:
            return "no assignment event yet"
        last = events[-1]
        running = {str(w.process_id): w for w in self.workers.values() if w.alive() and not w.paused}
        clients = {str(c.get("process_id")): c for c in last.get("clients", [])}
        if set(clients) != set(running):
            names = {str(w.process_id): w.name for w in self.workers.values()}
            got = sorted(names.get(p, p[:8]) for p in clients)
            want = sorted(w.name for w in running.values())
            return f"last event (generation {last.get('generation')}) has clients {got}, expected {want}"
        for pid, worker in running.items():
            if clients[pid].get("capacity") != worker.threads:
                return f"client {worker.name} has capacity {clients[pid].get('capacity')}, expected {worker.threads}"
        if not converged:
            return None
        if last.get("followup_scheduled"):
            return f"generation {last.get('generation')} scheduled a follow-up (probing) rebalance"
        stateful = set(last.get("stateful_tasks", []))
        for pid, worker in running.items():
            client = clients[pid]
            lags = client.get("lags", {})
            fresh = [t for t in client.get("active", []) if t in stateful and lags.get(t) != -2]
            if fresh:
                since = int(last.get("timestamp_ms", 0))
                missing = set(fresh) - worker.running_since(since) - self.running_in_metrics(pid, since)
                if missing:
                    return f"client {worker.name} is still restoring {sorted(missing)}"
        return None

    def running_in_metrics(self, process_id: str, since_ms: int) -> set[str]:
        """The tasks RUNNING in the client's latest metrics event, if that event is from `since_ms` or later.

        The worker log says when a task became RUNNING, and an event's lag of -2 that it was RUNNING there
        already; under cooperative rebalancing a task can run on through a later rebalance whose event reports
        it with its offset lag instead, and then only the client's own metrics say it is RUNNING.
        """
        events = self.metrics.events if self.metrics else []
        latest = next((e for e in reversed(events) if e.get("process_id") == process_id), None)
        if latest is None or int(latest.get("timestamp_ms", 0)) < since_ms:
            return set()
        tasks = latest.get("tasks", {})
        return {t for t, entry in tasks.items() if isinstance(entry, dict) and entry.get("state") == "RUNNING"}

    async def _wait(self, step: Step, *, converged: bool) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + step.timeout
        while True:
            problem = self.stable_problem(converged)
            quiet = time.monotonic() - (self.collector.last_event_at if self.collector else 0.0)
            if problem is None and quiet >= step.settle:
                return
            if loop.time() > deadline:
                what = "converge" if converged else "become stable"
                raise ExperimentError(
                    f"step {step.index} ({step.action}): the group did not {what} within {step.timeout:g}s: "
                    f"{problem or 'events kept coming'}"
                )
            self._check_workers_alive(step)
            await asyncio.sleep(0.3)

    def _check_workers_alive(self, step: Step) -> None:
        for worker in self.workers.values():
            if worker.proc is not None and not worker.alive() and not worker.directory.joinpath("stopped").exists():
                tail = worker.log_text()[-1500:]
                raise ExperimentError(
                    f"after step {step.index}: worker {worker.name} exited with {worker.proc.returncode}:\n{tail}"
                )

    async def _finish_input(self, producing: asyncio.Task[None]) -> None:
        """Wait (bounded) until every input line is produced; a producer that failed fails the run at once."""
        assert self.producer is not None
        remaining = len(self.lines) - self.producer.sent
        if remaining and self.producer.rate <= 0:
            raise ExperimentError(f"the rate is 0 with {remaining} input lines unsent: add a `rate` step")
        timeout = 60 + (remaining / self.producer.rate if remaining else 0)
        done = asyncio.ensure_future(self.producer.done.wait())
        try:
            await asyncio.wait([done, producing], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            done.cancel()
        if not self.producer.done.is_set():
            if producing.done() and not producing.cancelled() and producing.exception() is not None:
                raise ExperimentError(f"producing the input failed: {producing.exception()!r}")
            raise ExperimentError(f"the input was not all produced within {timeout:.0f}s")
        self.record.produced = self.producer.sent

    async def _verify_wordcount(self, cluster: Cluster) -> dict[str, Any]:
        """Wait until the output's latest counts equal the expected ones (bounded); say what differs if not."""
        timeout = 120.0 + len(self.lines) / 200  # the app may still be catching up with a large input
        expected = expected_counts(self.lines)
        partitions = self.scenario.input.output_partitions or self.scenario.input.partitions
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        got: dict[str, int] = {}
        while True:
            got = await read_latest_counts(cluster, self.record.output_topic, partitions)
            if got == expected or loop.time() > deadline:
                break
            await asyncio.sleep(1.0)
        differences = count_differences(expected, got)
        return {
            "ok": not differences,
            "kind": "wordcount",
            "words": len(expected),
            "lines": len(self.lines),
            "differences": len(differences),
            "sample": differences[:20],
        }

    # ---- processes --------------------------------------------------------------------------------------

    def _start_worker(self, name: str, threads: int) -> None:
        process_id = self.scenario.process_ids.get(name) or uuid.uuid4()
        directory = self.run_dir / "clients" / name
        state_dir = directory / "state"
        app_dir = state_dir / self.record.application_id
        app_dir.mkdir(parents=True, exist_ok=True)
        (app_dir / "kafka-streams-process-metadata").write_text(json.dumps({"processId": str(process_id)}))
        worker = Worker(name, process_id, threads, directory)
        cmd = [
            self.python,
            "-m",
            "streamlet.cli",
            "worker",
            self.scenario.app.target,
            "--threads",
            str(threads),
            "--state-dir",
            str(state_dir),
            "--bootstrap-servers",
            self.record.bootstrap_servers,
        ]
        for key, value in self.scenario.app.config.items():
            cmd += ["--config", f"{key}={config_text(value)}"]
        env = {**os.environ, **self._app_env()}
        if self._broker is not None:  # its own plaintext broker: no security settings meant for another cluster
            for name in SECURITY_DEFAULTS:
                env.pop(ENVIRONMENT_VARIABLES[name], None)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(self.cwd), os.environ.get("PYTHONPATH", "")) if p)
        with worker.log_path.open("ab") as out:
            worker.proc = subprocess.Popen(
                cmd,
                cwd=self.cwd,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C reaches the runner only; the runner stops its workers
                preexec_fn=_die_with_parent,
            )
        (directory / "pid").write_text(str(worker.proc.pid))
        self.workers[name] = worker
        self.record.clients[name] = {
            "process_id": str(process_id),
            "threads": threads,
            "pid": worker.proc.pid,
            "started_at": time.time(),
        }
        log.info("started client %s (process id %s, %d threads, pid %d)", name, process_id, threads, worker.proc.pid)

    def _app_env(self) -> dict[str, str]:
        values = {
            "input_topic": self.record.input_topic,
            "output_topic": self.record.output_topic,
            "application_id": self.record.application_id,
            "run_dir": str(self.run_dir),
        }
        return {key: value.format(**values) for key, value in self.scenario.app.env.items()}

    def _signal(self, worker: Worker, sig: signal.Signals) -> None:
        if worker.alive():
            assert worker.proc is not None
            worker.proc.send_signal(sig)

    async def _stop_worker(self, worker: Worker, how: str = "SIGTERM", timeout: float = _STOP_TIMEOUT) -> int | None:
        """SIGTERM (a clean shutdown) or SIGKILL; a worker that ignores SIGTERM is killed after `timeout`."""
        proc = worker.proc
        if proc is None:
            return None
        worker.directory.joinpath("stopped").write_text(how)
        if proc.poll() is None:
            if how == "SIGKILL":
                proc.kill()
            else:
                proc.send_signal(signal.SIGCONT)  # a paused worker cannot handle SIGTERM
                proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        worker.paused = False
        info = self.record.clients.get(worker.name, {})
        info.update({"stopped_at": time.time(), "stop": how, "exit_code": proc.returncode})
        return proc.returncode

    # ---- setup and teardown -----------------------------------------------------------------------------

    async def _ensure_broker(self) -> Cluster:
        """The cluster given (secured as the environment says: the workers inherit it), else a local broker."""
        if self._bootstrap:
            return cluster_from_environment(self._bootstrap)
        self._broker = LocalBroker(self.run_dir / "broker", die_with_parent=True)
        status = await asyncio.to_thread(self._broker.start)
        return Cluster(status.bootstrap_servers)

    async def _create_topics(self, cluster: Cluster) -> None:
        spec = self.scenario.input
        manager = InternalTopicManager(cluster, client_id="streamlet-experiment")
        await manager.start()
        try:
            await manager.ensure(
                [
                    TopicSpec(self.record.input_topic, spec.partitions),
                    TopicSpec(self.record.output_topic, spec.output_partitions or spec.partitions),
                    # created here so the collector can tail it from the start; the workers validate it
                    TopicSpec(assignment_history_topic(self.record.application_id), 1, {"cleanup.policy": "delete"}),
                    TopicSpec(metrics_topic(self.record.application_id), 1, {"cleanup.policy": "delete"}),
                ]
            )
        finally:
            await manager.close()

    async def _shutdown(self) -> None:
        """Stop every worker (all at once, bounded), then the background tasks, then the broker we started.

        Shielded: a second Ctrl-C while stopping does not leave half the processes running; it is
        re-raised once everything is stopped.
        """
        stopping = asyncio.ensure_future(self._stop_everything())
        interrupted = False
        while not stopping.done():
            try:
                await asyncio.shield(stopping)
            except asyncio.CancelledError:
                interrupted = True
        stopping.result()
        if interrupted:
            raise asyncio.CancelledError

    async def _stop_everything(self) -> None:
        await asyncio.gather(
            *(self._stop_worker(w) for w in self.workers.values() if w.alive()), return_exceptions=True
        )
        if self.collector is not None and self.collector.events:
            await asyncio.sleep(0.5)  # the last events of the shutdown rebalances
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        if self._broker is not None:
            await asyncio.to_thread(self._broker.stop)
            self._broker = None

    def _save(self) -> None:
        path = self.run_dir / "run.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.record.to_json(), indent=2, sort_keys=True))
        os.replace(tmp, path)


async def read_latest_counts(cluster: Cluster, topic: str, partitions: int) -> dict[str, int]:
    """The latest count per word in WordCount's output topic (a word always lands in one partition)."""
    consumer = connect.consumer(cluster, enable_auto_commit=False, auto_offset_reset="earliest")
    await connect.start(consumer, cluster, "the experiment's verifier")
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        latest: dict[str, int] = {}
        while not all([await consumer.position(tp) >= ends[tp] for tp in tps]):
            batch = await consumer.getmany(timeout_ms=500)
            for records in batch.values():
                for record in records:
                    count = decode_count(record.value)
                    if record.key is not None and count is not None:
                        latest[record.key.decode(errors="replace")] = count
        return latest
    finally:
        await consumer.stop()
