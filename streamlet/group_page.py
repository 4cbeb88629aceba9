"""The worker's `/group` page: the group's placement as `streamlet status` sees it, in a browser (pure).

It shows the same data as `streamlet status` (the latest assignment event and each client's latest
metrics event, read from the application's topics, so any worker shows the whole group): a grid of
tasks by client, then each client's tasks with their states. The page refreshes itself every few
seconds; it has no script and fetches nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from html import escape

from streamlet.status import GroupEvents, TaskRow, group_clients, group_headline, task_rows

REFRESH_S = 5
_CSS = """
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }
table { border-collapse: collapse; margin: 6px 0 14px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
th { background: #f0f0f0; }
td.active { background: #cfe3f3; } td.standby { background: #fde9c6; } td.warmup { background: #f8d3bd; }
"""


def _cell(kind: str, row: TaskRow) -> str:
    return f'<td class="{kind}" title="{escape(row.state)}">{escape(kind)} {escape(row.state)}</td>'


def _grid(clients: Sequence[tuple[str, list[TaskRow]]]) -> str:
    """Tasks as columns, clients as rows: who holds what, at a glance."""
    tasks = sorted({r.task for _, rows in clients for r in rows}, key=lambda t: tuple(int(x) for x in t.split("_")))
    head = "".join(f"<th>{escape(t)}</th>" for t in tasks)
    body = []
    for name, rows in clients:
        by_task = {r.task: r for r in rows}
        cells = "".join(_cell(by_task[t].kind or "owned", by_task[t]) if t in by_task else "<td></td>" for t in tasks)
        body.append(f'<tr data-client="{escape(name)}"><th>{escape(name)}</th>{cells}</tr>')
    table_body = "".join(body)
    return f'<table class="placement"><thead><tr><th>client</th>{head}</tr></thead><tbody>{table_body}</tbody></table>'


def render_group_page(events: GroupEvents, now_ms: int | None = None) -> str:
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    clients = []
    details = []
    for client, metrics in group_clients(events, now_ms):
        pid = str((client or metrics or {}).get("process_id"))
        host = (client or {}).get("host") or (metrics or {}).get("host") or "-"
        rows = task_rows(client, metrics)
        clients.append((pid, rows))
        lag = sum(int(p.get("lag", 0)) for p in (metrics or {}).get("consumer_lag", []))
        body = "".join(
            f"<tr><td>{escape(r.kind or '-')}</td><td>{escape(r.task)}</td><td>{escape(r.state)}</td>"
            f"<td>{'' if r.processed is None else r.processed}</td>"
            f"<td>{'' if r.not_running_s is None else f'{r.not_running_s:.1f}'}</td>"
            f"<td>{'' if r.lag is None else r.lag}</td></tr>"
            for r in rows
        )
        restoring = "".join(
            f"<li>restoring {escape(r['store'])} from {escape(r['topic'])}-{r['partition']}: {r['percent']:.0f}%</li>"
            for r in (metrics or {}).get("restore", [])
        )
        details.append(
            f'<section class="client" data-client="{escape(pid)}"><h3>{escape(pid)}</h3>'
            f"<p>host {escape(str(host))}, {(client or {}).get('capacity', '?')} threads"
            f"{'' if client else ' (not in the latest assignment)'}"
            f"{'' if metrics is None else f', consumer lag {lag}'}</p>"
            f"{f'<ul>{restoring}</ul>' if restoring else ''}"
            '<table class="tasks"><thead><tr><th>kind</th><th>task</th><th>state</th><th>records processed</th>'
            f"<th>not RUNNING (s)</th><th>lag</th></tr></thead><tbody>{body}</tbody></table></section>"
        )
    headline = "".join(f'<p class="headline">{escape(line)}</p>' for line in group_headline(events, now_ms))
    title = f"{events.application_id}: group placement"
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="{REFRESH_S}">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body><h1>{escape(title)}</h1>{headline}"
        f"{_grid(clients) if clients else ''}{''.join(details)}</body></html>\n"
    )
