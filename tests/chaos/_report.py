"""What a chaos test asserts and reports: no word below its true count, and by how much words are above it."""

from __future__ import annotations

import time

from tests.support.reports import add_report


def lost_updates(final: dict[str, int], truth: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Words whose final count is below the truth (or missing): (final, true)."""
    return {w: (final.get(w, 0), c) for w, c in truth.items() if final.get(w, 0) < c}


def over_count(final: dict[str, int], truth: dict[str, int]) -> int:
    """Replayed input under at-least-once: how many words were counted more than once, in all."""
    return sum(max(0, final.get(w, 0) - c) for w, c in truth.items())


def report(name: str, final: dict[str, int], truth: dict[str, int], *, since: float, **figures: object) -> None:
    """Print the scenario's figures; `since` is when the last input was produced (for the catch-up time)."""
    figures = {"caught_up_s": round(time.monotonic() - since, 1), **figures}
    extra = "".join(f", {k}={v}" for k, v in figures.items())
    add_report(
        "chaos scenarios",
        f"{name}: {sum(truth.values())} words, lost {len(lost_updates(final, truth))} words, "
        f"over-counted {over_count(final, truth)}{extra}",
    )
