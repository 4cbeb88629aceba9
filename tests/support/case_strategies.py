"""Hypothesis strategies for assignor cases in the "assignor simulation contract" format.

``contract_cases()`` draws realistic leader-side snapshots of a Kafka Streams group:

* 1-8 clients with random process UUIDs (small ``new UUID(0, n)`` ones, arbitrary ones, and ones with a
  negative most- or least-significant half, so signed ``UUID.compareTo`` order matters), capacity 1-4;
* 1-3 sub-topologies of 1-12 partitions each, each one stateful or stateless;
* per stateful task a changelog end-offset sum (0, small, medium, huge, or ``Long.MAX_VALUE``);
* a previous owner for most tasks (each task active on at most one client). A running stateful
  active reports -2; now and then the owner is still restoring and reports a real offset instead;
* previous standby copies of stateful tasks, reporting offsets <= the end;
* leftover on-disk checkpoints on other clients, some beyond the end offset (corrupted state);
* lags of 0, small, right around ``acceptable_recovery_lag``, or huge;
* ``num_standby_replicas`` 0-2, ``max_warmup_replicas`` 1-4, ``acceptable_recovery_lag`` in
  {0, small, 10000, huge, ``Long.MAX_VALUE``}.

Every drawn case is valid per the contract (the oracle accepts all of them).
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from hypothesis import strategies as st

LONG_MAX = 2**63 - 1
_U64 = 2**64


def _weighted(draw: st.DrawFn, choices: list[tuple[int, st.SearchStrategy[Any]]]) -> Any:
    """Draw from one of ``choices`` picked with the given integer weights (shrinks towards the first)."""
    total = sum(w for w, _ in choices)
    pick = draw(st.integers(0, total - 1))
    for weight, strategy in choices:
        if pick < weight:
            return draw(strategy)
        pick -= weight
    raise AssertionError("unreachable")


def _uuid_from_halves(msb: int, lsb: int) -> str:
    return str(uuid.UUID(int=(msb % _U64) << 64 | (lsb % _U64)))


# Process ids: the Kafka test convention (new UUID(0, n)), arbitrary, negative msb, negative lsb.
process_ids = st.one_of(
    st.integers(1, 16).map(lambda n: _uuid_from_halves(0, n)),
    st.integers(0, 2**128 - 1).map(lambda n: str(uuid.UUID(int=n))),
    st.tuples(st.integers(-(2**63), -1), st.integers(-(2**63), 2**63 - 1)).map(lambda t: _uuid_from_halves(*t)),
    st.tuples(st.integers(0, 16), st.integers(-(2**63), -1)).map(lambda t: _uuid_from_halves(*t)),
)


@st.composite
def _config(draw: st.DrawFn) -> dict[str, int]:
    acceptable = _weighted(
        draw,
        [
            (2, st.just(0)),
            (2, st.integers(1, 100)),
            (3, st.just(10_000)),
            (1, st.just(10**12)),
            (1, st.just(LONG_MAX)),
        ],
    )
    return {
        "num_standby_replicas": draw(st.integers(0, 2)),
        "max_warmup_replicas": draw(st.integers(1, 4)),
        "acceptable_recovery_lag": acceptable,
        "probing_rebalance_interval_ms": draw(st.sampled_from([60_000, 600_000])),
    }


def _end_offset_sums() -> st.SearchStrategy[int]:
    @st.composite
    def strat(draw: st.DrawFn) -> int:
        return _weighted(
            draw,
            [
                (1, st.just(0)),  # changelog created in this rebalance / never written
                (3, st.integers(1, 200)),
                (3, st.integers(1_000, 50_000)),
                (3, st.integers(10**6, 10**12)),
                (1, st.just(LONG_MAX)),  # overflowing sums are pinned to Long.MAX_VALUE
            ],
        )

    return strat()


def _offset_below_end(draw: st.DrawFn, end: int, acceptable: int) -> int:
    """A reported offset sum <= ``end``, chosen by its lag: 0, small, around the threshold, or large."""
    choices: list[tuple[int, st.SearchStrategy[int]]] = [
        (3, st.just(0)),
        (2, st.integers(1, 50)),
        (2, st.integers(0, end)),
        (1, st.just(end)),  # nothing restored yet: offset sum 0
    ]
    if acceptable < LONG_MAX:
        choices.append((2, st.sampled_from([max(acceptable - 1, 0), acceptable, acceptable + 1])))
    lag = min(max(_weighted(draw, choices), 0), end)
    return end - lag


@st.composite
def contract_cases(
    draw: st.DrawFn, max_clients: int = 8, max_partitions: int = 12, max_subtopologies: int = 3
) -> dict[str, Any]:
    """One contract input case (see module docstring); the limits can be raised for larger groups."""
    config = draw(_config())
    acceptable = config["acceptable_recovery_lag"]

    n_clients = _weighted(draw, [(1, st.just(1)), (6, st.integers(2, max_clients))])
    pids: list[str] = draw(st.lists(process_ids, min_size=n_clients, max_size=n_clients, unique=True))
    capacities = [draw(st.integers(1, 4)) for _ in pids]

    n_sub = _weighted(draw, [(1, st.just(1)), (3, st.integers(2, max(2, max_subtopologies)))])
    stateless: list[str] = []
    stateful: list[str] = []
    for sub in range(n_sub):
        partitions = _weighted(draw, [(1, st.integers(1, 3)), (3, st.integers(4, max(4, max_partitions)))])
        is_stateful = draw(st.integers(0, 3)) > 0  # three quarters of the sub-topologies are stateful
        (stateful if is_stateful else stateless).extend(f"{sub}_{p}" for p in range(partitions))

    prev_active: list[list[str]] = [[] for _ in pids]
    prev_standby: list[list[str]] = [[] for _ in pids]
    offset_sums: list[dict[str, int]] = [{} for _ in pids]
    ends: dict[str, int] = {}
    client_idx = st.integers(0, n_clients - 1)

    for task in stateless:
        if draw(st.integers(0, 9)) < 8:  # most tasks had an owner
            prev_active[draw(client_idx)].append(task)

    for task in stateful:
        end = draw(_end_offset_sums())
        ends[task] = end
        holders: set[int] = set()
        if draw(st.integers(0, 9)) < 8:
            owner = draw(client_idx)
            holders.add(owner)
            prev_active[owner].append(task)
            if draw(st.integers(0, 9)) < 9:
                offset_sums[owner][task] = -2  # RUNNING active
            else:  # still restoring: reports its real position
                offset_sums[owner][task] = _offset_below_end(draw, end, acceptable)
        # previous standby copies (running standbys report their next offset to fetch)
        for idx in draw(st.lists(client_idx, max_size=2, unique=True)):
            if idx in holders:
                continue
            holders.add(idx)
            prev_standby[idx].append(task)
            offset_sums[idx][task] = _offset_below_end(draw, end, acceptable)
        # state left on disk only (checkpoint file); sometimes beyond the end offset = corrupted
        for idx in draw(st.lists(client_idx, max_size=2, unique=True)):
            if idx in holders:
                continue
            holders.add(idx)
            if end < LONG_MAX and draw(st.integers(0, 3)) == 0:
                offset_sums[idx][task] = draw(st.integers(end + 1, min(end + 10**6, LONG_MAX)))
            else:
                offset_sums[idx][task] = _offset_below_end(draw, end, acceptable)

    def key(t: str) -> tuple[int, int]:
        s, p = t.split("_")
        return int(s), int(p)

    return {
        "config": config,
        "tasks": {"stateless": sorted(stateless, key=key), "stateful": sorted(stateful, key=key)},
        "changelog_end_offset_sums": {t: ends[t] for t in sorted(stateful, key=key)},
        "clients": {
            pid: {
                "capacity": capacities[i],
                "prev_active": sorted(prev_active[i], key=key),
                "prev_standby": sorted(prev_standby[i], key=key),
                "task_offset_sums": dict(sorted(offset_sums[i].items(), key=lambda kv: key(kv[0]))),
            }
            for i, pid in enumerate(pids)
        },
    }


_TAG_KEYS = ["zone", "cluster", "rack", "host"]


def with_client_tags(case: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A copy of `case` with KIP-708 rack awareness: 1-3 standbys, `rack_aware_assignment_tags`, client tags.

    Drawn with a seeded `random.Random` on top of an already drawn case (drawing fresh cases with
    Hypothesis costs over a minute per thousand). Tag keys get 1-4 values each, so some spreads are
    achievable and some are not (the fallback to the least-loaded clients). One client in twenty lacks a
    key, and not every key is configured: Kafka Streams only validates a client's own config, so a
    leader can see both, and `isAllowedTaskMovement` compares every tag of the source.
    """
    keys = rng.sample(_TAG_KEYS, rng.randint(1, 3))
    configured = rng.sample(keys, rng.randint(1, len(keys)))
    values = {key: [f"{key}-{v}" for v in range(rng.randint(1, 4))] for key in keys}
    clients = {
        pid: {**client, "client_tags": {k: rng.choice(values[k]) for k in keys if rng.randrange(20)}}
        for pid, client in case["clients"].items()
    }
    config = {**case["config"], "num_standby_replicas": rng.randint(1, 3), "rack_aware_assignment_tags": configured}
    return {**case, "config": config, "clients": clients}


def with_racks(case: dict[str, Any], rng: random.Random, strategy: str) -> dict[str, Any]:
    """A copy of `case` with KIP-925 rack awareness (`strategy`): client racks, topics with replica racks.

    Each sub-topology reads one or two co-partitioned source topics; stateful ones restore one or two
    changelogs. Partitions have 1-3 replicas on 1-4 racks (some racks without clients). Half the cases get
    at least one standby, so the standby optimiser runs; costs are Kafka Streams' defaults or drawn. Now and
    then the picture is incomplete (a client without a rack, a replica without a rack, a changelog topic
    missing from the metadata), which must leave rack awareness off as Kafka Streams does.
    """
    racks = [f"rack-{r}" for r in range(rng.randint(1, 4))]
    incomplete = rng.randrange(12) == 0

    def replicas() -> list[str | None]:
        return [
            rng.choice([*racks, "rack-x"]) if rng.randrange(8) else rng.choice(racks) for _ in range(rng.randint(1, 3))
        ]

    tasks = case["tasks"]["stateless"] + case["tasks"]["stateful"]
    stateful = set(case["tasks"]["stateful"])
    partitions_of: dict[int, int] = {}
    for task in tasks:
        sub, part = (int(x) for x in task.split("_"))
        partitions_of[sub] = max(partitions_of.get(sub, 0), part + 1)
    topics: dict[str, list[list[str | None]]] = {}
    sources: dict[int, list[str]] = {}
    changelogs: dict[int, list[str]] = {}
    for sub, count in sorted(partitions_of.items()):
        sources[sub] = [f"s{sub}-in{i}" for i in range(rng.choice([1, 1, 2]))]
        changelogs[sub] = [f"app-s{sub}-store{i}-changelog" for i in range(rng.choice([1, 1, 2]))]
        for topic in sources[sub] + (changelogs[sub] if f"{sub}_0" in stateful else []):
            topics[topic] = [replicas() for _ in range(count)]
    task_partitions = {}
    for task in tasks:
        sub, part = (int(x) for x in task.split("_"))
        entry: dict[str, list[list[str | int]]] = {"source": [[t, part] for t in sources[sub]]}
        if task in stateful:
            entry["changelog"] = [[t, part] for t in changelogs[sub]]
        task_partitions[task] = entry
    clients = {pid: {**client, "rack": rng.choice(racks)} for pid, client in case["clients"].items()}
    if incomplete:
        what = rng.randrange(3)
        if what == 0:
            del clients[rng.choice(sorted(clients))]["rack"]
        elif what == 1:
            topic = rng.choice(sorted(topics))
            topics[topic][rng.randrange(len(topics[topic]))][0] = None
        elif any(t.endswith("changelog") for t in topics):
            del topics[rng.choice(sorted(t for t in topics if t.endswith("changelog")))]
    config = {**case["config"], "rack_aware_assignment_strategy": strategy}
    if rng.randrange(2):
        config["num_standby_replicas"] = max(1, config["num_standby_replicas"])
    if rng.randrange(2):
        config["rack_aware_assignment_traffic_cost"] = rng.randint(0, 20)
        config["rack_aware_assignment_non_overlap_cost"] = rng.randint(0, 5)
    return {
        **case,
        "config": config,
        "clients": clients,
        "task_partitions": task_partitions,
        "partition_replica_racks": topics,
    }
