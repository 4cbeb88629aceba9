"""The sweep's Spark job on real Spark (local mode): aggregation on hand-made rows, and the CI sweep end to end.

The hand-made rows' percentiles are worked out by hand (linear interpolation between order statistics, as
Spark's `percentile` and numpy's default do). The end-to-end test runs examples/experiments/sweeps/small.toml
(600 scenarios) and checks Spark's aggregates against a plain-Python percentile over the same scenarios
simulated in the test process.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytestmark = pytest.mark.integration  # a Spark JVM in local mode

from streamlet.cli import main  # noqa: E402
from streamlet.experiments.sweep_report import METRICS, WorstScenario  # noqa: E402
from streamlet.experiments.sweep_simulation import run_scenario  # noqa: E402
from streamlet.experiments.sweep_space import expand, load_sweep  # noqa: E402
from streamlet.spark.session import get_spark, session_active, stop_spark  # noqa: E402
from streamlet.spark.sweep import aggregate, pitfalls, run_sweep  # noqa: E402

SMALL = Path(__file__).resolve().parents[3] / "examples" / "experiments" / "sweeps" / "small.toml"
COLUMNS = [
    "situation",
    "assignor",
    "scenario",
    "rounds",
    "converged",
    "moves",
    "restore_bytes",
    "skew",
    "cross_rack",
    "same_rack_standbys",
    "events",
    "kinds",
    "max_warmup_replicas",
    "tasks_per_thread",
]


@pytest.fixture(scope="module", autouse=True)
def spark_session() -> None:
    """The module's one session: the sweep commands below run in it and leave it running, as in a notebook, instead
    of each starting and stopping its own (4 to 8 s each on this machine). The last test stops it."""
    get_spark("local[2]", kafka=False)


SITUATION = (1, "join", 2, "1-9")  # events, kinds, max_warmup_replicas, tasks_per_thread: only pitfalls read them
ROWS = [
    (0, "a", "s0", 1, True, 4, 100, 0, 1, 0, *SITUATION),
    (0, "b", "s0", 2, True, 2, 100, 5, 3, 0, *SITUATION),
    (1, "a", "s1", 3, False, 0, 50, 2, 0, 0, *SITUATION),
    (1, "b", "s1", 1, True, 5, 70, 2, 0, 0, *SITUATION),
    (2, "a", "s2", 2, True, 6, 10, 3, 2, 0, *SITUATION),
    (2, "b", "s2", 2, True, 1, 90, 0, 2, 0, *SITUATION),
]


def test_aggregation_on_hand_made_rows() -> None:
    spark = get_spark("local[2]", kafka=False)
    agg = aggregate(spark.createDataFrame(ROWS, COLUMNS))
    assert (agg.scenarios, agg.situations) == (6, 3)
    # a's moves 0, 4, 6: p50 = 4; p90 at position 1.8 = 4 + 0.8 * 2; p99 at 1.98 = 4 + 0.98 * 2
    d = agg.distributions[("a", "moves")]
    assert (d.p50, d.max) == (4, 6) and math.isclose(d.p90, 5.6) and math.isclose(d.p99, 5.96)
    # b's moves 1, 2, 5: p90 = 2 + 0.8 * 3
    assert math.isclose(agg.distributions[("b", "moves")].p90, 4.4)
    # b's skews 0, 2, 5: p90 = 2 + 0.8 * 3, p99 = 2 + 0.98 * 3
    d = agg.distributions[("b", "skew")]
    assert [d.p50, d.p90, d.p99, d.max] == pytest.approx([2, 4.4, 4.94, 5])
    # strictly worst (ties count for nobody): moves a in s0 and s2, b in s1; restore b in s1 and s2 (s0 ties)
    assert {k: v for k, v in agg.worst_counts.items() if k[1] == "moves"} == {("a", "moves"): 2, ("b", "moves"): 1}
    assert {k: v for k, v in agg.worst_counts.items() if k[1] == "restore_bytes"} == {("b", "restore_bytes"): 2}
    assert agg.worst_counts[("a", "skew")] == agg.worst_counts[("b", "skew")] == 1
    assert agg.worst_counts[("a", "rounds")] == agg.worst_counts[("b", "rounds")] == 1
    # cross-rack reads: b strictly worst in s0 only (s1 and s2 tie); same-rack standbys: all tie at 0
    assert {k: v for k, v in agg.worst_counts.items() if k[1] == "cross_rack"} == {("b", "cross_rack"): 1}
    assert not any(k[1] == "same_rack_standbys" for k in agg.worst_counts)
    assert agg.not_converged == {"a": 1, "b": 0}
    worst = [WorstScenario(2, "s2", 6), WorstScenario(0, "s0", 4), WorstScenario(1, "s1", 0)]
    assert agg.worst[("a", "moves")] == worst
    assert agg.pitfalls == {}  # no HATA in the sweep


#: HATA against sticky on three situations. s0 (a join): HATA skews by 3 where sticky has 0, moves 30 against
#: 10 and takes 4 rebalances for one event: all three pitfalls. s1 (join + replace, 2 events): skew 2 ties
#: sticky's, 15 moves are under 2 x 8, 4 rebalances are 2 per event: none. s2 (a leave): skew 1 is under the
#: threshold, 5 moves are not 10 more than 0, but it did not converge: the rounds pitfall only.
PITFALL_ROWS = [
    (0, "high_availability", "s0", 4, True, 30, 0, 3, 0, 0, 1, "join", 2, "1-9"),
    (0, "sticky", "s0", 1, True, 10, 0, 0, 0, 0, 1, "join", 2, "1-9"),
    (1, "high_availability", "s1", 4, True, 15, 0, 2, 0, 0, 2, "join,replace", 4, "1-9"),
    (1, "sticky", "s1", 2, True, 8, 0, 2, 0, 0, 2, "join,replace", 4, "1-9"),
    (2, "high_availability", "s2", 40, False, 5, 0, 1, 0, 0, 1, "leave", 2, "10-99"),
    (2, "sticky", "s2", 1, True, 0, 0, 0, 0, 0, 1, "leave", 2, "10-99"),
]


def test_seed_000_pitfalls_on_hand_made_rows() -> None:
    spark = get_spark("local[2]", kafka=False)
    found = pitfalls(spark.createDataFrame(PITFALL_ROWS, COLUMNS))
    assert [(f.hits, f.situations) for f in (found["skew"], found["churn"], found["rounds"])] == [
        (1, 3),
        (1, 3),
        (2, 3),
    ]
    assert found["skew"].examples == [WorstScenario(0, "s0", 3)]
    assert found["churn"].examples == [WorstScenario(0, "s0", 30)]
    assert found["rounds"].examples == [WorstScenario(2, "s2", 40), WorstScenario(0, "s0", 4)]
    assert found["rounds"].by_group == {
        ("events", "join"): (1, 2),
        ("events", "leave"): (1, 1),
        ("events", "replace"): (0, 1),
        ("max_warmup_replicas", "2"): (2, 2),
        ("max_warmup_replicas", "4"): (0, 1),
        ("tasks_per_thread", "1-9"): (1, 2),
        ("tasks_per_thread", "10-99"): (1, 1),
    }
    assert found["skew"].by_group[("events", "join")] == (1, 2)


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    pos = p * (len(ordered) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (pos - low) * (ordered[high] - ordered[low])


def test_the_ci_sweep_matches_the_scenarios_simulated_here() -> None:
    spec = load_sweep(SMALL)
    assert spec.scenario_count >= 500
    agg = run_sweep(get_spark("local[2]", kafka=False), spec)
    assert (agg.scenarios, agg.situations) == (spec.scenario_count, spec.situations)
    local: dict[tuple[str, str], list[float]] = {}
    not_converged: dict[str, int] = dict.fromkeys(spec.assignors, 0)
    for scenario in expand(spec):
        m = run_scenario(scenario, spec.max_rounds)
        not_converged[scenario.assignor] += not m.converged
        for metric in METRICS:
            local.setdefault((scenario.assignor, metric), []).append(getattr(m, metric))
    assert agg.not_converged == not_converged
    for key, values in local.items():
        d = agg.distributions[key]
        expected = [_percentile(values, p) for p in (0.5, 0.9, 0.99)] + [max(values)]
        assert [d.p50, d.p90, d.p99, d.max] == pytest.approx(expected), key
        assert len(agg.worst[key]) == 3 and agg.worst[key][0].value == max(values)


def test_the_command_writes_the_report(tmp_path: Path) -> None:
    sweep = tmp_path / "tiny.toml"
    sweep.write_text('[sweep]\nname = "tiny"\nsituations = 4\nassignors = ["sticky", "faust"]\n')
    assert main(["experiment", "sweep", str(sweep), "--master", "local[2]", "--out", str(tmp_path / "out")]) == 0
    assert session_active()  # the module's: the command did not stop it
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "8 scenarios: 4 situations" in markdown and "| sticky |" in markdown and "| faust |" in markdown
    assert "<table" in (tmp_path / "out" / "report.html").read_text()
    assert (tmp_path / "out" / "summary.json").is_file()


def test_max_size_runs_a_labelled_subset(tmp_path: Path) -> None:
    sweep = tmp_path / "tiny.toml"
    sweep.write_text('[sweep]\nname = "tiny"\nseed = 3\nsituations = 6\nassignors = ["faust"]\n')
    spec = load_sweep(sweep)
    kept = sum(len(s.threads) * s.stateful_tasks <= 40 for s in expand(spec))
    assert 0 < kept < 6  # the cap keeps some situations, not all
    out = tmp_path / "out"
    assert main(["experiment", "sweep", str(sweep), "--master", "local[2]", "--max-size", "40", "--out", str(out)]) == 0
    markdown = (out / "report.md").read_text()
    assert f"{kept} scenarios: {kept} situations" in markdown
    assert f"A SUBSET of the sweep: only its situations with clients x stateful tasks <= 40 ({kept} of 6)" in markdown


def test_a_max_size_that_leaves_nothing_is_refused_before_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = tmp_path / "tiny.toml"
    sweep.write_text('[sweep]\nname = "tiny"\nsituations = 2\nassignors = ["faust"]\n')
    assert main(["experiment", "sweep", str(sweep), "--max-size", "1", "--out", str(tmp_path / "out")]) == 2
    assert "--max-size 1 leaves no situation of the sweep" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _headline(out: Path) -> list[str]:
    """The report's headline table: the aggregates, without the note saying how the run was made."""
    return [line for line in (out / "report.md").read_text().splitlines() if line.startswith("| ")]


def test_shards_saved_as_rows_make_the_report_of_the_whole_sweep(tmp_path: Path) -> None:
    sweep = tmp_path / "tiny.toml"
    sweep.write_text('[sweep]\nname = "tiny"\nseed = 7\nsituations = 5\nassignors = ["sticky", "faust"]\n')
    run = ["experiment", "sweep", str(sweep), "--master", "local[2]"]
    assert main([*run, "--out", str(tmp_path / "whole")]) == 0
    rows = tmp_path / "rows"
    for shard in ("1/2", "2/2"):
        assert (
            main([*run, "--shard", shard, "--rows", str(rows), "--out", str(tmp_path / shard.replace("/", "-"))]) == 0
        )
    assert (
        "A SUBSET of the sweep: shard 2 of 2 (the situations numbered 1 modulo 2) (2 of 5)"
        in (tmp_path / "2-2" / "report.md").read_text()
    )
    assert sorted(p.name for p in rows.iterdir()) == ["shard-1-of-2", "shard-2-of-2"]
    assert [len(list((rows / shard).glob("*.parquet"))) for shard in ("shard-1-of-2", "shard-2-of-2")] == [1, 1]

    assert main([*run, "--from-rows", str(rows), "--out", str(tmp_path / "merged")]) == 0

    merged = (tmp_path / "merged" / "report.md").read_text()
    assert "10 scenarios: 5 situations" in merged and "A SUBSET" not in merged
    assert "Aggregated from the rows of 2 shard runs" in merged
    assert _headline(tmp_path / "merged") == _headline(tmp_path / "whole")


def test_overlapping_shards_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = tmp_path / "tiny.toml"
    sweep.write_text('[sweep]\nname = "tiny"\nsituations = 3\nassignors = ["faust"]\n')
    run = ["experiment", "sweep", str(sweep), "--master", "local[2]", "--out", str(tmp_path / "out")]
    rows = tmp_path / "rows"
    assert main([*run, "--rows", str(rows)]) == 0  # the whole sweep: shard 1 of 1
    assert main([*run, "--shard", "1/2", "--rows", str(rows)]) == 0
    capsys.readouterr()

    assert main([*run, "--from-rows", str(rows)]) == 2

    assert "2 scenarios appear in more than one shard" in capsys.readouterr().err


def test_a_command_stops_the_session_it_started(tmp_path: Path) -> None:
    """As the `streamlet` command does: with no session before it, none after it."""
    stop_spark()
    sweep = tmp_path / "tiny.toml"
    sweep.write_text('[sweep]\nname = "tiny"\nsituations = 2\nassignors = ["faust"]\n')
    assert main(["experiment", "sweep", str(sweep), "--master", "local[2]", "--out", str(tmp_path / "out")]) == 0
    assert not session_active()
