import gc
import logging
from typing import Any

import pytest

from streamlet import App
from streamlet.runtime.gc_tuning import GEN0_THRESHOLD, GEN1_THRESHOLD, GEN2_THRESHOLD, worker_gc


def test_the_worker_freezes_start_up_and_raises_the_thresholds_then_restores_them() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with worker_gc():
        assert gc.get_threshold() == (GEN0_THRESHOLD, GEN1_THRESHOLD, GEN2_THRESHOLD)
        assert gc.get_freeze_count() > 1000  # the imports' objects at least
        assert GEN0_THRESHOLD > before[0]
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_settings_are_restored_when_the_worker_fails() -> None:
    before = gc.get_threshold()
    try:
        with worker_gc():
            raise RuntimeError("a thread failed")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_streamlet_worker_runs_inside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int, int]] = []

    async def run_worker(self: App, **overrides: Any) -> None:
        seen.append(gc.get_threshold())

    monkeypatch.setattr(App, "run_worker", run_worker)
    monkeypatch.setattr(logging, "basicConfig", lambda **kw: None)
    before = gc.get_threshold()
    with pytest.raises(SystemExit):
        App("gc-app").main(["worker", "--state-dir", "/tmp/x"])
    assert seen == [(GEN0_THRESHOLD, GEN1_THRESHOLD, GEN2_THRESHOLD)]
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
