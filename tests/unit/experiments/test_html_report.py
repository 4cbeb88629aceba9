"""report.html and summary.json from seed 000's hand-made rounds and hand-made Spark aggregates (pure)."""

from __future__ import annotations

import json
import re

from streamlet.experiments.aggregates import RunAggregates
from streamlet.experiments.html_report import (
    RunView,
    build_summary,
    moves_with_restores,
    pauses_by_round,
    placement_rows,
    render_html,
    stateful_over_time,
)
from streamlet.experiments.report import summarize
from tests.support.chromium import Elements
from tests.unit.experiments.test_report import RECORD, SEED

# the seed's events are at 1000 * generation ms: rounds at 0, 1, 2 and 3 s from the origin
AGGREGATES = RunAggregates(
    origin_ms=1000,
    bucket_s=1.0,
    events=4,
    throughput=[(1.0, 10.0), (2.0, 30.0), (3.0, 20.0)],
    load={"A": [(1.0, 10.0)], "B": [(1.0, 0.0), (2.0, 30.0)]},
    lag=[(1.0, 3), (2.0, 0), (3.0, 0)],
    pauses=[(3, "1_0", 0.5), (3, "1_2", 1.5), (4, "1_3", 0.25)],
    restored={(3, "C", 0): 40, (4, "C", 3): 7, (4, "A", 5): 99},
    restored_recorded=True,
    restored_bytes={(3, "C", 0): 1200, (4, "C", 3): 210, (4, "A", 5): 5000},
    restored_bytes_recorded=True,
)


def _view(aggregates: RunAggregates | None = AGGREGATES) -> RunView:
    return RunView(summarize("hata", RECORD, SEED), aggregates)


def test_each_move_gets_what_its_destination_restored_for_that_partition() -> None:
    assert moves_with_restores(_view()) == [
        {"round": 3, "task": "1_0", "from": "A", "to": "C", "restored": 40, "restored_bytes": 1200},
        # nothing restored: 0, not unknown
        {"round": 3, "task": "1_2", "from": "A", "to": "B", "restored": 0, "restored_bytes": 0},
        # A restored partition 5, not 1
        {"round": 4, "task": "1_1", "from": "B", "to": "A", "restored": 0, "restored_bytes": 0},
        {"round": 4, "task": "1_3", "from": "B", "to": "C", "restored": 7, "restored_bytes": 210},
    ]
    unknown = RunAggregates(origin_ms=1000, bucket_s=1.0)
    assert {(m["restored"], m["restored_bytes"]) for m in moves_with_restores(_view(unknown))} == {(None, None)}
    # version 1 events: records known, bytes not
    records_only = RunAggregates(origin_ms=1000, bucket_s=1.0, restored=AGGREGATES.restored, restored_recorded=True)
    assert [(m["restored"], m["restored_bytes"]) for m in moves_with_restores(_view(records_only))] == [
        (40, None),
        (0, None),
        (0, None),
        (7, None),
    ]
    page = Elements(render_html([_view(records_only)]))
    assert any("no restored_bytes_total" in t for t in page.text)


def test_the_moves_table_has_bytes_next_to_records_and_totals() -> None:
    page = render_html([_view()])
    moves = page[page.index('<table class="moves">') :]
    rows = re.findall(r"<tr>(.*?)</tr>", moves[: moves.index("</table>")])
    cells = [found for row in rows if (found := re.findall(r"<td[^>]*>(.*?)</td>", row))]
    assert cells[0] == ["3", "1_0", "A", "C", "40", "1200"]
    assert cells[-1] == ["total", "", "", "", "47", "1410"]


def test_placement_spans_follow_the_rounds_and_merge_while_the_role_holds() -> None:
    rows = placement_rows(_view())
    assert rows["A"]["1_0"] == [(0.0, 2.0, "active")]  # rounds 1 and 2, moved to C in round 3
    assert rows["C"]["1_0"] == [(1.0, 2.0, "warmup"), (2.0, 3.0, "active")]
    assert rows["B"]["1_2"] == [(1.0, 2.0, "warmup"), (2.0, 3.0, "active")]
    assert rows["C"]["0_0"] == [(1.0, 3.0, "stateless")]
    assert stateful_over_time(_view())["B"] == [(0.0, 3.0), (1.0, 3.0), (2.0, 4.0), (3.0, 2.0)]


def test_pauses_per_round() -> None:
    assert pauses_by_round(_view()) == [
        {"round": 3, "tasks": 2, "longest_task": "1_2", "longest_s": 1.5, "total_s": 2.0},
        {"round": 4, "tasks": 1, "longest_task": "1_3", "longest_s": 0.25, "total_s": 0.25},
    ]


def test_the_page_has_every_round_and_plots_with_data() -> None:
    page = Elements(render_html([_view()]))
    assert [t["data-round"] for t in page.find("table", class_="round")] == ["1", "2", "3", "4"]
    plots = {p["data-plot"]: int(p["data-points"]) for p in page.find("svg", class_="plot")}
    assert plots["throughput"] == 3 and plots["lag"] == 3 and plots["load"] == 3
    assert plots["stateful"] == 4 + 4 + 3  # A and B in the 4 rounds, C from round 2
    assert {k for k in plots if k.startswith("placement")} == {"placement A", "placement B", "placement C"}
    assert "http" not in "".join(a.get("src", "") + a.get("href", "") for _, a in page.elements)  # nothing fetched


def test_side_by_side_and_a_run_without_metrics() -> None:
    balanced = RunView(summarize("balanced", dict(RECORD, assignor="balanced"), SEED[:2]), None)
    page = Elements(render_html([_view(), balanced]))
    assert page.find("table", class_="side-by-side")
    assert {p["data-plot"] for p in page.find("svg", class_="plot")} >= {"throughput compared", "lag compared"}
    assert [s["data-run"] for s in page.find("section", class_="run")] == ["hata", "balanced"]
    assert any("no readable metrics event" in t for t in page.text)


def test_summary_json() -> None:
    summary = json.loads(json.dumps(build_summary([_view()])))
    [run] = summary["runs"]
    assert run["restored_records_for_moves"] == 47
    assert run["restored_bytes_for_moves"] == 1410  # 1200 + 210
    assert [c["seconds"] for c in run["convergence"]] == [0.0, 2.0]
    assert run["max_stateful_on_one_client"] == {"tasks": 4, "client": "B", "round": 3}
    assert run["series"]["throughput"] == [[1.0, 10.0], [2.0, 30.0], [3.0, 20.0]]
    assert [r["round"] for r in run["rounds"]] == [1, 2, 3, 4]
