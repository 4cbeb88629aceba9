"""A local 3-node Apache Kafka cluster (KRaft): every node a broker and a controller, a quorum of 3.

Replication is what a production cluster has and the single local broker cannot: every topic, internal ones
included, on 3 nodes with `min.insync.replicas=2`, so a write acknowledged with acks=all is on 2 nodes and the
cluster keeps working with any one node down. The chaos tests kill -9 one node at a time (`kill`) and start
it again (`start_node`); `leader_of` and `transaction_coordinator` say which node to kill.

Each node is a `LocalBroker` in `<dir>/node-<id>` with its own ports and data; `cluster.json` in `<dir>` keeps
the ports and cluster id, so a node restarts on the same ones and `status`/`stop` work from another process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from streamlet.errors import BrokerError
from streamlet.kafka.broker import (
    PLAINTEXT_MODE,
    SECURITY_MODES,
    BrokerStatus,
    LocalBroker,
    _free_port,
    _new_cluster_id,
    _pid_alive,
    _reap,
    default_broker_dir,
)

_CLUSTER_FILE = "cluster.json"
#: How long the controller waits for a node's heartbeat before fencing it and moving its leaderships
#: (Kafka's broker.session.timeout.ms, 9 s by default): a bound the chaos tests derive their waits from.
BROKER_SESSION_TIMEOUT_MS = 6_000


def replication_settings(nodes: int) -> dict[str, str]:
    """server.properties entries for `nodes` nodes: RF `nodes` (at most 3) and min ISR one less, for every topic
    the cluster or a client creates with the default, the consumer offsets and the transaction state log."""
    rf = min(nodes, 3)
    min_isr = max(1, rf - 1)
    return {
        "default.replication.factor": str(rf),
        "min.insync.replicas": str(min_isr),
        "offsets.topic.replication.factor": str(rf),
        "transaction.state.log.replication.factor": str(rf),
        "transaction.state.log.min.isr": str(min_isr),
        "transaction.state.log.num.partitions": "10",
        "share.coordinator.state.topic.replication.factor": str(rf),
        "share.coordinator.state.topic.min.isr": str(min_isr),
        "broker.session.timeout.ms": str(BROKER_SESSION_TIMEOUT_MS),
        "broker.heartbeat.interval.ms": "1000",
    }


@dataclass
class ClusterLayout:
    """What `cluster.json` records: the ports of every node, fixed at the first start."""

    cluster_id: str
    ports: dict[str, int]  # node id (a JSON key, so a string) -> client port
    controller_ports: dict[str, int]
    heap: str
    security: str = PLAINTEXT_MODE
    racks: list[str] | None = None  # each node's broker.rack, in node order

    @property
    def node_ids(self) -> list[int]:
        return sorted(int(n) for n in self.ports)


class LocalCluster:
    """`nodes` KRaft nodes on 127.0.0.1 (ids 1..nodes), started and stopped together, killed one at a time."""

    def __init__(
        self,
        directory: Path | str | None = None,
        *,
        nodes: int = 3,
        ports: list[int] | None = None,
        heap: str = "384m",
        die_with_parent: bool = False,
        security: str = PLAINTEXT_MODE,
        overrides: dict[str, str] | None = None,
        kafka_version: str | None = None,
        racks: list[str] | None = None,
    ) -> None:
        """`ports`: the client ports of nodes 1..nodes (default: free ones); `heap` per JVM (2-core machines
        run three of them); `die_with_parent` and `kafka_version` as for `LocalBroker`; `security` one of
        SECURITY_MODES, fixed at the first start (the nodes share one CA and one set of users, in `<dir>/tls`);
        `overrides`: more server.properties entries for every node; `racks`: each node's `broker.rack`, in node
        order (rack-aware replica placement and KIP-925 rack-aware assignment), fixed at the first start."""
        if security not in SECURITY_MODES:
            raise BrokerError(f"security={security!r}: expected one of {', '.join(SECURITY_MODES)}")
        if nodes < 1:
            raise BrokerError(f"a cluster needs at least one node, got {nodes}")
        if ports is not None and len(ports) != nodes:
            raise BrokerError(f"{len(ports)} ports given for {nodes} nodes")
        if racks is not None and (len(racks) != nodes or not all(racks)):
            raise BrokerError(f"racks={racks!r}: expected one non-empty rack per node ({nodes})")
        self.directory = Path(directory) if directory is not None else default_broker_dir()
        self.nodes = nodes
        self.requested_ports = ports
        self.heap = heap
        self.die_with_parent = die_with_parent
        self.security = security
        self.overrides = dict(overrides or {})
        self.kafka_version = kafka_version
        self.racks = list(racks) if racks is not None else None
        self._brokers: dict[int, LocalBroker] = {}

    # ---- layout ------------------------------------------------------------------------------------------

    @property
    def _layout_file(self) -> Path:
        return self.directory / _CLUSTER_FILE

    def layout(self) -> ClusterLayout | None:
        """The recorded layout, or None before the first start."""
        try:
            return ClusterLayout(**json.loads(self._layout_file.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def _make_layout(self) -> ClusterLayout:
        taken: set[int] = set()

        def fresh() -> int:
            port = _free_port("127.0.0.1")
            while port in taken:
                port = _free_port("127.0.0.1")
            taken.add(port)
            return port

        ids = range(1, self.nodes + 1)
        ports = self.requested_ports or [fresh() for _ in ids]
        taken.update(ports)
        layout = ClusterLayout(
            cluster_id=_new_cluster_id(),
            ports={str(i): p for i, p in zip(ids, ports, strict=True)},
            controller_ports={str(i): fresh() for i in ids},
            heap=self.heap,
            security=self.security,
            racks=self.racks,
        )
        self.directory.mkdir(parents=True, exist_ok=True)
        self._layout_file.write_text(json.dumps(asdict(layout), indent=2) + "\n")
        return layout

    def broker(self, node_id: int) -> LocalBroker:
        """The `LocalBroker` of one node (its settings name every node of the quorum)."""
        if node_id in self._brokers:
            return self._brokers[node_id]
        layout = self.layout()
        if layout is None:
            raise BrokerError(f"no cluster in {self.directory}: start it first")
        if str(node_id) not in layout.ports:
            raise BrokerError(f"no node {node_id} in the cluster in {self.directory} (nodes {layout.node_ids})")
        voters = ",".join(f"{i}@127.0.0.1:{layout.controller_ports[str(i)]}" for i in layout.node_ids)
        overrides = {
            "node.id": str(node_id),
            "controller.quorum.voters": voters,
            **replication_settings(len(layout.ports)),
            **({"broker.rack": racks[node_id - 1]} if (racks := self.racks or layout.racks) else {}),
            **self.overrides,
        }
        broker = LocalBroker(
            self.directory / f"node-{node_id}",
            port=layout.ports[str(node_id)],
            controller_port=layout.controller_ports[str(node_id)],
            cluster_id=layout.cluster_id,
            heap=layout.heap,
            die_with_parent=self.die_with_parent,
            overrides=overrides,
            security=layout.security,
            tls_dir=self.directory / "tls",
            kafka_version=self.kafka_version,
        )
        self._brokers[node_id] = broker
        return broker

    # ---- the whole cluster -------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """Every node's address: clients reach the cluster through whichever nodes are up."""
        layout = self.layout()
        if layout is None:
            raise BrokerError(f"no cluster in {self.directory}")
        return ",".join(f"127.0.0.1:{layout.ports[str(i)]}" for i in layout.node_ids)

    def client_settings(self) -> dict[str, str]:
        """The STREAMLET_* variables a client needs: every node's address, and a secured cluster's CA and
        credentials (files, never the secret itself)."""
        running = self.status()
        if not running:
            raise BrokerError(f"no node of the cluster in {self.directory} is running")
        return {**next(iter(running.values())).client_settings(), "STREAMLET_BOOTSTRAP_SERVERS": self.bootstrap_servers}

    def start(self, timeout: float = 180.0) -> dict[int, BrokerStatus]:
        """Start every node that is not running, then wait for each to answer. All are launched first: a node
        answers only once a majority of the quorum runs."""
        layout = self.layout() or self._make_layout()
        launched = {}
        for node_id in layout.node_ids:
            broker = self.broker(node_id)
            if broker.status() is None:
                launched[node_id] = broker.launch()
        deadline = time.monotonic() + timeout
        try:
            for node_id, state in launched.items():
                self.broker(node_id).wait_ready(state, max(1.0, deadline - time.monotonic()))
        except BrokerError:
            self.stop()
            raise
        return self.status()

    def status(self) -> dict[int, BrokerStatus]:
        """The running nodes: node id -> status."""
        layout = self.layout()
        if layout is None:
            return {}
        running = {i: self.broker(i).status() for i in layout.node_ids}
        return {i: s for i, s in running.items() if s is not None}

    def stop(self) -> bool:
        """Stop every node (SIGTERM, then SIGKILL after a bound); True if any was running."""
        layout = self.layout()
        if layout is None:
            return False
        # SIGTERM to every node first: stopped one by one, the last ones would wait for a controller quorum
        # that is already gone before their controlled shutdown gives up
        for state in self.status().values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(state.pid, signal.SIGTERM)
        stopped = [self.broker(i).stop() for i in layout.node_ids]
        return any(stopped)

    # ---- one node ----------------------------------------------------------------------------------------

    def kill(self, node_id: int) -> None:
        """kill -9 one node: no controlled shutdown, no leadership handed over; the controller fences it after
        BROKER_SESSION_TIMEOUT_MS without a heartbeat."""
        state = self.broker(node_id).status()
        if state is None:
            raise BrokerError(f"node {node_id} is not running")
        os.kill(state.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _pid_alive(state.pid) and time.monotonic() < deadline:
            _reap(state.pid)
            time.sleep(0.05)

    def start_node(self, node_id: int, timeout: float = 120.0) -> BrokerStatus:
        """Start one node again on its ports and data, and wait until it answers."""
        return self.broker(node_id).start(timeout=timeout)

    def launch_node(self, node_id: int) -> BrokerStatus:
        """Start one node's JVM without waiting (`wait_node` waits). With `die_with_parent` the JVM's death
        signal is tied to the thread that started it (Linux), so an asyncio caller launches from the loop's
        thread and waits in a worker thread: a JVM started from a pool thread would die with that thread."""
        return self.broker(node_id).launch()

    def wait_node(self, node_id: int, state: BrokerStatus, timeout: float = 120.0) -> BrokerStatus:
        """Wait until a launched node answers."""
        return self.broker(node_id).wait_ready(state, timeout)


# ---- who leads what -------------------------------------------------------------------------------------


async def _describe(admin: AIOKafkaAdminClient, topic: str, timeout: float) -> dict[str, Any]:
    """`topic`'s metadata. The admin client sends it to one node, which may be the one just killed: a retriable
    error (node not ready, connection refused, a timeout) is retried, on another node, until `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            for described in await admin.describe_topics([topic]):
                return dict(described)
            raise BrokerError(f"no metadata for {topic}")
        except KafkaError as exc:
            if not exc.retriable or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.25)


async def leader_of(admin: AIOKafkaAdminClient, topic: str, partition: int, timeout: float = 30.0) -> int:
    """The node leading `topic`'s `partition` now (-1 while it has none)."""
    for part in (await _describe(admin, topic, timeout)).get("partitions", []):
        if part["partition"] == partition:
            return int(part["leader"])
    raise BrokerError(f"{topic} has no partition {partition}")


async def in_sync_replicas(admin: AIOKafkaAdminClient, topic: str, timeout: float = 30.0) -> dict[int, list[int]]:
    """Partition -> the nodes in its ISR."""
    partitions = (await _describe(admin, topic, timeout)).get("partitions", [])
    return {int(part["partition"]): sorted(int(n) for n in part["isr"]) for part in partitions}


async def transaction_coordinator(admin: AIOKafkaAdminClient, transactional_id: str, timeout: float = 30.0) -> int:
    """The node coordinating `transactional_id`'s transactions (FindCoordinator, key type 1): the leader of its
    partition of `__transaction_state`. The first lookup of a cluster creates that topic, and a coordinator is
    unavailable while its partition elects a leader: both are retried until `timeout`, as other retriable errors."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await admin.find_coordinator(transactional_id, coordinator_type=1)
        except KafkaError as exc:
            if not exc.retriable or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.25)
