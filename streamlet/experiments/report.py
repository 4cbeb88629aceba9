"""`streamlet experiment report`: seed 000's round-by-round tables and the numbers that compare assignors.

Pure: it reads the lines of a run directory's `assignments.jsonl` (and `run.json` for client names and the
verification) and returns markdown. A run that died half-way is still worth reading, so a missing file, a
truncated line, an event of an unknown version or a generation with no event are listed as problems and
the rest is reported; nothing here raises on bad input.

Numbers, per run:
* rounds: one per rebalance (event);
* rebalances to converge: for each change of membership (a client joins or leaves, or its thread count
  changes), the rebalances from that change up to the first one that schedules no follow-up, and the time
  between the two events;
* stateful task moves: stateful active tasks whose client changed from one round to the next (each one is
  a restore somewhere, or a warmup paying off);
* skew: the most stateful active tasks one client held in any round, against the even share;
* per client, from `metrics.jsonl` (the clients' metrics events) when the run collected it: records
  processed (a client that joined and processed nothing is flagged: the run did not scale under load), the
  time its tasks spent assigned but not RUNNING (restoring, waiting, rebalancing), and the records and
  key + value bytes it restored (per move, they need the round windows: the Spark report).
* rebalances per scale step: every rebalance from one membership change to the next (a cooperative
  handover's second round included), and the longest pause of a task that stayed on its client
  (`pauses`): what compares the two rebalance protocols (`protocols` lays the runs side by side).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamlet.assignment.history import EVENT_TYPE, HISTORY_VERSION
from streamlet.experiments.client_metrics import ClientTotals, client_totals, render_client_totals, total_restored
from streamlet.experiments.pauses import StayingPause, longest, staying_pauses


@dataclass(frozen=True)
class ClientRound:
    name: str
    process_id: str
    capacity: int
    active: tuple[str, ...]
    standby: tuple[str, ...]
    warmup: tuple[str, ...]


@dataclass(frozen=True)
class Round:
    number: int
    generation: int | None
    timestamp_ms: int | None
    trigger: str
    followup: bool
    stateful: frozenset[str]
    clients: tuple[ClientRound, ...]

    def membership(self) -> tuple[tuple[str, int], ...]:
        return tuple(sorted((c.process_id, c.capacity) for c in self.clients))

    def owners(self) -> dict[str, str]:
        """Stateful active task -> client name."""
        return {t: c.name for c in self.clients for t in c.active if t in self.stateful}

    def stateful_counts(self) -> dict[str, int]:
        return {c.name: sum(1 for t in c.active if t in self.stateful) for c in self.clients}


@dataclass
class RunSummary:
    label: str
    rounds: list[Round]
    problems: list[str] = field(default_factory=list)
    record: Mapping[str, Any] | None = None
    event_assignor: str = ""
    notes: list[str] = field(default_factory=list)
    clients: list[ClientTotals] | None = None  # from metrics.jsonl; None without it
    staying: list[StayingPause] | None = None  # pauses of tasks that resumed in place; None without metrics

    @property
    def assignor(self) -> str:
        if self.record and self.record.get("assignor"):
            return str(self.record["assignor"])
        return self.event_assignor or "?"

    @property
    def protocol(self) -> str:
        """The run's rebalance protocol (run.json; runs recorded before it was a dimension say "?")."""
        return str((self.record or {}).get("protocol") or "?")


def client_names(record: Mapping[str, Any] | None) -> dict[str, str]:
    """process id -> the scenario's client name, from run.json."""
    clients = (record or {}).get("clients", {})
    if not isinstance(clients, Mapping):
        return {}
    return {str(info.get("process_id")): str(name) for name, info in clients.items() if isinstance(info, Mapping)}


def parse_events(lines: Sequence[str], names: Mapping[str, str]) -> tuple[list[Round], list[str], str]:
    """Rounds from the event lines, the problems found, and the assignor the events name."""
    rounds: list[Round] = []
    problems: list[str] = []
    assignor = ""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            problems.append(f"event line {number}: not JSON (truncated?); skipped")
            continue
        if not isinstance(event, Mapping) or event.get("type", EVENT_TYPE) != EVENT_TYPE:
            problems.append(f"event line {number}: not an assignment event; skipped")
            continue
        if event.get("version") != HISTORY_VERSION:
            problems.append(
                f"event line {number}: version {event.get('version')!r} is not supported (this report reads "
                f"version {HISTORY_VERSION}); skipped"
            )
            continue
        clients = event.get("clients")
        if not isinstance(clients, list):
            problems.append(f"event line {number}: no 'clients' list; skipped")
            continue
        try:
            entries = tuple(
                ClientRound(
                    name=names.get(str(c["process_id"]), str(c["process_id"])[:8]),
                    process_id=str(c["process_id"]),
                    capacity=int(c.get("capacity", 0)),
                    active=tuple(c.get("active", ())),
                    standby=tuple(c.get("standby", ())),
                    warmup=tuple(c.get("warmup", ())),
                )
                for c in clients
            )
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"event line {number}: a client entry is malformed ({exc!r}); skipped")
            continue
        if "stateful_tasks" not in event:
            problems.append(f"event line {number}: no 'stateful_tasks'; stateful numbers count no task")
        generation = event.get("generation")
        rounds.append(
            Round(
                number=len(rounds) + 1,
                generation=generation if isinstance(generation, int) else None,
                timestamp_ms=event.get("timestamp_ms") if isinstance(event.get("timestamp_ms"), int) else None,
                trigger=str(event.get("trigger", "?")),
                followup=bool(event.get("followup_scheduled")),
                stateful=frozenset(event.get("stateful_tasks", ())),
                clients=entries,
            )
        )
        assignor = str(event.get("assignor", assignor))
    known = [r.generation for r in rounds if r.generation is not None]
    for before, after in zip(known, known[1:], strict=False):
        if after > before + 1:
            missing = f"{before + 1}" if after == before + 2 else f"{before + 1}..{after - 1}"
            problems.append(f"generation(s) {missing} have no event (between {before} and {after})")
    return rounds, problems, assignor


def summarize(
    label: str,
    record: Mapping[str, Any] | None,
    lines: Sequence[str] | None,
    metrics_lines: Sequence[str] | None = None,
) -> RunSummary:
    """A run's rounds and problems; `record` is run.json (None if missing), `lines` assignments.jsonl's,
    `metrics_lines` metrics.jsonl's (None: not collected, so no per-client metrics)."""
    summary = _summarize_rounds(label, record, lines)
    if metrics_lines is not None:
        summary.clients, problems = client_totals(metrics_lines, client_names(record))
        summary.problems += problems
        summary.problems += [
            f"client {name} joined (step {step}) but processed no record: the input had ended or it got no "
            "active task, so this run shows no scaling under load"
            for name, step in idle_joiners(record, summary.clients)
        ]
        summary.staying = staying_pauses(metrics_lines, client_names(record))
    return summary


def joiners(record: Mapping[str, Any] | None) -> dict[str, int]:
    """Clients an `add` or `replace` step started (name -> step index), from run.json's step and client times."""
    steps = (record or {}).get("steps", [])
    clients = (record or {}).get("clients", {})
    if not isinstance(steps, list) or not isinstance(clients, Mapping):
        return {}
    out: dict[str, int] = {}
    for name, info in clients.items():
        started = info.get("started_at") if isinstance(info, Mapping) else None
        if not isinstance(started, (int, float)):
            continue
        for step in steps:
            if not isinstance(step, Mapping) or step.get("action") not in ("add", "replace"):
                continue
            began, ended = step.get("started_at"), step.get("ended_at")
            if isinstance(began, (int, float)) and began <= started and (ended is None or started <= ended):
                out[str(name)] = int(step.get("index", 0))
    return out


def idle_joiners(record: Mapping[str, Any] | None, clients: Sequence[ClientTotals]) -> list[tuple[str, int]]:
    """The joining clients (name, step) that processed nothing: a scale-out with nothing to scale."""
    processed = {c.name: c.records_processed for c in clients}
    return [(name, step) for name, step in sorted(joiners(record).items()) if processed.get(name, 0) == 0]


def _summarize_rounds(label: str, record: Mapping[str, Any] | None, lines: Sequence[str] | None) -> RunSummary:
    problems: list[str] = []
    if record is None:
        problems.append("run.json is missing or unreadable: client names are process ids, no verification")
    elif record.get("status") not in ("passed", None):
        problems.append(f"run status {record.get('status')}: {record.get('error') or 'see run.json'}")
    if lines is None:
        problems.append("assignments.jsonl is missing: no rounds to report")
    rounds, event_problems, assignor = parse_events(lines or [], client_names(record))
    if lines is not None and not rounds:
        event_problems.append("assignments.jsonl holds no readable assignment event")
    cut = (record or {}).get("timeline_events")
    if isinstance(cut, int) and 0 <= cut < len(lines or []):
        # rounds are numbered by readable events; the cut counts collected ones (the same unless lines broke)
        shutdown = [line for line in (lines or [])[cut:] if line.strip()]
        rounds = [r for r in rounds if r.number <= cut]
        note = f"{len(shutdown)} event(s) after the timeline (the shutdown's rebalances) are not reported"
        return RunSummary(label, rounds, problems + event_problems, record, assignor, [note])
    return RunSummary(label, rounds, problems + event_problems, record, assignor)


# ---- metrics ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Convergence:
    start_round: int
    change: str
    rebalances: int | None  # None: did not converge before the next change (superseded) or the run's end
    superseded_after: int | None = None  # rebalances before the next membership change, if one came first
    moves: int = 0  # stateful active tasks that changed client from the change up to convergence
    seconds: float | None = None  # from the change's first rebalance to the converging one (event times)
    excess: float | None = None  # most stateful actives above a client's even share in the change's rounds

    def describe(self) -> str:
        moved = f", {self.moves} stateful move{'s' if self.moves != 1 else ''}" if self.moves else ""
        took = f" in {self.seconds:.1f}s" if self.seconds is not None else ""
        if self.rebalances is not None:
            return f"{self.change}: {self.rebalances}{took}{moved}"
        if self.superseded_after is not None:
            return f"{self.change}: superseded after {self.superseded_after}{moved}"
        return f"{self.change}: not converged{moved}"


def convergences(rounds: Sequence[Round]) -> list[Convergence]:
    """For each membership change, how many rebalances until one schedules no follow-up (that one included)."""
    out: list[Convergence] = []
    previous: tuple[tuple[str, int], ...] | None = None
    before: dict[str, int] = {}
    moved = dict(stateful_moves(rounds))
    for i, round_ in enumerate(rounds):
        membership = round_.membership()
        if membership == previous:
            continue
        now = {c.name: c.capacity for c in round_.clients}
        if previous is None:
            change = "start: " + ", ".join(sorted(now))
        else:
            parts = [f"+{n}" for n in sorted(set(now) - set(before))]
            parts += [f"-{n}" for n in sorted(set(before) - set(now))]
            parts += [f"{n} threads {before[n]}->{now[n]}" for n in sorted(now) if n in before and before[n] != now[n]]
            change = ", ".join(parts)
        rebalances = superseded = None
        seconds: float | None = None
        moves = 0
        last = i
        for j in range(i, len(rounds)):
            if rounds[j].membership() != membership:
                superseded = j - i
                break
            last = j
            moves += moved.get(rounds[j].number, 0)
            if not rounds[j].followup:
                rebalances = j - i + 1
                began, ended = round_.timestamp_ms, rounds[j].timestamp_ms
                if began is not None and ended is not None:
                    seconds = (ended - began) / 1000.0
                break
        excess = max_excess(rounds[i : last + 1])
        out.append(
            Convergence(
                round_.number, change, rebalances, superseded, moves, seconds, None if excess is None else excess[0]
            )
        )
        previous, before = membership, now
    return out


def rebalances_per_step(rounds: Sequence[Round]) -> list[tuple[str, int]]:
    """(membership change, every rebalance from it to the next change or the timeline's end).

    Unlike `convergences`, which stops at the first round that schedules no follow-up, this counts them all:
    a cooperative handover's second round (the withheld tasks) schedules none, and is a rebalance too.
    """
    steps = convergences(rounds)
    if not steps:
        return []
    ends = [s.start_round for s in steps[1:]] + [len(rounds) + 1]
    return [(s.change, end - s.start_round) for s, end in zip(steps, ends, strict=True)]


@dataclass(frozen=True)
class TaskMove:
    round: int
    task: str
    source: str  # client names
    destination: str


def task_moves(rounds: Sequence[Round]) -> list[TaskMove]:
    """Every stateful active that changed client from one round to the next; a task of a client that left
    counts as moved when another client takes it."""
    out: list[TaskMove] = []
    for before, after in zip(rounds, rounds[1:], strict=False):
        old = before.owners()
        out += [TaskMove(after.number, t, old[t], c) for t, c in sorted(after.owners().items()) if old.get(t, c) != c]
    return out


def stateful_moves(rounds: Sequence[Round]) -> list[tuple[int, int]]:
    """(round number, stateful actives that changed client since the previous round), for every round after
    the first."""
    moves = task_moves(rounds)
    return [(r.number, sum(1 for m in moves if m.round == r.number)) for r in rounds[1:]]


def max_skew(rounds: Sequence[Round]) -> tuple[int, str, int, float] | None:
    """(most stateful actives on one client, that client, the round, the even share then) over all rounds."""
    best: tuple[int, str, int, float] | None = None
    for round_ in rounds:
        counts = round_.stateful_counts()
        if not counts:
            continue
        name, most = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        capacity = sum(c.capacity for c in round_.clients) or len(round_.clients)
        top = next(c for c in round_.clients if c.name == name)
        share = len(round_.stateful) * (top.capacity or 1) / capacity
        if best is None or most > best[0]:
            best = (most, name, round_.number, share)
    return best


def max_excess(rounds: Sequence[Round]) -> tuple[float, str, int] | None:
    """(most stateful actives above a client's even share, that client, the round) over all rounds.

    The share is by thread count, as both assignors aim for; unlike the raw maximum it is not dominated by
    the start-up rounds, where one client briefly holds everything because the others have not joined yet.
    """
    best: tuple[float, str, int] | None = None
    for round_ in rounds:
        capacity = sum(c.capacity for c in round_.clients)
        if not capacity or not round_.stateful:
            continue
        counts = round_.stateful_counts()
        for client in round_.clients:
            excess = counts[client.name] - len(round_.stateful) * client.capacity / capacity
            if best is None or excess > best[0] + 1e-9:
                best = (excess, client.name, round_.number)
    return best


# ---- rendering -------------------------------------------------------------------------------------------


def _tasks(tasks: Sequence[str]) -> str:
    return " ".join(tasks) if tasks else "-"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def render_rounds(summary: RunSummary) -> list[str]:
    """Seed 000's form: round -> client -> active / standby / warmup tasks (stateful actives counted)."""
    rows: list[list[object]] = []
    for round_ in summary.rounds:
        for i, client in enumerate(round_.clients):
            head = i == 0
            rows.append(
                [
                    round_.number if head else "",
                    (round_.generation if round_.generation is not None else "?") if head else "",
                    round_.trigger if head else "",
                    client.name,
                    client.capacity,
                    _tasks(client.active),
                    _tasks(client.standby),
                    _tasks(client.warmup),
                    sum(1 for t in client.active if t in round_.stateful),
                    ("yes" if round_.followup else "no") if head else "",
                ]
            )
    header = ["round", "gen", "trigger", "client", "threads", "active", "standby", "warmup", "stateful", "follow-up"]
    return markdown_table(header, rows)


def metrics_table(summary: RunSummary) -> dict[str, str]:
    record = summary.record or {}
    verification = record.get("verification") if isinstance(record, Mapping) else None
    if isinstance(verification, Mapping):
        verified = "exact" if verification.get("ok") else f"{verification.get('differences')} differences"
    else:
        verified = "not verified"
    conv = convergences(summary.rounds)
    moves = stateful_moves(summary.rounds)
    skew = max_skew(summary.rounds)
    excess = max_excess(summary.rounds)
    final = summary.rounds[-1].stateful_counts() if summary.rounds else {}
    return {
        "scenario": str(record.get("scenario", "?")) if isinstance(record, Mapping) else "?",
        "assignor": summary.assignor,
        "rebalance protocol": summary.protocol,
        "status": str(record.get("status", "?")) if isinstance(record, Mapping) else "?",
        "output": verified,
        "rounds": str(len(summary.rounds)),
        "rebalances to converge": "; ".join(c.describe() for c in conv) or "-",
        "rebalances per scale step": "; ".join(f"{change}: {n}" for change, n in rebalances_per_step(summary.rounds))
        or "-",
        "stateful task moves": f"{sum(n for _, n in moves)}"
        + (f" ({', '.join(f'r{r}:{n}' for r, n in moves if n)})" if any(n for _, n in moves) else ""),
        "max stateful actives on one client": "-"
        if skew is None
        else f"{skew[0]} ({skew[1]}, round {skew[2]}; even share {skew[3]:.1f})",
        "max stateful actives above even share": "-"
        if excess is None
        else f"{excess[0]:+.1f} ({excess[1]}, round {excess[2]})",
        "final stateful split": " ".join(f"{n}={c}" for n, c in sorted(final.items())) or "-",
        "records processed (all clients)": "-"
        if summary.clients is None
        else str(sum(c.records_processed for c in summary.clients)),
        "joining clients that processed nothing": "-"
        if summary.clients is None
        else ", ".join(name for name, _ in idle_joiners(record, summary.clients)) or "none",
        "time tasks not RUNNING (all clients)": "-"
        if summary.clients is None
        else f"{sum(c.total_not_running_s for c in summary.clients):.1f}s",
        "longest pause of a task that stayed": longest(summary.staying),
        "records restored (all clients)": "-"
        if summary.clients is None
        else total_restored(summary.clients, "records"),
        "bytes restored, key + value (all clients)": "-"
        if summary.clients is None
        else total_restored(summary.clients, "bytes"),
        "problems": str(len(summary.problems)),
    }


def render_report(summaries: Sequence[RunSummary]) -> str:
    """One run: its numbers, its problems and its round table. Several: the numbers side by side first."""
    out: list[str] = []
    metrics = [metrics_table(s) for s in summaries]
    if len(summaries) > 1:
        out += ["# Runs side by side", ""]
        keys = list(metrics[0])
        out += markdown_table(["", *[s.label for s in summaries]], [[k, *[m[k] for m in metrics]] for k in keys])
        out.append("")
    for summary, values in zip(summaries, metrics, strict=True):
        out += [f"# {summary.label}", ""]
        out += markdown_table(["metric", "value"], list(values.items()))
        out.append("")
        if summary.problems:
            out += ["Problems (the rest is reported):", *[f"- {p}" for p in summary.problems], ""]
        if summary.notes:
            out += [*[f"Note: {n}" for n in summary.notes], ""]
        if summary.clients:
            out += ["Per client (metrics.jsonl; counts since each process started):", ""]
            out += render_client_totals(summary.clients)
            out.append("")
        if summary.rounds:
            out += render_rounds(summary)
            out.append("")
    return "\n".join(out).rstrip() + "\n"
