"""RepeatFilter: one line per interval for a repeated aiokafka record, with the count of the rest."""

from __future__ import annotations

import logging

from streamlet.logging_utils import RepeatFilter, repeat_filtered


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name} {record.getMessage()}")


def _logger(name: str, handler: logging.Handler) -> logging.Logger:
    logger = logging.getLogger(name)
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger


def _filtered(clock: _Clock, name: str = "aiokafka.conn") -> tuple[logging.Logger, _ListHandler]:
    handler = _ListHandler()
    handler.addFilter(RepeatFilter(10.0, clock=clock))
    return _logger(name, handler), handler


def test_repeats_within_the_interval_are_suppressed_and_counted() -> None:
    clock = _Clock()
    log, handler = _filtered(clock)
    for node in range(524):  # args differ, the template is the same
        log.error("Unable connect to node with id %s: %s", node, "refused")
        clock.now += 0.01
    assert handler.lines == ["ERROR aiokafka.conn Unable connect to node with id 0: refused"]
    clock.now = 1010.0
    log.error("Unable connect to node with id %s: %s", 7, "refused")
    assert handler.lines[1] == (
        "ERROR aiokafka.conn Unable connect to node with id 7: refused (repeated 523 times in the last 10 s)"
    )
    clock.now += 0.5
    log.error("Unable connect to node with id %s: %s", 7, "refused")
    assert len(handler.lines) == 2  # a new interval started at the reported line


def test_a_quiet_interval_shows_the_next_record_without_a_count() -> None:
    clock = _Clock()
    log, handler = _filtered(clock)
    log.warning("retrying")
    clock.now += 10.0
    log.warning("retrying")
    assert handler.lines == ["WARNING aiokafka.conn retrying", "WARNING aiokafka.conn retrying"]


def test_logger_template_and_level_each_make_a_separate_kind() -> None:
    clock = _Clock()
    log, handler = _filtered(clock)
    other = _logger("aiokafka.consumer.fetcher", handler)
    log.error("broker down")
    log.warning("broker down")
    log.error("other message")
    other.error("broker down")
    log.error("broker down")
    assert len(handler.lines) == 4


def test_other_loggers_pass_untouched() -> None:
    clock = _Clock()
    log, handler = _filtered(clock, name="streamlet.runtime")
    prefix_lookalike = _logger("aiokafkaesque", handler)
    for _ in range(3):
        log.error("same")
        prefix_lookalike.error("same")
    assert len(handler.lines) == 6


def test_repeat_filtered_gives_each_handler_its_own_filter_once_and_removes_it() -> None:
    first, second = _ListHandler(), _ListHandler()
    with repeat_filtered([first, second]):
        with repeat_filtered([first, second]):
            assert [len(h.filters) for h in (first, second)] == [1, 1]
        assert [len(h.filters) for h in (first, second)] == [1, 1]  # the inner block added none, removed none
        assert first.filters[0] is not second.filters[0]
    assert [h.filters for h in (first, second)] == [[], []]


def test_a_handler_with_its_own_filter_keeps_it() -> None:
    handler = _ListHandler()
    own = RepeatFilter(1.0)
    handler.addFilter(own)
    with repeat_filtered([handler]):
        pass
    assert handler.filters == [own]


def test_a_record_seen_by_two_handlers_is_counted_by_each() -> None:
    clock = _Clock()
    first, second = _ListHandler(), _ListHandler()
    for handler in (first, second):
        handler.addFilter(RepeatFilter(10.0, clock=clock))
    log = _logger("aiokafka", first)
    log.addHandler(second)
    log.error("down")
    log.error("down")
    clock.now += 10.0
    log.error("down")
    clock.now += 0.1
    log.error("down")  # within the new interval for both handlers
    expected = ["ERROR aiokafka down", "ERROR aiokafka down (repeated 1 times in the last 10 s)"]
    assert first.lines == expected
    assert second.lines == expected  # the first handler's suffix did not change the second one's key
