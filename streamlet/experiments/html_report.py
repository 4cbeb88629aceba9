"""`report.html` and `summary.json` of one or more runs (pure: summaries and Spark's aggregates in, text out).

The numbers of the rounds come from `report` (the same ones the markdown prints), the time series from
the Spark job; this module only lays them out. The page is self-contained: CSS inline, charts as inline SVG,
no script and nothing fetched, so it opens from a file on a machine without network.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from streamlet.experiments.aggregates import RunAggregates
from streamlet.experiments.protocols import HEADER as PROTOCOL_HEADER
from streamlet.experiments.protocols import compares_protocols, protocol_rows
from streamlet.experiments.report import (
    Round,
    RunSummary,
    convergences,
    max_excess,
    max_skew,
    metrics_table,
    rebalances_per_step,
    task_moves,
)
from streamlet.experiments.svg import ROLE_COLOURS, line_chart, placement_timeline

BYTES_NOTE = (
    "bytes restored are the key + value bytes of the changelog records restored (Kafka's bytes consumed without "
    "headers and batch framing); workers whose metrics events predate version 2 do not report them"
)


MOVE_COUNTS = ("restored", "restored_bytes")


@dataclass
class RunView:
    """One run as the report shows it."""

    summary: RunSummary
    aggregates: RunAggregates | None

    @property
    def origin_ms(self) -> int | None:
        if self.aggregates is not None:
            return self.aggregates.origin_ms
        return next((r.timestamp_ms for r in self.summary.rounds if r.timestamp_ms is not None), None)

    def seconds(self, ms: int | None) -> float | None:
        origin = self.origin_ms
        return None if ms is None or origin is None else (ms - origin) / 1000.0

    @property
    def end_s(self) -> float:
        ends = [t for r in self.summary.rounds if (t := self.seconds(r.timestamp_ms)) is not None]
        if self.aggregates is not None:
            ends += [t for t, _ in self.aggregates.throughput]
        return max(ends, default=0.0)


def _partition(task: str) -> int | None:
    try:
        return int(task.split("_", 1)[1])
    except (IndexError, ValueError):
        return None


def moves_with_restores(view: RunView) -> list[dict[str, Any]]:
    """Each stateful move, with the records and key + value bytes its destination restored for that task's
    partition after it (None when the events do not say). Changelog partitions are matched to tasks by
    partition number."""
    agg = view.aggregates
    recorded = {  # the keys are MOVE_COUNTS
        "restored": agg.restored if agg is not None and agg.restored_recorded else None,
        "restored_bytes": agg.restored_bytes if agg is not None and agg.restored_bytes_recorded else None,
    }
    out = []
    for move in task_moves(view.summary.rounds):
        partition = _partition(move.task)
        entry: dict[str, Any] = {"round": move.round, "task": move.task, "from": move.source, "to": move.destination}
        for name, counts in recorded.items():
            if counts is None:
                entry[name] = None  # the events do not say
            else:
                entry[name] = 0 if partition is None else counts.get((move.round, move.destination, partition), 0)
        out.append(entry)
    return out


def placement_rows(view: RunView) -> dict[str, dict[str, list[tuple[float, float, str]]]]:
    """client -> task -> (start s, end s, role) spans, from each round's event to the next one's."""
    timed = [(t, r) for r in view.summary.rounds if (t := view.seconds(r.timestamp_ms)) is not None]
    end = view.end_s
    out: dict[str, dict[str, list[tuple[float, float, str]]]] = {}
    for i, (start, round_) in enumerate(timed):
        stop = timed[i + 1][0] if i + 1 < len(timed) else max(end, start)
        for client in round_.clients:
            tasks = out.setdefault(client.name, {})
            roles = [(t, "active" if t in round_.stateful else "stateless") for t in client.active]
            roles += [(t, "standby") for t in client.standby] + [(t, "warmup") for t in client.warmup]
            for task, role in roles:
                spans = tasks.setdefault(task, [])
                if spans and spans[-1][1] == start and spans[-1][2] == role:
                    spans[-1] = (spans[-1][0], stop, role)  # the same role on: one bar
                else:
                    spans.append((start, stop, role))
    return out


def stateful_over_time(view: RunView) -> dict[str, list[tuple[float, float]]]:
    """client -> (t, stateful actives it holds from that round on): skew and per-client load over time."""
    out: dict[str, list[tuple[float, float]]] = {}
    for round_ in view.summary.rounds:
        t = view.seconds(round_.timestamp_ms)
        if t is None:
            continue
        counts = round_.stateful_counts()
        for name in {*out, *counts}:
            out.setdefault(name, []).append((t, float(counts.get(name, 0))))
    return {name: out[name] for name in sorted(out)}


def pauses_by_round(view: RunView) -> list[dict[str, Any]]:
    """Per round: the tasks paused after it (not RUNNING), the longest pause and their sum."""
    if view.aggregates is None:
        return []
    rounds: dict[int, list[tuple[str, float]]] = {}
    for number, task, seconds in view.aggregates.pauses:
        rounds.setdefault(number, []).append((task, seconds))
    out = []
    for number, tasks in sorted(rounds.items()):
        task, longest = max(tasks, key=lambda kv: (kv[1], kv[0]))
        out.append(
            {
                "round": number,
                "tasks": len(tasks),
                "longest_task": task,
                "longest_s": round(longest, 3),
                "total_s": round(sum(s for _, s in tasks), 3),
            }
        )
    return out


def _round_json(round_: Round) -> dict[str, Any]:
    return {
        "round": round_.number,
        "generation": round_.generation,
        "timestamp_ms": round_.timestamp_ms,
        "trigger": round_.trigger,
        "followup": round_.followup,
        "clients": {
            c.name: {
                "threads": c.capacity,
                "active": list(c.active),
                "standby": list(c.standby),
                "warmup": list(c.warmup),
                "stateful": sum(1 for t in c.active if t in round_.stateful),
            }
            for c in round_.clients
        },
    }


def run_json(view: RunView) -> dict[str, Any]:
    """One run's entry of summary.json."""
    summary, agg = view.summary, view.aggregates
    skew, excess = max_skew(summary.rounds), max_excess(summary.rounds)
    moves = moves_with_restores(view)
    restored = [m["restored"] for m in moves if m["restored"] is not None]
    restored_bytes = [m["restored_bytes"] for m in moves if m["restored_bytes"] is not None]
    return {
        "label": summary.label,
        "metrics": metrics_table(summary),
        "rounds": [_round_json(r) for r in summary.rounds],
        "convergence": [
            {
                "round": c.start_round,
                "change": c.change,
                "rebalances": c.rebalances,
                "seconds": c.seconds,
                "superseded_after": c.superseded_after,
                "moves": c.moves,
                "max_above_even_share": c.excess,
            }
            for c in convergences(summary.rounds)
        ],
        "moves": moves,
        "protocol": summary.protocol,
        "rebalances_per_step": [
            {"change": change, "rebalances": n} for change, n in rebalances_per_step(summary.rounds)
        ],
        # pauses of tasks that resumed on their client, longest first (None: no metrics events)
        "staying_pauses": None
        if summary.staying is None
        else [
            {"client": p.client, "task": p.task, "seconds": round(p.seconds, 3), "kind": p.kind, "end_ms": p.end_ms}
            for p in summary.staying[:20]
        ],
        "restored_records_for_moves": sum(restored) if agg is not None and agg.restored_recorded else None,
        "restored_bytes_for_moves": sum(restored_bytes) if agg is not None and agg.restored_bytes_recorded else None,
        "max_stateful_on_one_client": None if skew is None else {"tasks": skew[0], "client": skew[1], "round": skew[2]},
        "max_above_even_share": None
        if excess is None
        else {"tasks": excess[0], "client": excess[1], "round": excess[2]},
        "stateful_over_time": stateful_over_time(view),
        "pauses": pauses_by_round(view),
        "series": None
        if agg is None
        else {
            "bucket_s": agg.bucket_s,
            "events": agg.events,
            "throughput": agg.throughput,
            "lag": agg.lag,
            "load": agg.load,
        },
        "problems": summary.problems,
        "notes": summary.notes,
    }


def build_summary(views: Sequence[RunView]) -> dict[str, Any]:
    return {
        "version": 1,
        "runs": [run_json(v) for v in views],
        "protocols": protocol_rows([v.summary for v in views]),
        "notes": [BYTES_NOTE],
    }


# ---- HTML ------------------------------------------------------------------------------------------------

CSS = """
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 17px; margin-top: 28px; } h3 { font-size: 14px; margin: 16px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } caption { text-align: left; font-weight: 600; padding: 2px 0; }
.runs { display: grid; gap: 24px; }
.problems { color: #a33; } .legend span { display: inline-block; margin-right: 12px; }
.legend i { display: inline-block; width: 12px; height: 10px; margin-right: 4px; }
"""


def _cells(values: Sequence[object], tag: str = "td") -> str:
    return "".join(f"<{tag}>{escape(str(v))}</{tag}>" for v in values)


def html_table(header: Sequence[object], rows: Sequence[Sequence[object]], css: str = "", caption: str = "") -> str:
    head = f"<caption>{escape(caption)}</caption>" if caption else ""
    body = "".join(f"<tr>{_cells(r)}</tr>" for r in rows)
    return f'<table class="{css}">{head}<thead><tr>{_cells(header, "th")}</tr></thead><tbody>{body}</tbody></table>'


def _round_table(round_: Round) -> str:
    rows = [
        [
            c.name,
            c.capacity,
            " ".join(c.active) or "-",
            " ".join(c.standby) or "-",
            " ".join(c.warmup) or "-",
            sum(1 for t in c.active if t in round_.stateful),
        ]
        for c in round_.clients
    ]
    caption = (
        f"Round {round_.number} (generation {round_.generation if round_.generation is not None else '?'}, "
        f"{round_.trigger}{', follow-up scheduled' if round_.followup else ''})"
    )
    return html_table(["client", "threads", "active", "standby", "warmup", "stateful"], rows, "round", caption).replace(
        '<table class="round">', f'<table class="round" data-round="{round_.number}">', 1
    )


def _legend() -> str:
    items = "".join(f'<span><i style="background:{c}"></i>{escape(r)}</span>' for r, c in ROLE_COLOURS.items())
    return f'<div class="legend">{items}</div>'


def _run_section(view: RunView) -> str:
    summary, agg = view.summary, view.aggregates
    out = [f'<section class="run" data-run="{escape(summary.label)}"><h2>{escape(summary.label)}</h2>']
    out.append(html_table(["metric", "value"], list(metrics_table(summary).items()), "metrics"))
    problems = list(summary.problems)
    if agg is None:
        problems.append("no readable metrics event: no throughput, lag, load, pause or restore figures")
    elif not agg.restored_recorded:
        problems.append("the metrics events carry no restored_total (workers older than this report): restores unknown")
    elif not agg.restored_bytes_recorded:
        problems.append("the metrics events carry no restored_bytes_total (version 1 events): bytes restored unknown")
    if problems:
        out.append('<div class="problems"><h3>Problems (the rest is reported)</h3><ul>')
        out += [f"<li>{escape(p)}</li>" for p in problems]
        out.append("</ul></div>")
    out += [f"<p>Note: {escape(n)}</p>" for n in summary.notes]
    end = view.end_s
    if agg is not None:
        out.append("<h3>Throughput and lag</h3>")
        out.append(
            line_chart(
                "throughput",
                "records processed per second",
                {"all clients": agg.throughput},
                y_label="records/s",
                x_max=end,
            )
        )
        out.append(
            line_chart(
                "lag", "consumer lag (input and repartition)", {"all clients": agg.lag}, y_label="records", x_max=end
            )
        )
        out.append(
            line_chart("load", "records processed per second, per client", agg.load, y_label="records/s", x_max=end)
        )
    if summary.rounds:
        out.append("<h3>Stateful actives per client over time</h3>")
        out.append(
            line_chart(
                "stateful",
                "stateful active tasks per client",
                stateful_over_time(view),
                y_label="tasks",
                x_max=end,
                step=True,
            )
        )
        out.append("<h3>Task placement per client</h3>" + _legend())
        for client, spans in sorted(placement_rows(view).items()):
            out.append(f"<h4>{escape(client)}</h4>" + placement_timeline(client, spans, end))
    moves = moves_with_restores(view)
    if moves:
        rows = [
            [m["round"], m["task"], m["from"], m["to"], *("?" if m[k] is None else m[k] for k in MOVE_COUNTS)]
            for m in moves
        ]
        totals = [sum(m[k] for m in moves) if all(m[k] is not None for m in moves) else "?" for k in MOVE_COUNTS]
        out.append(
            html_table(
                ["round", "task", "from", "to", "records restored", "bytes restored"],
                [*rows, ["total", "", "", "", *totals]],
                "moves",
                "Stateful task moves (records and key + value bytes restored by the destination after the move)",
            )
        )
    pauses = pauses_by_round(view)
    if pauses:
        rows = [
            [p["round"], p["tasks"], f"{p['longest_task']} {p['longest_s']:.2f}", f"{p['total_s']:.2f}"] for p in pauses
        ]
        out.append(
            html_table(
                ["round", "tasks paused", "longest (s)", "sum (s)"],
                rows,
                "pauses",
                "Processing pauses after each rebalance (time tasks were assigned but not RUNNING)",
            )
        )
    if summary.rounds:
        out.append("<h3>Rounds</h3>")
        out += [_round_table(r) for r in summary.rounds]
    out.append("</section>")
    return "\n".join(out)


def render_html(views: Sequence[RunView]) -> str:
    """The whole page: the runs side by side (numbers and overlaid curves), then each run's section."""
    title = "streamlet experiment report: " + ", ".join(v.summary.label for v in views)
    out = [
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>',
        f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1>",
    ]
    summaries = [v.summary for v in views]
    if compares_protocols(summaries):
        rows = [[row[h] for h in PROTOCOL_HEADER] for row in protocol_rows(summaries)]
        out.append("<h2>Rebalance protocols side by side</h2>")
        out.append(html_table(PROTOCOL_HEADER, rows, "protocols"))
    if len(views) > 1:
        tables = [metrics_table(v.summary) for v in views]
        keys = list(tables[0])
        out.append("<h2>Runs side by side</h2>")
        out.append(
            html_table(
                ["", *[v.summary.label for v in views]], [[k, *[t[k] for t in tables]] for k in keys], "side-by-side"
            )
        )
        with_series = [v for v in views if v.aggregates is not None]
        if with_series:
            end = max(v.end_s for v in with_series)
            out.append(
                line_chart(
                    "throughput compared",
                    "records processed per second",
                    {v.summary.label: v.aggregates.throughput for v in with_series if v.aggregates},
                    y_label="records/s",
                    x_max=end,
                )
            )
            out.append(
                line_chart(
                    "lag compared",
                    "consumer lag",
                    {v.summary.label: v.aggregates.lag for v in with_series if v.aggregates},
                    y_label="records",
                    x_max=end,
                )
            )
    columns = f"grid-template-columns: repeat({len(views)}, minmax(720px, 1fr));"
    out.append(f'<div class="runs" style="{columns}">')
    out += [_run_section(v) for v in views]
    out.append(f"</div><p><small>{escape(BYTES_NOTE)}</small></p></body></html>")
    return "\n".join(out) + "\n"
