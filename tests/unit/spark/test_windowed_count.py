"""The emit-final check of `streamlet.spark.windowed_count` (pure: no Spark)."""

from __future__ import annotations

from streamlet.spark.windowed_count import compare_windows

SIZE = 60_000


def test_each_closed_window_must_be_emitted_once_with_its_count() -> None:
    truth = {("/a", 0): 3, ("/b", 0): 1, ("/a", 60_000): 2, ("/c", 60_000): 4, ("/a", 120_000): 9}
    emitted = {
        ("/a", 0): [3],  # right
        ("/b", 0): [1, 1],  # twice: emit-final must write once
        ("/a", 60_000): [1],  # wrong count
        # ("/c", 60_000) never written
        ("/d", 0): [5],  # a window the input never had
        ("/a", 120_000): [7],  # not closed yet at 180_000 - 1: not compared
    }
    mismatches = compare_windows(truth, emitted, SIZE, closed_before=180_000 - 1)
    assert [(m.window, m.expected, m.emitted) for m in mismatches] == [
        (("/a", 60_000), 2, (1,)),
        (("/b", 0), 1, (1, 1)),
        (("/c", 60_000), 4, ()),
        (("/d", 0), None, (5,)),
    ]
    assert str(mismatches[2]) == "'/c' window 60000: expected 4, emitted nothing"
    assert compare_windows(truth, {w: [n] for w, n in truth.items()}, SIZE, closed_before=10**12) == []
