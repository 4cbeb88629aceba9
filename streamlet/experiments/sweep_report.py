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


def render_markdown(spec: SweepSpec, agg: SweepAggregates, run_note: str = "") -> str:
    assignors = list(spec.assignors)
    out = [f"# Sweep report: {spec.name}", "", _intro(spec, agg, run_note), "", "## Headline", ""]
    out += markdown_table(HEADLINE_HEADER, headline_rows(assignors, agg))
    for metric in METRICS:
        out += ["", f"## {METRIC_TITLES[metric]}", ""]
        out += markdown_table(DISTRIBUTION_HEADER, _distribution_rows(assignors, agg, metric))
        out += ["", "Worst scenarios per assignor:", ""]
        out += markdown_table(WORST_HEADER, _worst_rows(assignors, agg, metric))
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
    }
