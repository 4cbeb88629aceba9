"""Inline SVG charts for the HTML report: no plotting library, no script, nothing fetched (pure strings).

Each chart is an `<svg class="plot">` with `data-plot` (what it shows) and `data-points` (how many data
points it draws), so a browser test can check that what rendered holds data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

WIDTH, HEIGHT = 700, 240
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 190, 26, 30
#: Colour-blind-safe (Okabe-Ito), cycled over the series.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
ROLE_COLOURS = {"active": "#0072B2", "stateless": "#9ecae1", "standby": "#E69F00", "warmup": "#D55E00"}


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    step = 10 ** len(str(int(value))) / 10
    for factor in (1, 2, 2.5, 5, 10):
        if value <= step * factor:
            return step * factor
    return value


def _number(value: float) -> str:
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def line_chart(
    plot: str,
    title: str,
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    y_label: str,
    x_max: float | None = None,
    step: bool = False,
) -> str:
    """One polyline per series (x in seconds); `step` draws a value as held until the next point."""
    points = sum(len(s) for s in series.values())
    xs = [x for s in series.values() for x, _ in s]
    ys = [y for s in series.values() for _, y in s]
    x_top = max([x_max or 0.0, *xs, 1.0])
    y_top = _nice_max(max(ys, default=0.0))
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM

    def px(x: float) -> float:
        return _LEFT + plot_w * x / x_top

    def py(y: float) -> float:
        return _TOP + plot_h * (1 - y / y_top)

    out = [
        f'<svg class="plot" data-plot="{escape(plot)}" data-points="{points}" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{_LEFT}" y="16" font-size="12" font-weight="600">{escape(title)}</text>',
        f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#ccc"/>',
    ]
    for i in range(5):
        y = y_top * i / 4
        out.append(f'<text x="{_LEFT - 4}" y="{py(y) + 4:.1f}" text-anchor="end" font-size="10">{_number(y)}</text>')
        out.append(f'<line x1="{_LEFT}" x2="{_LEFT + plot_w}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#eee"/>')
    for i in range(6):
        x = x_top * i / 5
        out.append(
            f'<text x="{px(x):.1f}" y="{HEIGHT - _BOTTOM + 14}" text-anchor="middle" font-size="10">{_number(x)}</text>'
        )
    out.append(
        f'<text x="{_LEFT + plot_w / 2}" y="{HEIGHT - 2}" text-anchor="middle" font-size="10">seconds</text>'
        f'<text x="12" y="{_TOP + plot_h / 2}" font-size="10" transform="rotate(-90 12 {_TOP + plot_h / 2})" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    for i, (name, data) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        coords: list[tuple[float, float]] = []
        for j, (x, y) in enumerate(data):
            if step and j:
                coords.append((px(x), py(data[j - 1][1])))
            coords.append((px(x), py(y)))
        if step and data:
            coords.append((px(x_top), py(data[-1][1])))
        text = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        out.append(
            f'<polyline class="series" data-series="{escape(name)}" fill="none" stroke="{colour}" '
            f'stroke-width="1.8" points="{text}"/>'
        )
        out.append(
            f'<text x="{WIDTH - _RIGHT + 8}" y="{_TOP + 12 + 14 * i}" font-size="11" fill="{colour}">'
            f"{escape(name)}</text>"
        )
    out.append("</svg>")
    return "\n".join(out)


def placement_timeline(client: str, rows: Mapping[str, Sequence[tuple[float, float, str]]], x_max: float) -> str:
    """A client's tasks over time: one row per task, a bar per (start, end, role) it held the task in."""
    row_h, label_w = 14, 48
    plot_w = WIDTH - label_w - 10
    height = _TOP + row_h * max(len(rows), 1) + 24
    x_top = max(x_max, 1.0)
    bars = sum(len(r) for r in rows.values())
    out = [
        f'<svg class="plot timeline" data-plot="placement {escape(client)}" data-points="{bars}" '
        f'width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="tasks of client {escape(client)} over time">',
        f"<title>tasks of client {escape(client)} over time</title>",
    ]
    for i, (task, spans) in enumerate(sorted(rows.items())):
        y = _TOP + row_h * i
        out.append(f'<text x="{label_w - 4}" y="{y + 11}" text-anchor="end" font-size="10">{escape(task)}</text>')
        for start, end, role in spans:
            x0 = label_w + plot_w * start / x_top
            w = max(1.0, plot_w * (end - start) / x_top)
            out.append(
                f'<rect class="bar" data-role="{role}" x="{x0:.1f}" y="{y + 1}" width="{w:.1f}" height="{row_h - 3}" '
                f'fill="{ROLE_COLOURS.get(role, "#999")}"><title>{escape(task)} {role} '
                f"{start:.1f}s-{end:.1f}s</title></rect>"
            )
    axis_y = _TOP + row_h * max(len(rows), 1) + 12
    for i in range(6):
        x = x_top * i / 5
        out.append(
            f'<text x="{label_w + plot_w * x / x_top:.1f}" y="{axis_y}" text-anchor="middle" font-size="10">'
            f"{_number(x)}s</text>"
        )
    out.append("</svg>")
    return "\n".join(out)
