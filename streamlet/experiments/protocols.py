"""Eager vs cooperative: one row per run, grouped by scenario, of what a rebalance protocol costs (pure).

`streamlet experiment run --protocols eager,cooperative` runs a scenario under both protocols, and the report
lays the runs side by side with this table. Its columns are the numbers issue 22 compares, all taken from the
recorded events by `report` and `pauses`:

* rebalances per scale step: every rebalance between two membership changes (cooperative needs a second
  round to hand over the tasks it withheld; eager revokes everything in one, probing rebalances included);
* task-seconds not RUNNING: the clients' `not_running_ms` summed over all tasks (start-up and moves too);
* stateful task moves: stateful actives that changed client from one round to the next;
* the longest pause of a task that stayed on its client (`pauses`), per scale step: cooperative's promise is
  that it is 0. A pause belongs to the step of the last rebalance before it ended (eager suspends a task before
  the rebalance and resumes it after).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamlet.experiments.pauses import StayingPause
from streamlet.experiments.report import Round, RunSummary, convergences, rebalances_per_step, stateful_moves

HEADER = (
    "scenario",
    "protocol",
    "assignor",
    "rebalances per scale step",
    "task-seconds not RUNNING",
    "stateful moves",
    "longest pause of a task that stayed",
    "output",
    "run",
)


def _record(summary: RunSummary) -> Mapping[str, Any]:
    record = summary.record
    return record if isinstance(record, Mapping) else {}


def pauses_per_step(rounds: Sequence[Round], pauses: Sequence[StayingPause]) -> list[tuple[str, StayingPause | None]]:
    """(membership change, the longest pause of a task that stayed that ended after its first rebalance and
    before the next change's), in order; pauses before the first timed round go to the first change."""
    steps = [(c.change, rounds[c.start_round - 1].timestamp_ms) for c in convergences(rounds)]
    longest: dict[int, StayingPause] = {}
    for pause in pauses:
        step = max((i for i, (_, at) in enumerate(steps) if at is not None and at <= pause.end_ms), default=0)
        if step not in longest or pause.seconds > longest[step].seconds:
            longest[step] = pause
    return [(change, longest.get(i)) for i, (change, _) in enumerate(steps)]


def _pause_cell(summary: RunSummary) -> str:
    if summary.staying is None:
        return "-"
    steps = pauses_per_step(summary.rounds, summary.staying)
    return ", ".join(f"{change} {p.describe()}" for change, p in steps if p is not None) or "0"


def protocol_row(summary: RunSummary) -> dict[str, str]:
    """One run's cells, keyed by `HEADER`."""
    record = _record(summary)
    verification = record.get("verification")
    if isinstance(verification, Mapping):
        output = "exact" if verification.get("ok") else f"{verification.get('differences')} differences"
    else:
        output = str(record.get("status", "?"))
    began, ended = record.get("started_at"), record.get("ended_at")
    took = f"{ended - began:.0f}s" if isinstance(began, int | float) and isinstance(ended, int | float) else "?"
    clients = summary.clients
    return dict(
        zip(
            HEADER,
            (
                str(record.get("scenario", summary.label)),
                summary.protocol,
                summary.assignor,
                ", ".join(f"{change} {n}" for change, n in rebalances_per_step(summary.rounds)) or "-",
                "-" if clients is None else f"{sum(c.total_not_running_s for c in clients):.1f}",
                str(sum(n for _, n in stateful_moves(summary.rounds))),
                _pause_cell(summary),
                output,
                took,
            ),
            strict=True,
        )
    )


def protocol_rows(summaries: Sequence[RunSummary]) -> list[dict[str, str]]:
    """The runs' rows, each scenario's together (in first-seen order), then by protocol and assignor."""
    rows = [protocol_row(s) for s in summaries]
    first_seen: dict[str, int] = {}
    for row in rows:
        first_seen.setdefault(row["scenario"], len(first_seen))
    return sorted(rows, key=lambda r: (first_seen[r["scenario"]], r["protocol"], r["assignor"]))


def compares_protocols(summaries: Sequence[RunSummary]) -> bool:
    """Whether the runs include one scenario under more than one protocol (then the report shows the table)."""
    seen: dict[str, set[str]] = {}
    for summary in summaries:
        seen.setdefault(str(_record(summary).get("scenario", summary.label)), set()).add(summary.protocol)
    return any(len(protocols) > 1 for protocols in seen.values())


def render_protocol_table(summaries: Sequence[RunSummary]) -> list[str]:
    """Markdown: the heading, the table and what its pause column means."""
    rows = protocol_rows(summaries)
    out = ["# Rebalance protocols side by side", ""]
    out.append("| " + " | ".join(HEADER) + " |")
    out.append("|" + "|".join("---" for _ in HEADER) + "|")
    out += ["| " + " | ".join(row[h] for h in HEADER) + " |" for row in rows]
    out += [
        "",
        "The pause is the longest time a task stopped (not RUNNING, or RUNNING without progress for a whole "
        "metrics interval) and resumed on the client it was on, per scale step (steps without one are left out); "
        "0: every task that stayed ran on.",
        "",
    ]
    return out
