"""The sweep's scenario space: a SWEEP.toml of ranges and choices, expanded (seeded) into concrete scenarios.

One real-worker experiment answers "what happens in this group"; the seeds' question is "which assignor skews
less, moves less and converges sooner over the space of groups". A sweep file names that space (group size,
threads, standbys, state sizes, event sequences) and the assignors; `expand` draws `situations` concrete
groups from it with one seeded RNG and pairs each with every assignor, so assignors are compared on the very
same situations (a paired comparison: a difference is the assignor's, not the draw's). Pure: no I/O besides
`load_sweep` reading the file.

A value in `[space]` is a constant, a list of choices, or a range table `{min, max}` (integers, inclusive;
`scale = "log"` draws log-uniformly so that a range up to 100 clients is mostly small groups, which keeps a
sweep of thousands affordable while still reaching the large ones).
"""

from __future__ import annotations

import math
import random
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from streamlet.assignment.registry import registered_task_assignors

#: How per-task state sizes spread around the drawn median (see `streamlet.experiments.sweep_simulation`).
STATE_DISTRIBUTIONS = ("fixed", "uniform", "lognormal", "hot")
EVENT_KINDS = ("join", "leave", "replace")
_SPACE_KEYS = {
    "clients",
    "threads",
    "stateful_tasks",
    "stateless_tasks",
    "standbys",
    "max_warmup_replicas",
    "acceptable_recovery_lag",
    "state_distribution",
    "state_records",
    "record_bytes",
    "events",
    "event_kinds",
    "racks",
    "replication_factor",
}
_DEFAULTS: dict[str, Any] = {
    "clients": {"min": 2, "max": 6},
    "threads": [1, 2],
    "stateful_tasks": {"min": 4, "max": 24},
    "stateless_tasks": 0,
    "standbys": [0, 1],
    "max_warmup_replicas": 2,
    "acceptable_recovery_lag": 10_000,
    "state_distribution": list(STATE_DISTRIBUTIONS),
    "state_records": {"min": 1_000, "max": 1_000_000, "scale": "log"},
    "record_bytes": 100,
    "events": {"min": 1, "max": 3},
    "event_kinds": list(EVENT_KINDS),
    # KIP-925: 0 racks = racks not modelled; else clients and partition replicas are spread over racks
    "racks": 0,
    "replication_factor": 1,
}


class SweepError(ValueError):
    """The sweep file is not valid; the message names the key."""


@dataclass(frozen=True)
class Event:
    """One membership change: `join` adds client `client` with `threads`; `leave` removes it; `replace`
    removes it and adds `new_client` (fresh, no state) with the same threads, as a restarted pod on a new disk."""

    kind: str
    client: int
    threads: int = 0
    new_client: int = 0


@dataclass(frozen=True)
class Scenario:
    """One concrete scenario: the situation (group, config, state, events) and the assignor run on it.

    Clients are numbers (process ids are `uuid.UUID(int=n)`); `threads[i]` belongs to client `i + 1`.
    `situation` identifies the draw, shared by every assignor run on it.
    """

    situation: int
    assignor: str
    seed: int
    threads: tuple[int, ...]
    stateful_tasks: int
    stateless_tasks: int
    standbys: int
    max_warmup_replicas: int
    acceptable_recovery_lag: int
    state_distribution: str
    state_records: int
    record_bytes: int
    events: tuple[Event, ...] = field(default=())
    #: racks the clients and partition replicas are spread over (0: no racks), replicas per partition
    racks: int = 0
    replication_factor: int = 1

    def describe(self) -> str:
        """A short human label, e.g. `6 clients (1-2 thr), 24+0 tasks, s=1, w=2, lognormal 5e4: join, leave`."""
        lo, hi = min(self.threads), max(self.threads)
        thr = f"{lo}" if lo == hi else f"{lo}-{hi}"
        events = ", ".join(e.kind for e in self.events)
        racks = f", {self.racks} racks rf={self.replication_factor}" if self.racks else ""
        return (
            f"{len(self.threads)} clients ({thr} thr), {self.stateful_tasks}+{self.stateless_tasks} tasks, "
            f"s={self.standbys}, w={self.max_warmup_replicas}, {self.state_distribution} {self.state_records:.0e}"
            f"{racks}: {events}"
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> Scenario:
        values = dict(raw)
        values["threads"] = tuple(values["threads"])
        values["events"] = tuple(Event(**e) for e in values["events"])
        return Scenario(**values)


@dataclass(frozen=True)
class SweepSpec:
    name: str
    seed: int
    situations: int
    assignors: tuple[str, ...]
    max_rounds: int
    space: Mapping[str, Any]

    @property
    def scenario_count(self) -> int:
        return self.situations * len(self.assignors)


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (1-based): the situations whose number is `index - 1` modulo `count`.

    A sweep too big for one machine's session runs as shards, each writing its per-scenario rows, and one report
    is then aggregated from all of them. Taking every count-th situation, not a range, gives every shard about
    the same mix of small and large groups, so the shards cost about the same."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`K/N` with 1 <= K <= N."""
        try:
            index, count = (int(part) for part in text.split("/"))
        except ValueError:
            raise SweepError(f"--shard: K/N (e.g. 2/10), got {text!r}") from None
        if not 1 <= index <= count:
            raise SweepError(f"--shard: K/N needs 1 <= K <= N, got {text!r}")
        return cls(index, count)

    def holds(self, situation: int) -> bool:
        return situation % self.count == self.index - 1

    @property
    def label(self) -> str:
        return f"shard-{self.index}-of-{self.count}"


def selected(scenario: Scenario, max_size: int | None = None, shard: Shard | None = None) -> bool:
    """Whether a subset run takes the scenario: its clients x stateful tasks at most `max_size`, in `shard`."""
    fits = max_size is None or len(scenario.threads) * scenario.stateful_tasks <= max_size
    return fits and (shard is None or shard.holds(scenario.situation))


def _check_value(key: str, value: Any) -> None:
    if isinstance(value, bool):
        raise SweepError(f"space.{key}: expected a number, a string, a list of choices or {{min, max}}")
    if isinstance(value, Mapping):
        unknown = set(value) - {"min", "max", "scale"}
        lo, hi = value.get("min"), value.get("max")
        if unknown or not isinstance(lo, int) or not isinstance(hi, int) or lo > hi:
            raise SweepError(f"space.{key}: a range is {{min = INT, max = INT, scale = 'log'}} with min <= max")
        if value.get("scale", "linear") not in ("linear", "log") or (value.get("scale") == "log" and lo < 1):
            raise SweepError(f"space.{key}: scale is 'linear' or 'log' (log needs min >= 1)")
    elif isinstance(value, list) and not value:
        raise SweepError(f"space.{key}: an empty list of choices")


def parse_sweep(raw: Mapping[str, Any], default_name: str = "sweep") -> SweepSpec:
    """Check a parsed sweep file; raises SweepError naming the offending key."""
    sweep = raw.get("sweep", {})
    space = raw.get("space", {})
    if not isinstance(sweep, Mapping) or not isinstance(space, Mapping):
        raise SweepError("[sweep] and [space] must be tables")
    unknown = sorted(set(raw) - {"sweep", "space"}) + sorted(f"space.{k}" for k in set(space) - _SPACE_KEYS)
    if unknown:
        raise SweepError(f"unknown keys {unknown}; [space] accepts {sorted(_SPACE_KEYS)}")
    merged = {**_DEFAULTS, **space}
    for key, value in merged.items():
        _check_value(key, value)
    assignors = sweep.get("assignors", ["high_availability", "balanced"])
    known = registered_task_assignors()
    if not isinstance(assignors, list) or not assignors or any(a not in known for a in assignors):
        raise SweepError(f"sweep.assignors: a non-empty list of {known}, got {assignors!r}")
    for key, lowest in (("racks", 0), ("replication_factor", 1)):
        value = merged[key]
        bounds = [value["min"], value["max"]] if isinstance(value, Mapping) else _choices(value)
        if any(not isinstance(v, int) or isinstance(v, bool) or v < lowest for v in bounds):
            raise SweepError(f"space.{key}: integers >= {lowest}, got {value!r}")
    for choice in _choices(merged["state_distribution"]):
        if choice not in STATE_DISTRIBUTIONS:
            raise SweepError(f"space.state_distribution: {choice!r} is not one of {STATE_DISTRIBUTIONS}")
    for choice in _choices(merged["event_kinds"]):
        if choice not in EVENT_KINDS:
            raise SweepError(f"space.event_kinds: {choice!r} is not one of {EVENT_KINDS}")
    ints = {k: sweep.get(k, d) for k, d in (("seed", 0), ("situations", 100), ("max_rounds", 30))}
    for key, value in ints.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < (0 if key == "seed" else 1):
            raise SweepError(f"sweep.{key}: expected a positive integer, got {value!r}")
    return SweepSpec(
        name=str(sweep.get("name", default_name)),
        seed=ints["seed"],
        situations=ints["situations"],
        assignors=tuple(assignors),
        max_rounds=ints["max_rounds"],
        space=merged,
    )


def load_sweep(path: Path) -> SweepSpec:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SweepError(f"{path}: {exc}") from None
    return parse_sweep(raw, default_name=path.stem)


def _choices(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else [value]


def draw(rng: random.Random, value: Any) -> Any:
    """One value: a constant as is, a choice uniformly, a range uniformly (or log-uniformly) inclusive."""
    if isinstance(value, list):
        return rng.choice(value)
    if isinstance(value, Mapping):
        lo, hi = value["min"], value["max"]
        if value.get("scale") == "log":
            return min(hi, int(math.exp(rng.uniform(math.log(lo), math.log(hi + 1)))))
        return rng.randint(lo, hi)
    return value


def _events(rng: random.Random, space: Mapping[str, Any], clients: int) -> tuple[Event, ...]:
    """A sequence of membership changes; a leave that would empty the group becomes a join."""
    alive = list(range(1, clients + 1))
    next_client = clients + 1
    out: list[Event] = []
    for _ in range(draw(rng, space["events"])):
        kind = draw(rng, space["event_kinds"])
        if kind == "leave" and len(alive) == 1:
            kind = "join"
        if kind == "join":
            out.append(Event("join", next_client, threads=draw(rng, space["threads"])))
            alive.append(next_client)
            next_client += 1
            continue
        gone = rng.choice(alive)
        alive.remove(gone)
        if kind == "leave":
            out.append(Event("leave", gone))
        else:
            out.append(Event("replace", gone, new_client=next_client))
            alive.append(next_client)
            next_client += 1
    return tuple(out)


def expand(spec: SweepSpec) -> list[Scenario]:
    """`spec.situations` situations drawn from the space, each paired with every assignor (same order always)."""
    rng = random.Random(spec.seed)
    space = spec.space
    out: list[Scenario] = []
    for situation in range(spec.situations):
        clients = draw(rng, space["clients"])
        threads = tuple(draw(rng, space["threads"]) for _ in range(clients))
        values = {
            key: draw(rng, space[key])
            for key in (
                "stateful_tasks",
                "stateless_tasks",
                "standbys",
                "max_warmup_replicas",
                "acceptable_recovery_lag",
                "state_distribution",
                "state_records",
                "record_bytes",
                "racks",  # last, and constant by default: sweeps without racks draw exactly as before
                "replication_factor",
            )
        }
        events = _events(rng, space, clients)
        seed = rng.getrandbits(32)
        for assignor in spec.assignors:
            out.append(Scenario(situation, assignor, seed, threads, events=events, **values))
    return out
