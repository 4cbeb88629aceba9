"""The assignor simulation contract: one rebalance as JSON in, the assignment as JSON out.

Used by `streamlet assign`, by tests and by the differential check against Kafka Streams' own assignor.
Input (see ARCHITECTURE.md): `config`, `tasks.{stateless,stateful}`, `changelog_end_offset_sums`, and
`clients{uuid: {capacity, prev_active, prev_standby, task_offset_sums, client_tags}}`; KIP-708 tags are
`config.rack_aware_assignment_tags` (a list) and per-client `client_tags` (key -> value). KIP-925 rack awareness:
`config.rack_aware_assignment_{strategy,traffic_cost,non_overlap_cost}`, per-client `rack`, per task
`task_partitions{task: {source: [[topic, p], ...], changelog: [...]}}`, and the cluster metadata
`partition_replica_racks{topic: [[rack or null per replica] per partition]}`. Lags are computed from the
reported offset sums exactly as Kafka Streams does. Output: `{"clients": {uuid: {"active", "standby"}},
"followup_rebalance_ms": int | null}` with task lists sorted and clients in Java UUID order.
Other top-level keys (name, note, properties, ...) are ignored.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Mapping
from typing import Any

from streamlet.assignment.api import (
    ApplicationState,
    AssignmentConfigs,
    AssignmentError,
    TaskAssignor,
    TaskInfo,
    TaskTopicPartition,
    validate_task_assignment,
)
from streamlet.assignment.client_state import LATEST_OFFSET, LONG_MAX, UNKNOWN_OFFSET_SUM, ClientState
from streamlet.assignment.process_id import java_uuid_key
from streamlet.assignment.registry import resolve_task_assignor
from streamlet.errors import ConfigError, TaskAssignmentError
from streamlet.task_id import TaskId, sorted_tasks

_CONFIG_KEYS = (
    "num_standby_replicas",
    "max_warmup_replicas",
    "acceptable_recovery_lag",
    "probing_rebalance_interval_ms",
)
_TAGS_KEY = "rack_aware_assignment_tags"
_STRATEGY_KEY = "rack_aware_assignment_strategy"
_COST_KEYS = ("rack_aware_assignment_traffic_cost", "rack_aware_assignment_non_overlap_cost")
_CLIENT_KEYS = {"capacity", "prev_active", "prev_standby", "task_offset_sums", "client_tags", "rack"}


class SimulationInputError(ValueError):
    """The case JSON does not follow the simulation contract; the message says where."""


def _require_int(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise SimulationInputError(f"{where} must be an integer, got {value!r}")
    return value


def _require_mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SimulationInputError(f"{where} must be a JSON object, got {type(value).__name__}")
    return value


def _parse_task(text: Any, where: str) -> TaskId:
    if not isinstance(text, str):
        raise SimulationInputError(f"{where}: task id must be a string like '1_3', got {text!r}")
    try:
        return TaskId.parse(text)
    except ValueError as exc:
        raise SimulationInputError(f"{where}: {exc}") from None


def _parse_task_list(value: Any, where: str) -> list[TaskId]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SimulationInputError(f"{where} must be a list of task ids, got {value!r}")
    return [_parse_task(v, where) for v in value]


def _known(task: TaskId, known: set[TaskId], where: str) -> TaskId:
    if task not in known:
        raise SimulationInputError(f"{where}: unknown task id {task} (not in tasks.stateless or tasks.stateful)")
    return task


def _parse_config(raw: Any) -> AssignmentConfigs:
    raw = _require_mapping(raw if raw is not None else {}, "config")
    accepted = [*_CONFIG_KEYS, _TAGS_KEY, _STRATEGY_KEY, *_COST_KEYS]
    unknown = sorted(set(raw) - set(accepted))
    if unknown:
        raise SimulationInputError(f"config: unknown keys {unknown}; accepted: {accepted}")
    values: dict[str, Any] = {k: _require_int(raw[k], f"config.{k}") for k in _CONFIG_KEYS if k in raw}
    values.update({k: _require_int(raw[k], f"config.{k}") for k in _COST_KEYS if raw.get(k) is not None})
    tags = raw.get(_TAGS_KEY) or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise SimulationInputError(f"config.{_TAGS_KEY} must be a list of tag keys, got {tags!r}")
    strategy = raw.get(_STRATEGY_KEY, "none")
    if not isinstance(strategy, str):
        raise SimulationInputError(f"config.{_STRATEGY_KEY} must be a string, got {strategy!r}")
    try:
        return AssignmentConfigs(
            **values, rack_aware_assignment_tags=tuple(tags), rack_aware_assignment_strategy=strategy
        )
    except ConfigError as exc:
        raise SimulationInputError(f"config: {exc}") from None


def _parse_client(pid: uuid.UUID, raw: Any, known: set[TaskId], end_sums: Mapping[TaskId, int]) -> ClientState:
    where = f"clients.{pid}"
    raw = _require_mapping(raw, where)
    unknown = sorted(set(raw) - _CLIENT_KEYS)
    if unknown:
        raise SimulationInputError(f"{where}: unknown keys {unknown}; accepted: {sorted(_CLIENT_KEYS)}")
    capacity = _require_int(raw.get("capacity", 1), f"{where}.capacity")
    if capacity < 1:
        raise SimulationInputError(f"{where}.capacity must be >= 1, got {capacity}")
    prev_active = {_known(t, known, f"{where}.prev_active") for t in _parse_task_list(raw.get("prev_active"), where)}
    prev_standby = {_known(t, known, f"{where}.prev_standby") for t in _parse_task_list(raw.get("prev_standby"), where)}
    offset_sums: dict[TaskId, int] = {}
    for text, value in _require_mapping(raw.get("task_offset_sums") or {}, f"{where}.task_offset_sums").items():
        task = _known(_parse_task(text, f"{where}.task_offset_sums"), known, f"{where}.task_offset_sums")
        offset = _require_int(value, f"{where}.task_offset_sums.{text}")
        if offset < 0 and offset not in (LATEST_OFFSET, UNKNOWN_OFFSET_SUM):
            raise SimulationInputError(
                f"{where}.task_offset_sums.{text} = {offset}: expected >= 0, -2 (running active) or -3 (unknown)"
            )
        offset_sums[task] = min(offset, LONG_MAX)
    tags = _require_mapping(raw.get("client_tags") or {}, f"{where}.client_tags")
    if not all(isinstance(v, str) for v in tags.values()):
        raise SimulationInputError(f"{where}.client_tags: values must be strings, got {dict(tags)!r}")
    rack = raw.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise SimulationInputError(f"{where}.rack must be a string, got {rack!r}")
    client = ClientState(capacity, task_offset_sums=offset_sums, client_tags=tags, rack_id=rack)
    client.previous_active_tasks = prev_active | {t for t, s in offset_sums.items() if s == LATEST_OFFSET}
    client.previous_standby_tasks = (prev_standby | set(offset_sums)) - client.previous_active_tasks
    client.compute_task_lags(end_sums)
    return client


def build_application_state(case: Mapping[str, Any], now_ms: int = 0) -> ApplicationState:
    """Parse and check a simulation case; raises SimulationInputError naming the offending field."""
    case = _require_mapping(case, "case")
    configs = _parse_config(case.get("config"))
    tasks = _require_mapping(case.get("tasks") or {}, "tasks")
    stateless = _parse_task_list(tasks.get("stateless"), "tasks.stateless")
    stateful = _parse_task_list(tasks.get("stateful"), "tasks.stateful")
    both = sorted(set(stateless) & set(stateful))
    if both:
        raise SimulationInputError(f"tasks {both} are listed as both stateless and stateful")
    known = set(stateless) | set(stateful)

    # no pre-existing changelog -> end sum 0; in task order, the order the assignors' views keep the lags in
    end_sums: dict[TaskId, int] = dict.fromkeys(sorted_tasks(stateful), 0)
    raw_ends = _require_mapping(case.get("changelog_end_offset_sums") or {}, "changelog_end_offset_sums")
    for text, value in raw_ends.items():
        task = _known(_parse_task(text, "changelog_end_offset_sums"), known, "changelog_end_offset_sums")
        if task not in end_sums:
            raise SimulationInputError(f"changelog_end_offset_sums: task {task} is stateless (it has no changelog)")
        end = _require_int(value, f"changelog_end_offset_sums.{text}")
        if end < 0 and end != UNKNOWN_OFFSET_SUM:
            raise SimulationInputError(f"changelog_end_offset_sums.{text} = {end}: expected >= 0 or -3 (unknown)")
        end_sums[task] = min(end, LONG_MAX)

    raw_clients = _require_mapping(case.get("clients"), "clients")
    clients: dict[uuid.UUID, ClientState] = {}
    for text, raw in raw_clients.items():
        try:
            pid = uuid.UUID(text)
        except (ValueError, AttributeError, TypeError):
            raise SimulationInputError(f"clients: {text!r} is not a process id (UUID)") from None
        if pid in clients:
            raise SimulationInputError(f"clients: process id {pid} is listed twice")
        clients[pid] = _parse_client(pid, raw, known, end_sums)

    partitions = _parse_task_partitions(case, known)
    infos = [TaskInfo(t, False, topic_partitions=partitions.get(t, frozenset())) for t in stateless]
    infos += [TaskInfo(t, True, topic_partitions=partitions.get(t, frozenset())) for t in stateful]
    return ApplicationState(infos, configs, clients, now_ms=now_ms)


def _parse_partition(value: Any, where: str) -> tuple[str, int]:
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not isinstance(value[0], str)
        or not isinstance(value[1], int)
        or isinstance(value[1], bool)
        or value[1] < 0
    ):
        raise SimulationInputError(f"{where}: a partition must be [topic, partition >= 0], got {value!r}")
    return value[0], value[1]


def _replica_racks(case: Mapping[str, Any]) -> dict[tuple[str, int], frozenset[str] | None]:
    """`partition_replica_racks`: a partition's racks, or None if a replica has no rack (or it has no replicas)."""
    raw = _require_mapping(case.get("partition_replica_racks") or {}, "partition_replica_racks")
    racks: dict[tuple[str, int], frozenset[str] | None] = {}
    for topic, partitions in raw.items():
        if not isinstance(partitions, list):
            raise SimulationInputError(f"partition_replica_racks.{topic} must be a list (one entry per partition)")
        for p, replicas in enumerate(partitions):
            where = f"partition_replica_racks.{topic}[{p}]"
            if not isinstance(replicas, list) or not all(r is None or isinstance(r, str) for r in replicas):
                raise SimulationInputError(f"{where} must be a list of racks (or null), got {replicas!r}")
            known_racks = [r for r in replicas if r is not None]
            racks[(topic, p)] = frozenset(known_racks) if replicas and len(known_racks) == len(replicas) else None
    return racks


def _parse_task_partitions(case: Mapping[str, Any], known: set[TaskId]) -> dict[TaskId, frozenset[TaskTopicPartition]]:
    """`task_partitions` with each partition's replica racks (`TaskTopicPartition.rack_ids`)."""
    racks = _replica_racks(case)
    raw = _require_mapping(case.get("task_partitions") or {}, "task_partitions")
    result: dict[TaskId, frozenset[TaskTopicPartition]] = {}
    for text, entry in raw.items():
        task = _known(_parse_task(text, "task_partitions"), known, "task_partitions")
        entry = _require_mapping(entry, f"task_partitions.{text}")
        unknown = sorted(set(entry) - {"source", "changelog"})
        if unknown:
            raise SimulationInputError(f"task_partitions.{text}: unknown keys {unknown}; accepted: changelog, source")
        items: dict[tuple[str, int], TaskTopicPartition] = {}
        for kind in ("source", "changelog"):
            partitions = entry.get(kind) or []
            if not isinstance(partitions, list):
                raise SimulationInputError(f"task_partitions.{text}.{kind} must be a list of [topic, partition]")
            for value in partitions:
                tp = _parse_partition(value, f"task_partitions.{text}.{kind}")
                previous = items.get(tp)
                items[tp] = TaskTopicPartition(
                    tp,
                    is_source=kind == "source" or (previous is not None and previous.is_source),
                    is_changelog=kind == "changelog" or (previous is not None and previous.is_changelog),
                    rack_ids=racks.get(tp),
                )
        result[task] = frozenset(items.values())
    return result


def simulate(case: Mapping[str, Any], assignor: str | TaskAssignor = "high_availability") -> dict[str, Any]:
    """Run `assignor` (a `task_assignor` value or an instance) on one case (see the module doc); raises
    SimulationInputError, ConfigError or TaskAssignmentError (the output failed Kafka Streams' validation)."""
    now_ms = 0
    state = build_application_state(case, now_ms)
    result = (resolve_task_assignor(assignor) if isinstance(assignor, str) else assignor).assign(state)
    error = validate_task_assignment(state, result)
    if error is not AssignmentError.NONE:
        raise TaskAssignmentError(f"assignor {assignor!r} returned an invalid assignment: {error.name}")
    by_pid = result.by_process_id()
    deadlines = [a.followup_rebalance_deadline for a in result.assignment if a.followup_rebalance_deadline is not None]
    return {
        "clients": {
            str(pid): {
                "active": [str(t) for t in by_pid[pid].active_tasks()],
                "standby": [str(t) for t in by_pid[pid].standby_tasks()],
            }
            for pid in sorted(by_pid, key=java_uuid_key)
        },
        "followup_rebalance_ms": min(deadlines) - now_ms if deadlines else None,
    }


def main(argv: list[str] | None = None) -> int:
    """`streamlet assign [--assignor NAME] [CASE.json]`: read a case (stdin by default), print the result."""
    parser = argparse.ArgumentParser(
        prog="streamlet assign", description="Run a task assignor on one simulated rebalance (JSON in, JSON out)."
    )
    parser.add_argument("case", nargs="?", help="case JSON file (default: read stdin)")
    parser.add_argument("--assignor", default="high_availability", help="registered name or package.module:Class")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        if args.case is None:
            text = sys.stdin.read()
        else:
            with open(args.case, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as exc:
        print(f"streamlet assign: cannot read {args.case}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        case = json.loads(text)
    except json.JSONDecodeError as exc:
        print(f"streamlet assign: invalid JSON: {exc}", file=sys.stderr)
        return 2
    try:
        result = simulate(case, args.assignor)
    except (SimulationInputError, ConfigError, TaskAssignmentError) as exc:
        print(f"streamlet assign: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
