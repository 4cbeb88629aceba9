"""The sweep report renders Spark's aggregated rows: headline, distributions, worst scenarios, units."""

from __future__ import annotations

from streamlet.experiments.sweep_report import (
    METRICS,
    Distribution,
    SweepAggregates,
    WorstScenario,
    fmt,
    render_html,
    render_markdown,
    summary_json,
)
from streamlet.experiments.sweep_space import parse_sweep

SPEC = parse_sweep({"sweep": {"name": "t", "situations": 2, "assignors": ["sticky", "balanced"]}})


def aggregates() -> SweepAggregates:
    agg = SweepAggregates(scenarios=4, situations=2, not_converged={"sticky": 0, "balanced": 1})
    for i, a in enumerate(SPEC.assignors):
        for m in METRICS:
            agg.distributions[(a, m)] = Distribution(1 + i, 2 + i, 3 + i, 4 + i)
            agg.worst[(a, m)] = [WorstScenario(1, "2 clients: join", 4 + i)]
    agg.distributions[("sticky", "restore_bytes")] = Distribution(1_500, 2_000_000, 3_500_000_000, 4e9)
    agg.worst_counts[("balanced", "moves")] = 2
    return agg


def test_units_are_readable() -> None:
    assert [fmt("restore_bytes", v) for v in (12, 1_500, 2_000_000, 3_500_000_000)] == [
        "12 B",
        "1.5 kB",
        "2.0 MB",
        "3.5 GB",
    ]
    assert (fmt("skew", 2.0), fmt("moves", 7.0), fmt("rounds", 2.5)) == ("2", "7", "2.5")


def test_markdown_has_the_headline_and_a_section_per_metric() -> None:
    text = render_markdown(SPEC, aggregates(), "Ran here.")
    assert text.startswith("# Sweep report: t\n\n4 scenarios: 2 situations drawn from the space (seed 0)")
    assert "Ran here." in text
    assert "| sticky | 1 | 3 | 1 | 3 | 1 | 3 | 1.5 kB | 3.5 GB | 1 | 3 | 0 |" in text
    assert "| balanced | 2 | 4 | 2 | 4 | 2 | 4 | 2 B | 4 B | 2 | 4 | 1 |" in text
    assert text.count("Worst scenarios per assignor:") == len(METRICS) == 6
    assert "| balanced | 2 | 3 | 4 | 5 | 2 |" in text  # moves: p50 p90 p99 max, strictly worst twice
    assert "| balanced | 5 | #1 | 2 clients: join |" in text


def test_html_and_json_carry_the_same_numbers() -> None:
    html = render_html(SPEC, aggregates())
    assert "<td>3.5 GB</td>" in html and html.count("<table") == 1 + 2 * len(METRICS)
    summary = summary_json(SPEC, aggregates())
    assert summary["assignors"]["balanced"]["moves"] == {  # type: ignore[index]
        "p50": 2,
        "p90": 3,
        "p99": 4,
        "max": 5,
        "strictly_worst_situations": 2,
    }
