"""The sweep report: each assignor's distribution per metric, where it is worst, and the headline table.

Pure: it renders the aggregated rows Spark computed (`streamlet.spark.sweep`), never the per-scenario rows,
so a sweep of any size reports from a few hundred numbers. Markdown for docs and terminals; the HTML page
reuses the experiment report's table helper and style.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

from streamlet.experiments.html_report import CSS, html_table
from streamlet.experiments.report import markdown_table
from streamlet.experiments.sweep_space import SweepSpec

#: The per-scenario metrics the report ranks (larger is worse for each), with how to print them.
METRICS = ("moves", "restore_bytes", "skew", "rounds", "cross_rack", "same_rack_standbys")
METRIC_TITLES = {
    "moves": "stateful active moves",
    "restore_bytes": "bytes restored from changelogs",
    "skew": "max skew: active tasks a client runs above its even share (rounded up)",
    "rounds": "rebalances to converge",
    "cross_rack": "partitions read across racks (actives' sources, standbys' changelogs; 0 without racks)",
    "same_rack_standbys": "standbys in the rack of their active (0 without racks)",
}
PERCENTILES = (0.5, 0.9, 0.99)

#: The assignor seed 000 (and docs/hata-cooperative-churn.md) is about.
HATA = "high_availability"
#: Seed 000's pitfalls of HATA, each a condition on HATA's row of a situation and the best row of any assignor
#: on the same situation (Spark evaluates them: `streamlet.spark.sweep`). The thresholds are the report's.
SKEW_AT_LEAST = 2  # tasks above a client's even share, and more than the least-skewed assignor's
CHURN_FACTOR, CHURN_AT_LEAST = 2, 10  # moves >= 2x the fewest any assignor made, and >= 10 more
ROUNDS_PER_EVENT_ABOVE = 2  # more than the event's rebalance and one probing rebalance, per event
PITFALLS = ("skew", "churn", "rounds")
PITFALL_TITLES = {
    "skew": "skew after joins and replacements",
    "churn": "moves and warmup churn",
    "rounds": "rounds to converge",
}
PITFALL_RULES = {
    "skew": (
        f"HATA's converged skew is at least {SKEW_AT_LEAST} tasks above a client's even share, and above the "
        "least-skewed assignor's on the same situation. Seed 000: 'the skew can get worse on the way' (4 of 6 "
        "stateful tasks on one client after a join)."
    ),
    "churn": (
        f"HATA moves at least {CHURN_FACTOR}x as many stateful actives as the assignor that moved fewest on the "
        f"same situation, and at least {CHURN_AT_LEAST} more. Seed 000: replacing one client by another process "
        "id can reshuffle the stateful tasks again and again."
    ),
    "rounds": (
        f"HATA needs more than {ROUNDS_PER_EVENT_ABOVE} rebalances per event to converge, or does not converge "
        "within max_rounds. Seed 000: a new client gets stateful tasks only max.warmup.replicas at a time, one "
        "probing rebalance (10 minutes by default) after another."
    ),
}
#: Where the report locates each pitfall: situations grouped by these dimensions (Spark columns).
PITFALL_DIMENSIONS = ("events", "max_warmup_replicas", "tasks_per_thread")


@dataclass(frozen=True)
class Distribution:
    p50: float
    p90: float
    p99: float
    max: float


@dataclass(frozen=True)
class WorstScenario:
    situation: int
    description: str
    value: float


@dataclass(frozen=True)
class PitfallFinding:
    """Where HATA shows one pitfall: how many situations, their share per group of the space, the worst ones."""

    hits: int
    situations: int
    #: (dimension, group) -> (situations with the pitfall, situations in the group)
    by_group: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    examples: list[WorstScenario] = field(default_factory=list)


@dataclass
class SweepAggregates:
    """What the Spark job hands back: percentiles, worst scenarios and counts per assignor and metric."""

    scenarios: int
    situations: int
    distributions: dict[tuple[str, str], Distribution] = field(default_factory=dict)
    #: situations where the assignor is strictly the worst of all assignors on the metric
    worst_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    worst: dict[tuple[str, str], list[WorstScenario]] = field(default_factory=dict)
    not_converged: dict[str, int] = field(default_factory=dict)
    #: seed 000's pitfalls (`PITFALLS`), when HATA is one of the sweep's assignors
    pitfalls: dict[str, PitfallFinding] = field(default_factory=dict)


def fmt(metric: str, value: float) -> str:
    if metric == "restore_bytes":
        for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
            if value >= scale:
                return f"{value / scale:.1f} {unit}"
        return f"{value:.0f} B"
    return f"{value:g}"


def headline_rows(assignors: Sequence[str], agg: SweepAggregates) -> list[list[str]]:
    rows = []
    for a in assignors:
        row = [a]
        for metric in ("moves", "skew", "rounds", "restore_bytes", "cross_rack"):
            d = agg.distributions[(a, metric)]
            row += [fmt(metric, d.p50), fmt(metric, d.p99)]
        row.append(str(agg.not_converged.get(a, 0)))
        rows.append(row)
    return rows


HEADLINE_HEADER = [
    "assignor",
    "moves p50",
    "moves p99",
    "skew p50",
    "skew p99",
    "rounds p50",
    "rounds p99",
    "restore p50",
    "restore p99",
    "cross-rack p50",
    "cross-rack p99",
    "not converged",
]


def _distribution_rows(assignors: Sequence[str], agg: SweepAggregates, metric: str) -> list[list[str]]:
    rows = []
    for a in assignors:
        d = agg.distributions[(a, metric)]
        worst = agg.worst_counts.get((a, metric), 0)
        rows.append([a, *(fmt(metric, v) for v in (d.p50, d.p90, d.p99, d.max)), str(worst)])
    return rows


def _worst_rows(assignors: Sequence[str], agg: SweepAggregates, metric: str) -> list[list[str]]:
    return [
        [a, fmt(metric, w.value), f"#{w.situation}", w.description]
        for a in assignors
        for w in agg.worst.get((a, metric), [])
    ]


DISTRIBUTION_HEADER = ["assignor", "p50", "p90", "p99", "max", "situations where strictly worst"]
WORST_HEADER = ["assignor", "value", "situation", "scenario"]


def _intro(spec: SweepSpec, agg: SweepAggregates, run_note: str) -> str:
    return (
        f"{agg.scenarios} scenarios: {agg.situations} situations drawn from the space (seed {spec.seed}), each "
        f"run under {len(spec.assignors)} assignors. {run_note} Metrics are summed over each scenario's events "
        "after the group's first deployment converged; skew, cross-rack reads and same-rack standbys are the "
        "worst event's converged layout (see streamlet/experiments/sweep_simulation.py; both rack metrics are 0 "
        "where the space has no racks)."
    )


PITFALL_GROUP_HEADER = ["dimension", "group", "situations with the pitfall", "share"]
PITFALL_EXAMPLE_HEADER = ["severity", "situation", "scenario"]
PITFALL_INTRO = (
    "Seed 000 describes three pitfalls of HighAvailabilityTaskAssignor after membership changes. Each is a "
    "condition on HATA's metrics in a situation against the best assignor's on the same situation; the tables "
    "give, per group of the space, the share of situations where HATA shows it, and the worst situations "
    "(severity: skew in tasks, moves, rebalances). Groups: `events` = situations with at least one event of "
    "that kind; `max_warmup_replicas`; `tasks_per_thread` = stateful tasks over all threads at deployment."
)


def _share(hits: int, total: int) -> str:
    return f"{100 * hits / total:.0f}%" if total else "-"


def _pitfall_group_rows(finding: PitfallFinding) -> list[list[str]]:
    return [
        [dim, group, f"{hits} of {total}", _share(hits, total)]
        for (dim, group), (hits, total) in sorted(
            finding.by_group.items(),
            key=lambda kv: (
                PITFALL_DIMENSIONS.index(kv[0][0]) if kv[0][0] in PITFALL_DIMENSIONS else len(PITFALL_DIMENSIONS),
                _group_order(kv[0][1]),
            ),
        )
    ]


def _group_order(group: str) -> tuple[float, str]:
    """Numeric groups (`2`, `<1`, `10-99`, `>=100`) by their first number, others by name."""
    digits = "".join(c if c.isdigit() else " " for c in group).split()
    return (float(digits[0]) - (0.5 if group.startswith("<") else 0), group) if digits else (float("inf"), group)


def _pitfall_example_rows(finding: PitfallFinding) -> list[list[str]]:
    return [[f"{w.value:g}", f"#{w.situation}", w.description] for w in finding.examples]


def _pitfall_summary(name: str, finding: PitfallFinding) -> str:
    return (
        f"HATA shows it in {finding.hits} of {finding.situations} situations "
        f"({_share(finding.hits, finding.situations)}). Rule: {PITFALL_RULES[name]}"
    )


def pitfall_markdown(agg: SweepAggregates) -> list[str]:
    """The "seed 000's pitfalls" section (empty when the sweep did not run HATA)."""
    if not agg.pitfalls:
        return []
    out = ["", "## Seed 000's pitfalls in the space", "", PITFALL_INTRO]
    for name in PITFALLS:
        finding = agg.pitfalls.get(name)
        if finding is None:
            continue
        out += ["", f"### {PITFALL_TITLES[name]}", "", _pitfall_summary(name, finding), ""]
        out += markdown_table(PITFALL_GROUP_HEADER, _pitfall_group_rows(finding))
        if finding.examples:
            out += ["", "Worst situations:", ""]
            out += markdown_table(PITFALL_EXAMPLE_HEADER, _pitfall_example_rows(finding))
    return out


def _pitfall_html(agg: SweepAggregates) -> list[str]:
    if not agg.pitfalls:
        return []
    out = ["<h2>Seed 000's pitfalls in the space</h2>", f"<p>{escape(PITFALL_INTRO)}</p>"]
    for name in PITFALLS:
        finding = agg.pitfalls.get(name)
        if finding is None:
            continue
        out.append(f"<h3>{escape(PITFALL_TITLES[name])}</h3><p>{escape(_pitfall_summary(name, finding))}</p>")
        out.append(html_table(PITFALL_GROUP_HEADER, _pitfall_group_rows(finding), "pitfall"))
        if finding.examples:
            out.append(html_table(PITFALL_EXAMPLE_HEADER, _pitfall_example_rows(finding), "worst", "worst situations"))
    return out


def render_markdown(spec: SweepSpec, agg: SweepAggregates, run_note: str = "") -> str:
    assignors = list(spec.assignors)
    out = [f"# Sweep report: {spec.name}", "", _intro(spec, agg, run_note), "", "## Headline", ""]
    out += markdown_table(HEADLINE_HEADER, headline_rows(assignors, agg))
    for metric in METRICS:
        out += ["", f"## {METRIC_TITLES[metric]}", ""]
        out += markdown_table(DISTRIBUTION_HEADER, _distribution_rows(assignors, agg, metric))
        out += ["", "Worst scenarios per assignor:", ""]
        out += markdown_table(WORST_HEADER, _worst_rows(assignors, agg, metric))
    out += pitfall_markdown(agg)
    out += ["", "## The space", "", "```toml"]
    out += [f"{k} = {v!r}" for k, v in sorted(spec.space.items())]
    out += ["```", ""]
    return "\n".join(out)


def render_html(spec: SweepSpec, agg: SweepAggregates, run_note: str = "") -> str:
    assignors = list(spec.assignors)
    title = f"streamlet sweep report: {spec.name}"
    out = [
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>',
        f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1>",
        f"<p>{escape(_intro(spec, agg, run_note))}</p>",
        "<h2>Headline</h2>",
        html_table(HEADLINE_HEADER, headline_rows(assignors, agg), "headline"),
    ]
    for metric in METRICS:
        out.append(f"<h2>{escape(METRIC_TITLES[metric])}</h2>")
        out.append(html_table(DISTRIBUTION_HEADER, _distribution_rows(assignors, agg, metric), "distribution"))
        out.append(html_table(WORST_HEADER, _worst_rows(assignors, agg, metric), "worst", "worst scenarios"))
    out += _pitfall_html(agg)
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def summary_json(spec: SweepSpec, agg: SweepAggregates) -> Mapping[str, object]:
    """The aggregates as JSON (for comparing sweeps without re-running them)."""
    return {
        "name": spec.name,
        "seed": spec.seed,
        "scenarios": agg.scenarios,
        "situations": agg.situations,
        "assignors": {
            a: {
                "not_converged": agg.not_converged.get(a, 0),
                **{
                    m: {
                        **vars(agg.distributions[(a, m)]),
                        "strictly_worst_situations": agg.worst_counts.get((a, m), 0),
                    }
                    for m in METRICS
                },
            }
            for a in spec.assignors
        },
        "pitfalls": {
            name: {
                "hits": f.hits,
                "situations": f.situations,
                "by_group": [
                    {"dimension": dim, "group": group, "hits": hits, "situations": total}
                    for (dim, group), (hits, total) in sorted(f.by_group.items())
                ],
                "examples": [vars(w) for w in f.examples],
            }
            for name, f in agg.pitfalls.items()
        },
    }
