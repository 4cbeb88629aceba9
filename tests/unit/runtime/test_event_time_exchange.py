"""The processes of a group share their event-time positions (`EventTimeExchange`, `StreamTimeWatermark`): another
process bounds a thread `drift_ms` past its position, is forgotten when stale, and makes a client hold back after
an assignment until it reported the same group generation (and, on a client's first tasks, until the processes
that did own the others). The report codec rejects what is not a report. Expected
values follow from the reported numbers."""

from __future__ import annotations

import asyncio

import pytest

from streamlet.runtime.event_time_exchange import decode_positions, encode_positions
from streamlet.runtime.event_time_merge import NO_CEILING
from streamlet.runtime.stream_time_watermark import HELD, StreamTimeWatermark


def _watermark(now: list[float]) -> StreamTimeWatermark:
    watermark = StreamTimeWatermark(stale_after_s=5.0, clock=lambda: now[0])
    watermark.drift_ms = 30_000
    watermark.hold_ms = 600
    return watermark


def test_another_process_bounds_a_thread_by_the_drift_and_a_sibling_thread_by_the_slice() -> None:
    now = [0.0]
    watermark = _watermark(now)
    watermark.report_process("p2", {0: 10_000})
    assert watermark.ceiling("t1", 0, 1_000) == 40_000
    watermark.report("t2", 0, 20_000)
    assert watermark.ceiling("t1", 0, 1_000) == 21_000  # the sibling is the tighter bound
    watermark.report("t2", 0, 50_000)
    assert watermark.ceiling("t1", 0, 1_000) == 40_000
    assert watermark.ceiling("t1", 1, 1_000) == NO_CEILING  # per sub-topology
    watermark.report_process("p2", {})  # caught up: holds nobody back
    assert watermark.ceiling("t1", 0, 1_000) == 51_000


def test_a_process_that_stops_reporting_is_forgotten_once_stale() -> None:
    now = [0.0]
    watermark = _watermark(now)
    watermark.report_process("p2", {0: 10_000})
    now[0] = 4.9
    assert watermark.ceiling("t1", 0, 1_000) == 40_000
    now[0] = 5.1
    assert watermark.ceiling("t1", 0, 1_000) == NO_CEILING


def test_local_positions_are_the_lowest_fresh_report_of_this_clients_threads_only() -> None:
    now = [0.0]
    watermark = _watermark(now)
    watermark.report("t1", 0, 7_000)
    watermark.report("t2", 0, 3_000)
    watermark.report("t2", 1, 9_000)
    watermark.report_process("p2", {0: 1_000})  # another process's positions are not republished
    assert watermark.local_positions() == {0: 3_000, 1: 9_000}
    now[0] = 3.0
    watermark.report("t1", 0, 8_000)
    now[0] = 6.0  # t2's reports went stale
    assert watermark.local_positions() == {0: 8_000}
    watermark.report("t1", 0, None)
    assert watermark.local_positions() == {}


def test_an_assignment_holds_back_only_for_a_process_that_has_not_applied_that_generation() -> None:
    """No fixed hold in steady state: the tasks a cooperative rebalance leaves in place pause only until the others
    say they applied the generation, a report's round trip, not `hold_ms` per round."""
    now = [0.0]
    watermark = _watermark(now)
    watermark.assignment_applied("t1", 1)  # alone: no hold
    assert watermark.ceiling("t1", 0, 1_000) == NO_CEILING
    watermark.report_process("p2", {}, 1, {0: [1]})
    watermark.assignment_applied("t1", 2)
    assert watermark.ceiling("t1", 0, 1_000) == HELD  # p2 has not applied generation 2 yet
    now[0] = 0.1
    watermark.report_process("p2", {}, 2, {0: [1]})  # it has, caught up
    assert watermark.ceiling("t1", 0, 1_000) == NO_CEILING  # at once, not hold_ms (600 ms) after the assignment
    watermark.assignment_applied("t1", 3)
    watermark.report_process("p2", {}, 3, {0: [1]})
    assert watermark.ceiling("t1", 0, 1_000) == NO_CEILING
    now[0] = 10.0  # p2 not heard from for longer than the staleness bound
    watermark.assignment_applied("t1", 4)
    assert watermark.ceiling("t1", 0, 1_000) == NO_CEILING


def test_a_process_that_stopped_holds_nobody_back() -> None:
    """Its last report has no generation but says it owns no tasks: not an earlier release's, so no fixed hold."""
    now = [0.0]
    watermark = _watermark(now)
    watermark.report_process("p2", {}, None, {})
    watermark.assignment_applied("t1", 2)
    assert watermark.ceiling("t1", 0, 1_000) == NO_CEILING


def test_after_an_assignment_a_client_waits_until_each_other_process_applied_that_generation() -> None:
    """A loaded process applies its assignment late: its last report still has the tasks it had, and holds nobody
    back for the ones it is taking over. The others wait for its report of the same generation, not a fixed time."""
    now = [0.0]
    watermark = _watermark(now)
    watermark.report_process("p2", {}, 4)
    watermark.report_process("p3", {0: 1_000}, -1)  # started, no assignment yet
    watermark.assignment_applied("t1", 5)
    now[0] = 2.0
    watermark.report_process("p2", {}, 4)  # still applying generation 4's successor
    watermark.report_process("p3", {0: 1_000}, -1)
    assert watermark.ceiling("t1", 0, 1_000) == HELD
    watermark.report_process("p2", {0: 5_000}, 5)
    assert watermark.ceiling("t1", 0, 1_000) == HELD  # p3 too
    watermark.report_process("p3", {0: 2_000}, 6)  # past it: it applied 5 as well
    assert watermark.ceiling("t1", 0, 1_000) == 32_000  # p3's position plus the drift


def test_given_its_first_tasks_a_client_waits_until_the_others_own_the_rest_even_unheard_from() -> None:
    """Processes that start together: this one's first assignment can come before the other's first report. It owns
    3 of 6 tasks of the merged sub-topology 0 and is catching up there, so it waits until processes that applied
    the generation own the other 3 (seen on CI, 2026-11-28: without it, it ran its share to the end alone)."""
    now = [0.0]
    watermark = _watermark(now)
    watermark.report("t1", 0, 1_000)  # catching up in sub-topology 0
    watermark.assignment_applied("t1", 1, {0: [0, 1, 2], 1: [0, 1, 2]}, {0: 6, 1: 6})
    now[0] = 1.0  # nobody heard from yet
    assert watermark.ceiling("t1", 0, 1_000) == HELD
    watermark.report_process("p2", {}, 1, {0: [3, 4]})  # one task short
    assert watermark.ceiling("t1", 0, 1_000) == HELD
    watermark.report_process("p3", {0: 2_000}, 0, {0: [5]})  # an earlier generation's owner does not count
    assert watermark.ceiling("t1", 0, 1_000) == HELD
    watermark.report_process("p3", {0: 2_000}, 1, {0: [5]})
    assert watermark.ceiling("t1", 0, 1_000) == 32_000
    assert watermark.local_tasks() == {0: [0, 1, 2], 1: [0, 1, 2]}


def test_the_wait_for_the_owners_of_the_other_tasks_is_bounded_and_skipped_when_not_needed() -> None:
    now = [0.0]
    watermark = _watermark(now)
    watermark.report("t1", 0, 1_000)
    watermark.assignment_applied("t1", 1, {0: [0, 1]}, {0: 4})
    now[0] = 4.9
    assert watermark.ceiling("t1", 0, 1_000) == HELD
    now[0] = 5.0  # the staleness bound: a process that never reports holds nobody back for longer
    assert watermark.ceiling("t1", 0, 1_000) == NO_CEILING
    # the threads of one client own all the tasks: nobody else to wait for
    alone = _watermark([0.0])
    alone.report("t1", 0, 1_000)
    alone.assignment_applied("t1", 1, {0: [0, 1]}, {0: 4})
    assert alone.ceiling("t1", 0, 1_000) == HELD
    alone.assignment_applied("t2", 1, {0: [2, 3]}, {0: 4})
    assert alone.ceiling("t1", 0, 1_000) == NO_CEILING  # no other thread has reported a position
    # caught up (no position reported): nothing to run ahead of
    caught_up = _watermark([0.0])
    caught_up.assignment_applied("t1", 1, {0: [0, 1]}, {0: 4})
    assert caught_up.ceiling("t1", 0, 1_000) == NO_CEILING


def test_only_the_first_tasks_wait_for_the_owners_of_the_others() -> None:
    """In a cooperative rebalance the tasks a client revokes are nobody's until the follow-up round: its staying
    tasks would pay that wait in steady state. Later assignments wait only for the processes heard from."""
    now = [0.0]
    watermark = _watermark(now)
    watermark.report("t1", 0, 1_000)
    watermark.assignment_applied("t1", 1, {0: [0, 1, 2, 3]}, {0: 4})  # all of them: no wait
    assert watermark.ceiling("t1", 0, 1_000) == NO_CEILING
    watermark.report_process("p2", {}, 2, {0: []})
    watermark.assignment_applied("t1", 2, {0: [0, 1]}, {0: 4})  # 2 revoked, p2 gets them in the next round
    assert watermark.ceiling("t1", 0, 1_000) == NO_CEILING


def test_the_wait_for_a_generation_is_bounded_by_the_staleness_bound() -> None:
    now = [0.0]
    watermark = _watermark(now)
    watermark.report_process("p2", {}, 1)
    watermark.assignment_applied("t1", 2)
    for t in (1.0, 2.0, 3.0, 4.0, 4.9):  # p2 keeps reporting generation 1: fresh, never there
        now[0] = t
        watermark.report_process("p2", {}, 1)
        assert watermark.ceiling("t1", 0, 1_000) == HELD
    now[0] = 5.0
    watermark.report_process("p2", {}, 1)
    assert watermark.ceiling("t1", 0, 1_000) == NO_CEILING


def test_a_process_that_does_not_say_its_generation_is_waited_for_the_fixed_hold_only() -> None:
    """An earlier release's process, or one that stopped (its last report has no generation)."""
    now = [0.0]
    watermark = _watermark(now)
    watermark.report_process("p2", {0: 1_000})
    watermark.assignment_applied("t1", 2)
    assert watermark.ceiling("t1", 0, 1_000) == HELD
    now[0] = 0.7
    assert watermark.ceiling("t1", 0, 1_000) == 31_000


def test_the_generation_a_client_reports_is_the_one_all_its_threads_applied() -> None:
    watermark = _watermark([0.0])
    assert watermark.local_generation() == -1
    watermark.assignment_applied("t1", 3)
    watermark.assignment_applied("t2", 2)
    assert watermark.local_generation() == 2
    watermark.assignment_applied("t2", 3)
    assert watermark.local_generation() == 3
    watermark.assignment_applied("t1", 4)
    watermark.forget("t2")  # a thread that stopped no longer counts
    assert watermark.local_generation() == 4


def test_no_hold_while_processes_do_not_share() -> None:
    now = [0.0]
    watermark = StreamTimeWatermark(clock=lambda: now[0])
    watermark.report_process("p2", {}, 1)
    watermark.assignment_applied("t1", 2)
    assert watermark.ceiling("t1", 0, 1_000) == NO_CEILING


def test_reports_round_trip() -> None:
    assert decode_positions(encode_positions("p1", {0: 5, 3: -1}, 7)) == ("p1", {0: 5, 3: -1}, 7, None)
    assert decode_positions(encode_positions("p1", {}, -1, {0: [1, 3], 2: []})) == ("p1", {}, -1, {0: [1, 3], 2: []})
    assert decode_positions(encode_positions("p1", {})) == ("p1", {}, None, None)
    # earlier releases' reports (no generation, no tasks) still read
    assert decode_positions(b'{"v": 1, "process": "p", "positions": {"0": 3}}') == ("p", {0: 3}, None, None)


@pytest.mark.parametrize(
    "value",
    [
        None,
        b"",
        b"\x80\x04pickle",
        b"[1, 2]",
        b'{"v": 2, "process": "p", "positions": {}}',
        b'{"v": 1, "positions": {}}',
        b'{"v": 1, "process": "p", "positions": {"0": "late"}}',
        b'{"v": 1, "process": "p", "positions": {"0": true}}',
        b'{"v": 1, "process": "p", "positions": {"zero": 1}}',
        b'{"v": 1, "process": "p", "positions": {}, "generation": "5"}',
        b'{"v": 1, "process": "p", "positions": {}, "generation": false}',
        b'{"v": 1, "process": "p", "positions": {}, "tasks": [1]}',
        b'{"v": 1, "process": "p", "positions": {}, "tasks": {"0": [true]}}',
        b'{"v": 1, "process": "p", "positions": {}, "tasks": {"zero": [1]}}',
    ],
)
def test_anything_else_is_rejected_with_a_value_error(value: bytes | None) -> None:
    with pytest.raises(ValueError):
        decode_positions(value)


async def test_a_thread_waiting_for_a_report_is_cancelled_even_as_one_arrives() -> None:
    """Python 3.11's `wait_for` loses a cancellation that lands in the same step as the event it waits for: a
    client's close then hung on the exchange's publisher (seen once in the cooperative scale-out e2e test)."""
    watermark = StreamTimeWatermark()

    async def wait_forever() -> None:
        while True:
            await watermark.changed(10.0)

    for _ in range(50):
        waiter = asyncio.create_task(wait_forever())
        await asyncio.sleep(0)
        watermark.report_process("p2", {0: 1})  # sets the event
        waiter.cancel()
        done, _ = await asyncio.wait([waiter], timeout=1.0)
        assert done, "the cancellation was lost"
