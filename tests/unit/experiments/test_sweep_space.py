"""Expanding a sweep file into scenarios: seeded, paired across assignors, inside the space, errors named."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from streamlet.experiments.sweep_space import (
    Event,
    Scenario,
    Shard,
    SweepError,
    draw,
    expand,
    load_sweep,
    parse_sweep,
    selected,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "experiments" / "sweeps"

SMALL = {
    "sweep": {"name": "t", "seed": 7, "situations": 40, "assignors": ["sticky", "balanced", "faust"]},
    "space": {
        "clients": {"min": 2, "max": 5},
        "threads": [1, 3],
        "stateful_tasks": {"min": 4, "max": 9},
        "stateless_tasks": 2,
        "standbys": [0, 1],
        "state_distribution": "fixed",
        "state_records": 500,
        "events": 2,
        "event_kinds": ["join", "leave", "replace"],
    },
}


def test_each_situation_runs_under_every_assignor_with_the_same_draw() -> None:
    scenarios = expand(parse_sweep(SMALL))
    assert len(scenarios) == 120
    for i in range(40):
        trio = scenarios[3 * i : 3 * i + 3]
        assert [s.assignor for s in trio] == ["sticky", "balanced", "faust"]
        assert {s.situation for s in trio} == {i}
        first = trio[0].to_json()
        assert all({**s.to_json(), "assignor": "sticky"} == first for s in trio)


def test_the_draws_stay_inside_the_space_and_are_seeded() -> None:
    scenarios = expand(parse_sweep(SMALL))
    assert scenarios == expand(parse_sweep(SMALL))
    other = expand(parse_sweep({**SMALL, "sweep": {**SMALL["sweep"], "seed": 8}}))
    assert [s.threads for s in other] != [s.threads for s in scenarios]
    for s in scenarios:
        assert 2 <= len(s.threads) <= 5 and set(s.threads) <= {1, 3}
        assert 4 <= s.stateful_tasks <= 9 and s.stateless_tasks == 2 and s.standbys in (0, 1)
        assert (s.state_distribution, s.state_records, s.record_bytes) == ("fixed", 500, 100)
        assert len(s.events) == 2
    sizes = {len(s.threads) for s in scenarios}
    assert sizes == {2, 3, 4, 5}


def test_events_name_live_clients_and_number_newcomers_after_everyone_seen() -> None:
    for s in expand(parse_sweep(SMALL)):
        alive, seen = set(range(1, len(s.threads) + 1)), len(s.threads)
        for e in s.events:
            if e.kind == "join":
                assert e.client == seen + 1 and e.threads in (1, 3)
                seen += 1
                alive.add(e.client)
            else:
                assert e.client in alive
                alive.remove(e.client)
                if e.kind == "replace":
                    assert e.new_client == seen + 1
                    seen += 1
                    alive.add(e.new_client)
        assert alive


def test_a_leave_that_would_empty_the_group_becomes_a_join() -> None:
    raw = {"sweep": {"situations": 5}, "space": {"clients": 1, "threads": 2, "events": 1, "event_kinds": "leave"}}
    for s in expand(parse_sweep(raw)):
        assert s.events == (Event("join", 2, threads=2),)


def test_a_log_range_reaches_both_ends_and_favours_small_values() -> None:
    rng = random.Random(3)
    values = [draw(rng, {"min": 2, "max": 100, "scale": "log"}) for _ in range(5000)]
    assert min(values) == 2 and max(values) == 100
    assert sum(v <= 14 for v in values) > 2500  # sqrt(2*101) ~ 14.2 is the log-midpoint


def test_scenarios_round_trip_through_json() -> None:
    for s in expand(parse_sweep(SMALL))[:12]:
        assert Scenario.from_json(s.to_json()) == s


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        ({"space": {"clientz": 3}}, "space.clientz"),
        ({"sweep": {"assignors": ["nope"]}}, "sweep.assignors"),
        ({"space": {"clients": {"min": 5, "max": 2}}}, "space.clients"),
        ({"space": {"threads": []}}, "space.threads"),
        ({"space": {"state_distribution": "pareto"}}, "space.state_distribution"),
        ({"space": {"event_kinds": ["crash"]}}, "space.event_kinds"),
        ({"sweep": {"situations": 0}}, "sweep.situations"),
        ({"space": {"racks": -1}}, "space.racks"),
        ({"space": {"replication_factor": {"min": 0, "max": 2}}}, "space.replication_factor"),
    ],
)
def test_errors_name_the_key(raw: dict, names: str) -> None:
    with pytest.raises(SweepError, match=names.replace(".", r"\.")):
        parse_sweep(raw)


@pytest.mark.parametrize(("name", "at_least"), [("small.toml", 500), ("full.toml", 5000), ("racks.toml", 300)])
def test_the_shipped_sweeps_load(name: str, at_least: int) -> None:
    spec = load_sweep(EXAMPLES / name)
    assert spec.scenario_count >= at_least


def test_racks_are_drawn_only_when_the_space_has_them() -> None:
    """Constant defaults draw nothing, so sweeps written before racks existed expand exactly as before."""
    plain = expand(parse_sweep({"sweep": {"situations": 5}}))
    assert {(s.racks, s.replication_factor) for s in plain} == {(0, 1)}
    racked = expand(parse_sweep({"sweep": {"situations": 5}, "space": {"racks": 3, "replication_factor": 2}}))
    assert [s.seed for s in racked] == [s.seed for s in plain]
    assert {(s.racks, s.replication_factor) for s in racked} == {(3, 2)}


def test_the_shards_of_a_sweep_take_each_situation_once() -> None:
    spec = parse_sweep({"sweep": {"situations": 23, "assignors": ["sticky", "faust"]}})
    shards = [Shard.parse(f"{k}/4") for k in range(1, 5)]
    taken = [[s for s in expand(spec) if selected(s, shard=shard)] for shard in shards]
    assert sorted(s.situation for part in taken for s in part if s.assignor == "faust") == list(range(23))
    assert [len(part) for part in taken] == [12, 12, 12, 10]  # every 4th situation, both assignors
    assert all(s.situation % 4 == 1 for s in taken[1]) and shards[1].label == "shard-2-of-4"


def test_selected_combines_the_size_cap_and_the_shard() -> None:
    spec = parse_sweep({"sweep": {"situations": 30, "seed": 5, "assignors": ["faust"]}})
    shard = Shard(1, 3)
    cap = sorted(len(s.threads) * s.stateful_tasks for s in expand(spec))[15]
    for s in expand(spec):
        fits = len(s.threads) * s.stateful_tasks <= cap
        assert selected(s, cap, shard) is (fits and s.situation % 3 == 0)


@pytest.mark.parametrize("text", ["0/3", "4/3", "1", "a/b", "1/2/3", "-1/2"])
def test_a_malformed_shard_is_refused(text: str) -> None:
    with pytest.raises(SweepError, match="--shard: K/N"):
        Shard.parse(text)
