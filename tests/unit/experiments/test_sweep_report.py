"""The sweep report renders Spark's aggregated rows: headline, distributions, worst scenarios, units."""

from __future__ import annotations

from streamlet.experiments.sweep_report import (
    CHURN_AT_LEAST,
    CHURN_FACTOR,
    METRICS,
    PITFALLS,
    ROUNDS_PER_EVENT_ABOVE,
    SKEW_AT_LEAST,
    Distribution,
    PitfallFinding,
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


HATA_SPEC = parse_sweep({"sweep": {"name": "p", "situations": 3, "assignors": ["high_availability", "sticky"]}})


def pitfall_aggregates() -> SweepAggregates:
    """A small synthetic summary: three situations, HATA skewed in one, churning in two, slow in all three."""
    agg = SweepAggregates(scenarios=6, situations=3)
    for a in HATA_SPEC.assignors:
        for m in METRICS:
            agg.distributions[(a, m)] = Distribution(0, 0, 0, 0)
    agg.pitfalls = {
        "skew": PitfallFinding(
            1,
            3,
            {("events", "join"): (1, 2), ("events", "replace"): (0, 1), ("max_warmup_replicas", "2"): (1, 3)},
            [WorstScenario(7, "3 clients (1 thr), 40+0 tasks: join", 4)],
        ),
        "churn": PitfallFinding(
            2,
            3,
            {
                ("tasks_per_thread", ">=100"): (1, 1),
                ("tasks_per_thread", "<1"): (0, 1),
                ("tasks_per_thread", "10-99"): (1, 1),
                ("events", "replace"): (1, 1),
            },
        ),
        "rounds": PitfallFinding(3, 3, {("events", "join"): (2, 2)}),
    }
    return agg


def test_the_pitfall_section_states_rules_shares_and_worst_situations() -> None:
    text = render_markdown(HATA_SPEC, pitfall_aggregates())
    section = text[text.index("## Seed 000's pitfalls in the space") : text.index("## The space")]
    assert section.count("### ") == len(PITFALLS) == 3
    skew = section[section.index("### skew after joins") : section.index("### moves and warmup churn")]
    assert "HATA shows it in 1 of 3 situations (33%)" in skew
    assert f"at least {SKEW_AT_LEAST} tasks above a client's even share" in skew
    assert "| events | join | 1 of 2 | 50% |" in skew and "| events | replace | 0 of 1 | 0% |" in skew
    assert "| max_warmup_replicas | 2 | 1 of 3 | 33% |" in skew
    assert "| 4 | #7 | 3 clients (1 thr), 40+0 tasks: join |" in skew
    churn = section[section.index("### moves and warmup churn") : section.index("### rounds to converge")]
    assert f"{CHURN_FACTOR}x as many stateful actives" in churn and f"at least {CHURN_AT_LEAST} more" in churn
    # events first, then the numeric groups in numeric order
    rows = [line for line in churn.splitlines() if line.startswith("| events") or line.startswith("| tasks_per")]
    assert [r.split(" | ")[1] for r in rows] == ["replace", "<1", "10-99", ">=100"]
    assert "Worst situations" not in churn  # no examples given
    rounds = section[section.index("### rounds to converge") :]
    assert f"more than {ROUNDS_PER_EVENT_ABOVE} rebalances per event" in rounds and "3 of 3 situations (100%)" in rounds


def test_the_pitfall_section_is_in_html_and_json_and_absent_without_findings() -> None:
    html = render_html(HATA_SPEC, pitfall_aggregates())
    assert "<h2>Seed 000's pitfalls in the space</h2>" in html and html.count('class="pitfall"') == 3
    summary = summary_json(HATA_SPEC, pitfall_aggregates())
    assert summary["pitfalls"]["skew"]["hits"] == 1  # type: ignore[index]
    assert summary["pitfalls"]["skew"]["examples"] == [  # type: ignore[index]
        {"situation": 7, "description": "3 clients (1 thr), 40+0 tasks: join", "value": 4}
    ]
    assert "pitfalls in the space" not in render_markdown(SPEC, aggregates())
