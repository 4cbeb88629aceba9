"""Seed 000's experiment on the real broker: a third client joins a stateful WordCount.

Two clients with the seed's process ids (2 stream threads each) run WordCount over 6 partitions with
`acceptable_recovery_lag=0` and a short probing interval; text is produced; then the client
`bbb83e43-...` joins. Kafka Streams' HighAvailabilityTaskAssignor must keep stateful tasks on caught-up
clients, give the newcomer at most `max_warmup_replicas` warmups, move tasks in follow-up (probing)
rebalances once warmups catch up, and converge to the round-robin assignment with no further follow-up.
The leader's log lines (Kafka Streams' format) are parsed to check each round.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.wordcount import SEED_LINE, expected_counts, real_text_lines, wait_for_counts, write_process_id

pytestmark = pytest.mark.integration

A = "4b61083e-57d0-457d-951f-d06556c148ca"
B = "7156cef1-307e-49c0-a5bb-0f11d26a4933"
C = "bbb83e43-b1af-4b2d-a60a-94a7091684d0"
STATEFUL = {f"1_{p}" for p in range(6)}

# Where seed 000's Kafka Streams run converged (its last log line), i.e. round-robin over clients in
# java.util.UUID order (bbb83e43 < 4b61083e < 7156cef1, since bbb8... has a negative most significant half).
SEED_CONVERGED = {
    C: {"active": ["0_0", "0_3", "1_0", "1_3"], "standby": []},
    A: {"active": ["0_1", "0_4", "1_1", "1_4"], "standby": []},
    B: {"active": ["0_2", "0_5", "1_2", "1_5"], "standby": []},
}

_CLIENT_LINE = re.compile(r"^([0-9a-f-]{36})=\[activeTasks: \(\[(.*?)\]\) standbyTasks: \(\[(.*?)\]\)\]")


@dataclass
class Round:
    clients: dict[str, dict[str, list[str]]]
    followup: bool | None = None


class AssignmentLog(logging.Handler):
    """Collects the leader's assignment log lines, as an experimenter would grep them."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.rounds: list[Round] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "Assigned tasks" in message:
            clients = {}
            for line in message.splitlines()[1:]:
                match = _CLIENT_LINE.match(line)
                if match:
                    split = lambda s: [t for t in s.split(", ") if t]  # noqa: E731
                    clients[match.group(1)] = {"active": split(match.group(2)), "standby": split(match.group(3))}
            self.rounds.append(Round(clients))
        elif "Requesting followup rebalance" in message and self.rounds:
            self.rounds[-1].followup = True
        elif "Finished stable assignment" in message and self.rounds:
            self.rounds[-1].followup = False


def _client(
    kafka: KafkaTestCluster,
    topology,
    app_id: str,
    state_dir,
    process_id: str,
    task_assignor: str = "high_availability",
    rebalance_protocol: str = "cooperative",
) -> KafkaStreams:
    write_process_id(state_dir, app_id, process_id)
    config = StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(state_dir),
        num_stream_threads=2,
        acceptable_recovery_lag=0,
        probing_rebalance_interval_ms=5_000,
        max_warmup_replicas=2,
        commit_interval_ms=500,
        task_assignor=task_assignor,
        rebalance_protocol=rebalance_protocol,
    )
    return KafkaStreams(topology, config)


@dataclass
class Experiment:
    before: dict[str, dict[str, list[str]]]  # the two-client round just before the third client joins
    three: list[Round]  # every round with three clients, up to the stable one


@contextlib.asynccontextmanager
async def seed_experiment(
    kafka: KafkaTestCluster, tmp_path, task_assignor: str, rebalance_protocol: str = "cooperative"
) -> AsyncIterator[Experiment]:
    """Run seed 000's experiment; counts are checked to be exact before the join and at the end."""
    source = await kafka.create_topic("streams-plaintext-input", partitions=6)
    sink = await kafka.create_topic("streams-wordcount-output", partitions=6)
    app_id = unique_name("streams-wordcount")
    for suffix in ("counts-store-repartition", "counts-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    topology = build_topology(source, sink)
    log = AssignmentLog()
    logger = logging.getLogger("streamlet.assignment")
    logger.addHandler(log)
    logger.setLevel(logging.INFO)
    clients: list[KafkaStreams] = []
    try:
        for pid in (A, B):
            clients.append(_client(kafka, topology, app_id, tmp_path / pid[:8], pid, task_assignor, rebalance_protocol))
            await clients[-1].start()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while loop.time() < deadline and not (log.rounds and len(log.rounds[-1].clients) == 2):
            await asyncio.sleep(0.2)  # the seed starts from an assignment over both clients
        first = real_text_lines(400) + [SEED_LINE]
        await kafka.produce(source, [(None, line.encode()) for line in first])
        assert await wait_for_counts(kafka, sink, expected_counts(first)) == expected_counts(first)
        before = log.rounds[-1].clients
        rounds_before = len(log.rounds)

        clients.append(_client(kafka, topology, app_id, tmp_path / C[:8], C, task_assignor, rebalance_protocol))
        await clients[-1].start()
        second = real_text_lines(800)[400:]
        await kafka.produce(source, [(None, line.encode()) for line in second])
        # wait for the converged, stable round (at most a few probing intervals)
        deadline = loop.time() + 90
        while loop.time() < deadline and not (len(log.rounds[-1].clients) == 3 and log.rounds[-1].followup is False):
            await asyncio.sleep(0.5)
        three = [r for r in log.rounds[rounds_before:] if len(r.clients) == 3]
        assert three, f"no assignment with three clients; rounds: {log.rounds}"
        yield Experiment(before, three)

        expected = expected_counts(first + second)
        assert await wait_for_counts(kafka, sink, expected) == expected
    finally:
        logger.removeHandler(log)
        for client in clients:
            await client.close()


def _stateful(tasks: list[str]) -> set[str]:
    return {t for t in tasks if t in STATEFUL}


@pytest.mark.parametrize("protocol", ["cooperative", "eager"])
async def test_third_client_joins_like_seed_000(kafka: KafkaTestCluster, tmp_path, protocol: str) -> None:
    """Under both protocols: the warmups, the probing rebalances and the converged layout are the assignor's, the
    same whichever protocol hands the tasks over (cooperative adds a round for each withheld task, logged with a
    follow-up like a probing one)."""
    async with seed_experiment(kafka, tmp_path, "high_availability", protocol) as run:
        # the two-client layout the seed starts from: round robin over 4b61083e < 7156cef1
        assert _stateful(run.before[A]["active"]) == {"1_0", "1_2", "1_4"}
        assert _stateful(run.before[B]["active"]) == {"1_1", "1_3", "1_5"}

        joined = run.three[0]
        assert not _stateful(joined.clients[C]["active"]), f"stateful tasks before catching up: {joined.clients}"
        warmups = sum(len(c["standby"]) for c in joined.clients.values())
        assert 0 < warmups <= 2, joined.clients  # standbys are all warmups (num_standby_replicas=0)
        for round_ in run.three[:-1]:
            assert round_.followup is True  # every intermediate round asks for another probe
        assert run.three[-1].followup is False, f"did not converge: {run.three[-1]}"
        assert run.three[-1].clients == SEED_CONVERGED
        assert len(run.three) >= 2  # at least one probing rebalance moved tasks


async def test_third_client_joins_with_the_balanced_assignor(kafka: KafkaTestCluster, tmp_path) -> None:
    """The same experiment with streamlet's `balanced` assignor: no reshuffle among the old clients, no client
    above 3 stateful tasks at any point, and a stable 2/2/2 split of the stateful tasks at the end."""
    async with seed_experiment(kafka, tmp_path, "balanced") as run:
        before = {pid: _stateful(run.before[pid]["active"]) for pid in (A, B)}
        assert run.three[-1].followup is False, f"did not converge: {run.three}"
        for round_ in run.three:
            stateful = {pid: _stateful(c["active"]) for pid, c in round_.clients.items()}
            assert max(len(ts) for ts in stateful.values()) <= 3, round_.clients
            # sticky: an old client only ever gives tasks away, it never receives another old client's task
            for pid in (A, B):
                assert stateful[pid] <= before[pid], (pid, stateful[pid], before[pid])
        final = [len(_stateful(c["active"])) for c in run.three[-1].clients.values()]
        assert sorted(final) == [2, 2, 2], run.three[-1].clients
