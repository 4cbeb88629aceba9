"""Assignor scenarios: HighAvailabilityTaskAssignor vs BalancedTaskAssignor, rebalance by rebalance.

A pure simulation (no Kafka): each rebalance is one `simulate(case, assignor)` call on the assignor
simulation contract, and the next rebalance's input is built from its output with the research note's
round model: between rebalances every assigned task is fully restored, so actives report -2 (running)
and standbys/warmups report offset sum = changelog end (lag 0); tasks a client was not given report
nothing (their state is gone). Departed clients disappear; new clients start with no state.

Each scenario starts from the assignor's *own* steady state for the pre-event group (a fresh deployment
run to convergence), except `seed000` and `research-3to4`, which start from the documented layouts.
Then the event (clients join, or the client with the smallest Java UUID is replaced by a fresh one)
happens and rebalances run until one requests no follow-up (max 40).

Columns (from the event on):
  rounds    rebalances until the first one that asks for no follow-up (that one included)
  act-rds   rebalances until the stateful actives reach their final layout (standbys may still move)
  moves     stateful active tasks whose client changed, summed over the rebalances (departed tasks count)
  all-moves the same for all active tasks (stateful + stateless)
  max       largest number of stateful actives on one client in any rebalance's output
  max/thr   the same per stream thread (count / capacity)
  pre-max   that maximum per thread in the pre-event steady state (a lower bound on "never worse")
  scratch   stateful actives moved to a client with no local state for them (restored from scratch)
  pauses    stateful actives moved to a client that is not caught up (lag > acceptable.recovery.lag):
            the task stops until restored; both assignors only do it when no client is caught up
  relocated stateful tasks of surviving clients whose final owner differs from their pre-event owner
  final     stateful actives per client after convergence (Java UUID order)

Usage: .venv/bin/python bench/assignor_scenarios.py [--json PATH]
"""

from __future__ import annotations

import argparse
import copy
import json
import struct
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlet.assignment.simulation import simulate  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "assignor_scenarios.json"
SEEDS = ROOT / "tests" / "fixtures" / "assignment"
SEED_CASE = SEEDS / "seed000-round1-third-client-joins.json"
SEED_ROUND2 = SEEDS / "seed000-round2-after-first-probing.json"  # the state Kafka Streams 2.7.2 really produced
ASSIGNORS = ("high_availability", "balanced")  # the default; --assignors picks any task_assignor names
SHORT = {"high_availability": "HATA", "balanced": "bal", "legacy_sticky": "lsty", "fallback_prior": "fbp"}
MAX_ROUNDS = 40
SMALL_END, LARGE_END = 1_000, 1_000_000  # changelog end offset sums, vs acceptable.recovery.lag = 10 000


def pid(n: int) -> str:
    return str(uuid.UUID(int=n))


def java_order(pids: Any) -> list[str]:
    return sorted(pids, key=lambda p: struct.unpack(">qq", uuid.UUID(p).bytes))


def task_key(t: str) -> tuple[int, int]:
    s, p = t.split("_")
    return int(s), int(p)


# ---- the round model ------------------------------------------------------------------------------------


def case_from_layout(base: dict[str, Any], layout: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A contract case from `layout` {pid: {capacity, active, standby}} (everything restored)."""
    stateful = set(base["tasks"]["stateful"])
    ends = base["changelog_end_offset_sums"]
    clients = {}
    for p, c in layout.items():
        sums = {t: ends[t] for t in c.get("standby", [])}
        sums.update({t: -2 for t in c.get("active", []) if t in stateful})
        clients[p] = {
            "capacity": c["capacity"],
            "prev_active": sorted(c.get("active", []), key=task_key),
            "prev_standby": sorted(c.get("standby", []), key=task_key),
            "task_offset_sums": dict(sorted(sums.items(), key=lambda kv: task_key(kv[0]))),
        }
    case = copy.deepcopy(base)
    case["clients"] = clients
    return case


def layout_of(case: dict[str, Any], result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        p: {"capacity": case["clients"][p]["capacity"], "active": list(c["active"]), "standby": list(c["standby"])}
        for p, c in result["clients"].items()
    }


def run_rounds(case: dict[str, Any], assignor: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Rebalances until one asks for no follow-up; [(input, output), ...]."""
    rounds = []
    for _ in range(MAX_ROUNDS):
        result = simulate(case, assignor)
        rounds.append((case, result))
        if result["followup_rebalance_ms"] is None:
            break
        case = case_from_layout(case, layout_of(case, result))
    return rounds


def steady_state(base: dict[str, Any], capacities: dict[str, int], assignor: str) -> dict[str, dict[str, Any]]:
    """The assignor's own converged layout for a fresh deployment of `capacities`."""
    fresh = case_from_layout(base, {p: {"capacity": c} for p, c in capacities.items()})
    case, result = run_rounds(fresh, assignor)[-1]
    layout = layout_of(case, result)
    again = simulate(case_from_layout(base, layout), assignor)
    assert again["followup_rebalance_ms"] is None and layout_of(case, again) == layout, "not stable"
    return layout


# ---- metrics ----------------------------------------------------------------------------------------------


def owners(result_or_layout: dict[str, Any], tasks: set[str]) -> dict[str, str]:
    clients = result_or_layout.get("clients", result_or_layout)
    return {t: p for p, c in clients.items() for t in c["active"] if t in tasks}


def measure(
    assignor: str,
    pre: dict[str, dict[str, Any]],
    rounds: list[tuple[dict[str, Any], dict[str, Any]]],
    departed: set[str],
) -> dict[str, Any]:
    first = rounds[0][0]
    stateful = set(first["tasks"]["stateful"])
    every = stateful | set(first["tasks"]["stateless"])
    ends = first["changelog_end_offset_sums"]
    prev_sf, prev_all = owners(pre, stateful), owners(pre, every)
    pre_max = max(
        (sum(t in stateful for t in c["active"]) / c["capacity"] for p, c in pre.items() if p not in departed),
        default=0.0,
    )
    acceptable = first["config"]["acceptable_recovery_lag"]
    moves = all_moves = scratch = pauses = 0
    max_count, max_norm = 0, 0.0
    for case, result in rounds:
        now_sf, now_all = owners(result, stateful), owners(result, every)
        moves += sum(prev_sf.get(t) != p for t, p in now_sf.items())
        all_moves += sum(prev_all.get(t) != p for t, p in now_all.items())
        for t, p in now_sf.items():
            if prev_sf.get(t) == p:
                continue
            reported = case["clients"][p]["task_offset_sums"].get(t)
            if reported is None and ends[t] > 0:
                scratch += 1
            lag = ends[t] if reported is None or reported > ends[t] else ends[t] - reported
            if reported != -2 and lag > acceptable:
                pauses += 1
        for p, c in result["clients"].items():
            n = sum(t in stateful for t in c["active"])
            max_count = max(max_count, n)
            max_norm = max(max_norm, n / case["clients"][p]["capacity"])
        prev_sf, prev_all = now_sf, now_all
    pre_sf = owners(pre, stateful)
    final = owners(rounds[-1][1], stateful)
    active_rounds = 1 + max((i for i, (_, r) in enumerate(rounds) if owners(r, stateful) != final), default=-1) + 1
    relocated = sum(final[t] != p for t, p in pre_sf.items() if p not in departed)
    last_case, last = rounds[-1]
    per_client = [sum(t in stateful for t in c["active"]) for c in last["clients"].values()]
    converged = last["followup_rebalance_ms"] is None
    if converged:  # stable: the same input again gives the same output and no follow-up
        again = simulate(case_from_layout(last_case, layout_of(last_case, last)), assignor)
        converged = again == last
    return {
        "rounds": len(rounds),
        "active_rounds": active_rounds,
        "converged": converged,
        "moves": moves,
        "all_moves": all_moves,
        "max": max_count,
        "max_per_thread": round(max_norm, 3),
        "pre_max_per_thread": round(pre_max, 3),
        "scratch": scratch,
        "pauses": pauses,
        "relocated": relocated,
        "final": per_client,
    }


# ---- scenarios --------------------------------------------------------------------------------------------


def base_case(
    *, stateful: int, stateless: int, end: int, standbys: int, warmups: int, acceptable: int = 10_000
) -> dict[str, Any]:
    sf = [f"1_{i}" for i in range(stateful)]
    sl = [f"0_{i}" for i in range(stateless)]
    return {
        "config": {
            "num_standby_replicas": standbys,
            "max_warmup_replicas": warmups,
            "acceptable_recovery_lag": acceptable,
            "probing_rebalance_interval_ms": 600_000,
        },
        "tasks": {"stateless": sl, "stateful": sf},
        "changelog_end_offset_sums": dict.fromkeys(sf, end),
        "clients": {},
    }


def scenarios() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    # seed 000: the experiment's own layout and config (2 threads per client, acceptable lag 0)
    seed = json.loads(SEED_CASE.read_text())
    seed_pre = {
        p: {"capacity": c["capacity"], "active": c["prev_active"], "standby": []} for p, c in seed["clients"].items()
    }
    out.append({"name": "seed000 2->3 (6 sf, 6 sl, w=2, acc=0)", "start": ("case", seed, seed_pre), "departed": set()})
    seed2 = json.loads(SEED_ROUND2.read_text())
    seed2_pre = {
        p: {"capacity": c["capacity"], "active": c["prev_active"], "standby": c["prev_standby"]}
        for p, c in seed2["clients"].items()
    }
    out.append({"name": "seed000 from recorded round-2 state", "start": ("case", seed2, seed2_pre), "departed": set()})

    # research note §6.10 #3: 3->4, 12 stateful, 1 standby, end 1e6, documented start layout
    tasks = [f"{s}_{p}" for s in (0, 1) for p in range(6)]
    conv = {
        "config": {
            "num_standby_replicas": 1,
            "max_warmup_replicas": 2,
            "acceptable_recovery_lag": 10_000,
            "probing_rebalance_interval_ms": 600_000,
        },
        "tasks": {"stateless": [], "stateful": tasks},
        "changelog_end_offset_sums": dict.fromkeys(tasks, LARGE_END),
        "clients": {},
    }
    layout = {
        pid(1): {"capacity": 1, "active": tasks[0:4], "standby": tasks[4:8]},
        pid(2): {"capacity": 1, "active": tasks[4:8], "standby": tasks[8:12]},
        pid(3): {"capacity": 1, "active": tasks[8:12], "standby": tasks[0:4]},
    }
    start = case_from_layout(conv, {**layout, pid(4): {"capacity": 1}})
    out.append({"name": "research 3->4 (12 sf, s=1, w=2, large)", "start": ("case", start, layout), "departed": set()})

    for before, after in ((2, 3), (3, 4), (4, 6)):
        for size, end in (("small", SMALL_END), ("large", LARGE_END)):
            for w in (1, 2):
                base = base_case(stateful=12, stateless=6, end=end, standbys=1, warmups=w)
                out.append(
                    {
                        "name": f"scale {before}->{after} (12 sf, 6 sl, s=1, w={w}, {size})",
                        "start": (
                            "join",
                            base,
                            {pid(i): 1 for i in range(1, before + 1)},
                            {pid(i): 1 for i in range(before + 1, after + 1)},
                        ),
                        "departed": set(),
                    }
                )
    for size, end in (("small", SMALL_END), ("large", LARGE_END)):
        for s in (0, 1):
            base = base_case(stateful=6, stateless=0, end=end, standbys=s, warmups=2)
            out.append(
                {
                    "name": f"replace smallest of 3 (6 sf, s={s}, w=2, {size})",
                    "start": ("replace", base, {pid(i): 1 for i in (1, 2, 3)}, pid(1), pid(9)),
                    "departed": {pid(1)},
                }
            )
        base = base_case(stateful=12, stateless=0, end=end, standbys=1, warmups=2)
        out.append(
            {
                "name": f"replace smallest of 4 (12 sf, s=1, w=2, {size})",
                "start": ("replace", base, {pid(i): 1 for i in (1, 2, 3, 4)}, pid(1), pid(9)),
                "departed": {pid(1)},
            }
        )
    for size, end in (("small", SMALL_END), ("large", LARGE_END)):
        base = base_case(stateful=12, stateless=4, end=end, standbys=0, warmups=2)
        out.append(
            {
                "name": f"uneven 1+3 thr, +2 thr (12 sf, 4 sl, w=2, {size})",
                "start": ("join", base, {pid(1): 1, pid(2): 3}, {pid(3): 2}),
                "departed": set(),
            }
        )
    return out


def run_scenario(scenario: dict[str, Any], assignor: str) -> dict[str, Any]:
    kind = scenario["start"][0]
    if kind == "case":
        _, start, pre = scenario["start"]
    elif kind == "join":
        _, base, old, new = scenario["start"]
        pre = steady_state(base, old, assignor)
        start = case_from_layout(base, {**pre, **{p: {"capacity": c} for p, c in new.items()}})
    else:
        _, base, old, gone, fresh = scenario["start"]
        pre = steady_state(base, old, assignor)
        survivors = {p: c for p, c in pre.items() if p != gone}
        start = case_from_layout(base, {**survivors, fresh: {"capacity": old[gone]}})
    rounds = run_rounds(start, assignor)
    return measure(assignor, pre, rounds, scenario["departed"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", default=str(RESULTS), help="where to write the results (JSON)")
    parser.add_argument(
        "--assignors", default=",".join(ASSIGNORS), help="comma list of task_assignor names (e.g. sticky,faust)"
    )
    args = parser.parse_args(argv)
    assignors = [a.strip() for a in args.assignors.split(",") if a.strip()]
    rows = []
    for scenario in scenarios():
        rows.append({"scenario": scenario["name"], **{a: run_scenario(scenario, a) for a in assignors}})
    cols = (
        "rounds",
        "active_rounds",
        "moves",
        "all_moves",
        "max",
        "max_per_thread",
        "pre_max_per_thread",
        "scratch",
        "pauses",
    )
    cols += ("relocated",)
    heads = ("rounds", "act-rds", "moves", "all-moves", "max", "max/thr", "pre-max", "scratch", "pauses", "relocated")
    print(f"{'scenario':<50} {'':<4} " + " ".join(f"{h:>7}" for h in heads) + "  final")
    for row in rows:
        for a in assignors:
            m = row[a]
            cells = " ".join(f"{m[c]:>7}" for c in cols)
            flag = "" if m["converged"] else "  (NOT CONVERGED)"
            name = row["scenario"] if a == assignors[0] else ""
            print(f"{name:<50} {SHORT.get(a, a)[:4]:<4} {cells}  {m['final']}{flag}")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"round_model": __doc__.split("\n\n")[1], "rows": rows}, indent=1) + "\n")
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
