"""One sweep scenario run through the workers' own assignment code, rebalance by rebalance, and its metrics.

Each rebalance is one `streamlet.assignment.simulation.simulate` call (the leader's assignor, validated as
Kafka Streams validates it). Between rebalances the round model of `bench/assignor_scenarios.py` holds:
every task a client was given is fully restored by the next rebalance, so its actives report "running" and
its standbys and warmups report the changelog's end (lag 0); a client keeps no state for tasks it was not
given; a departed client is gone with its state; a new client starts empty. Warmups and probing rebalances
are therefore followed to the end: the assignor's follow-up request triggers the next rebalance.

The group first deploys fresh and converges (not measured: every assignor restores everything once). Then
each event (join, leave, replace) happens and rebalances run until one converges: it asks for no follow-up,
or it leaves every active and standby where it was (FallbackPriorTaskAssignor keeps asking for probing
rebalances that change nothing). Metrics, summed over the events:

- `rounds`: rebalances until convergence, the converging one included (`max_rounds` per event at most;
  `converged` is false when an event hit it);
- `moves`: stateful active tasks whose client changed in a rebalance (a departed client's tasks count);
- `restore_bytes`: bytes restored from changelogs: each stateful task an assignment puts (active, standby or
  warmup) on a client that holds no state for it costs its state size;
- `skew`: how many active tasks the most overloaded client runs above its even share (all active tasks
  spread over all threads, times its threads, rounded up), in the layout each event converged to, the worst
  event's; 0 is as even as whole tasks allow. A count, not a ratio: with fewer tasks than threads a ratio
  over the fractional share reads "10x" for a client running the one task it must.

With `racks` > 0 (KIP-925), each client sits in a rack and each partition's `replication_factor` replicas on
distinct racks, all drawn from the scenario's seed (a joining client too); the rack-aware assignors
(`high_availability_min_traffic`, `high_availability_balance_subtopology`) see them, the others ignore them.
Two more metrics, of the worst event's converged layout (both 0 without racks):

- `cross_rack`: partitions read across racks: each active's source partition and each standby's changelog
  partition with no replica in the client's rack (Kafka's traffic cost counts the same partitions);
- `same_rack_standbys`: standbys in the same rack as their task's active (lost with it if the rack fails).
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamlet.assignment.client_state import LATEST_OFFSET
from streamlet.assignment.simulation import simulate
from streamlet.experiments.sweep_space import Scenario

#: In the `hot` distribution this share of tasks (at least one) holds `HOT_FACTOR` times the median state.
HOT_SHARE, HOT_FACTOR = 0.1, 20
PROBING_INTERVAL_MS = 600_000


@dataclass
class Holding:
    """A client's place in the group between rebalances: its threads, and the tasks it runs and backs up."""

    capacity: int
    active: frozenset[str] = frozenset()
    standby: frozenset[str] = frozenset()


Layout = dict[int, Holding]


@dataclass(frozen=True)
class ScenarioMetrics:
    rounds: int
    converged: bool
    moves: int
    restore_bytes: int
    skew: int
    cross_rack: int = 0
    same_rack_standbys: int = 0


SOURCE_TOPICS = {0: "in-0", 1: "in-1"}  # sub-topology 0 is stateless, 1 stateful
CHANGELOG_TOPIC = "app-1-changelog"


def rack_of(scenario: Scenario, client: int) -> str | None:
    """The client's rack, drawn from the scenario's seed and the client's number (None without racks)."""
    if not scenario.racks:
        return None
    return f"rack-{random.Random(f'{scenario.seed}/client/{client}').randrange(scenario.racks)}"


def replica_racks(scenario: Scenario) -> dict[str, list[list[str]]]:
    """Per topic, per partition: the racks of its replicas (`replication_factor` distinct racks at most)."""
    if not scenario.racks:
        return {}
    replicas = min(scenario.replication_factor, scenario.racks)
    topics = {
        SOURCE_TOPICS[0]: scenario.stateless_tasks,
        SOURCE_TOPICS[1]: scenario.stateful_tasks,
        CHANGELOG_TOPIC: scenario.stateful_tasks,
    }
    return {
        topic: [
            [f"rack-{r}" for r in random.Random(f"{scenario.seed}/{topic}/{p}").sample(range(scenario.racks), replicas)]
            for p in range(count)
        ]
        for topic, count in topics.items()
    }


def _task_partitions(scenario: Scenario) -> dict[str, dict[str, list[list[str | int]]]]:
    out: dict[str, dict[str, list[list[str | int]]]] = {}
    for p in range(scenario.stateless_tasks):
        out[f"0_{p}"] = {"source": [[SOURCE_TOPICS[0], p]]}
    for p in range(scenario.stateful_tasks):
        out[f"1_{p}"] = {"source": [[SOURCE_TOPICS[1], p]], "changelog": [[CHANGELOG_TOPIC, p]]}
    return out


def cross_rack(scenario: Scenario, layout: Layout, racks: Mapping[str, list[list[str]]]) -> int:
    """Partitions read across racks in `layout` (see the module doc)."""
    if not racks:
        return 0
    total = 0
    for client, holding in layout.items():
        rack = rack_of(scenario, client)
        for task in holding.active:
            sub, p = (int(x) for x in task.split("_"))
            total += rack not in racks[SOURCE_TOPICS[sub]][p]
        for task in holding.standby:
            total += rack not in racks[CHANGELOG_TOPIC][int(task.split("_")[1])]
    return total


def same_rack_standbys(scenario: Scenario, layout: Layout) -> int:
    """Standbys whose client is in the rack of the task's active."""
    if not scenario.racks:
        return 0
    active_rack = {t: rack_of(scenario, c) for c, h in layout.items() for t in h.active}
    return sum(
        1 for c, h in layout.items() for t in h.standby if t in active_rack and active_rack[t] == rack_of(scenario, c)
    )


def state_records(scenario: Scenario) -> dict[str, int]:
    """Changelog records per stateful task (at least 1), drawn from the scenario's seed and distribution."""
    rng = random.Random(scenario.seed)
    median, n = scenario.state_records, scenario.stateful_tasks
    tasks = [f"1_{p}" for p in range(n)]
    kind = scenario.state_distribution
    if kind == "fixed":
        sizes = [median] * n
    elif kind == "uniform":
        sizes = [rng.randint(median // 2, median * 3 // 2) for _ in tasks]
    elif kind == "lognormal":
        sizes = [int(median * math.exp(rng.gauss(0.0, 1.0))) for _ in tasks]
    elif kind == "hot":
        hot = set(rng.sample(range(n), max(1, round(n * HOT_SHARE))))
        sizes = [median * (HOT_FACTOR if p in hot else 1) for p in range(n)]
    else:
        raise ValueError(f"unknown state distribution {kind!r}")
    return {t: max(1, s) for t, s in zip(tasks, sizes, strict=True)}


def _pid(client: int) -> str:
    return str(uuid.UUID(int=client))


def _case(
    scenario: Scenario, ends: Mapping[str, int], layout: Layout, racks: Mapping[str, list[list[str]]]
) -> dict[str, Any]:
    """The rebalance's input under the round model (see the module doc)."""
    clients = {}
    for client, holding in layout.items():
        sums = {t: ends[t] for t in holding.standby if t in ends}
        sums.update({t: LATEST_OFFSET for t in holding.active if t in ends})
        clients[_pid(client)] = {
            "capacity": holding.capacity,
            "prev_active": sorted(holding.active),
            "prev_standby": sorted(holding.standby),
            "task_offset_sums": sums,
        }
        if racks:
            clients[_pid(client)]["rack"] = rack_of(scenario, client)
    rack_inputs = {"task_partitions": _task_partitions(scenario), "partition_replica_racks": racks} if racks else {}
    return {
        **rack_inputs,
        "config": {
            "num_standby_replicas": scenario.standbys,
            "max_warmup_replicas": scenario.max_warmup_replicas,
            "acceptable_recovery_lag": scenario.acceptable_recovery_lag,
            "probing_rebalance_interval_ms": PROBING_INTERVAL_MS,
        },
        "tasks": {
            "stateless": [f"0_{p}" for p in range(scenario.stateless_tasks)],
            "stateful": sorted(ends),
        },
        "changelog_end_offset_sums": dict(ends),
        "clients": clients,
    }


def stateful_moves(before: Layout, after: Layout, stateful: Mapping[str, int]) -> int:
    """Stateful actives whose client differs between two layouts (a task new to `after` does not count)."""
    owner = {t: c for c, h in before.items() for t in h.active if t in stateful}
    return sum(1 for c, h in after.items() for t in h.active if t in owner and owner[t] != c)


def restored_bytes(before: Layout, after: Layout, task_bytes: Mapping[str, int]) -> int:
    """Bytes `after` makes clients restore: stateful tasks (active or standby) on a client without their state."""
    total = 0
    for client, holding in after.items():
        old = before.get(client)
        held = (old.active | old.standby) if old is not None else frozenset()
        total += sum(task_bytes[t] for t in (holding.active | holding.standby) - held if t in task_bytes)
    return total


def skew(layout: Layout) -> int:
    """Active tasks the most overloaded client runs above ceil(its threads' even share of all actives)."""
    tasks = sum(len(h.active) for h in layout.values())
    threads = sum(h.capacity for h in layout.values())
    return max(0, max(len(h.active) - -(-tasks * h.capacity // threads) for h in layout.values()))


def _rebalance(
    scenario: Scenario, ends: Mapping[str, int], layout: Layout, racks: Mapping[str, list[list[str]]]
) -> tuple[Layout, bool]:
    """One rebalance: the new layout, and whether the assignor asked for a follow-up (probing) rebalance."""
    result = simulate(_case(scenario, ends, layout, racks), scenario.assignor)
    after = {
        client: Holding(
            holding.capacity,
            frozenset(result["clients"][_pid(client)]["active"]),
            frozenset(result["clients"][_pid(client)]["standby"]),
        )
        for client, holding in layout.items()
    }
    return after, result["followup_rebalance_ms"] is not None


def _apply(event_kind: str, client: int, threads: int, new_client: int, layout: Layout) -> Layout:
    after = dict(layout)
    if event_kind == "join":
        after[client] = Holding(threads)
    else:
        gone = after.pop(client)
        if event_kind == "replace":
            after[new_client] = Holding(gone.capacity)
    return after


def run_scenario(scenario: Scenario, max_rounds: int = 30) -> ScenarioMetrics:
    """Deploy, converge, then play the events; the metrics of the events (see the module doc)."""
    ends = state_records(scenario)
    racks = replica_racks(scenario)
    task_bytes = {t: n * scenario.record_bytes for t, n in ends.items()}
    layout: Layout = {i + 1: Holding(t) for i, t in enumerate(scenario.threads)}
    converged = True
    rounds = moves = restore = 0
    worst = worst_cross_rack = worst_same_rack = 0
    for index in range(-1, len(scenario.events)):
        before = layout  # the departed client's tasks and state are in here, not in the group's input
        if index >= 0:
            e = scenario.events[index]
            layout = _apply(e.kind, e.client, e.threads, e.new_client, layout)
        for _ in range(max_rounds):
            after, followup = _rebalance(scenario, ends, layout, racks)
            if index >= 0:
                moves += stateful_moves(before, after, ends)
                restore += restored_bytes(before, after, task_bytes)
                rounds += 1
            stable = after == layout
            before = layout = after
            if not followup or stable:
                break
        else:
            converged = False
        if index >= 0:
            worst = max(worst, skew(layout))
            worst_cross_rack = max(worst_cross_rack, cross_rack(scenario, layout, racks))
            worst_same_rack = max(worst_same_rack, same_rack_standbys(scenario, layout))
    return ScenarioMetrics(rounds, converged, moves, restore, worst, worst_cross_rack, worst_same_rack)
