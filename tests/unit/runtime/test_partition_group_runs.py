"""`PartitionGroup.next_run` takes, with one heap operation, the records `next_record` would take one at a time:
a differential test over random fetches and timestamps (ties included) interleaved with takes."""

from __future__ import annotations

from aiokafka.structs import TopicPartition
from hypothesis import example, given, settings
from hypothesis import strategies as st

from streamlet.runtime.partition_group import PartitionGroup
from tests.unit.runtime._fakes import FetchedTestRecord

PARTITIONS = [TopicPartition("a", 0), TopicPartition("b", 0), TopicPartition("c", 1)]

#: ("add", partition index, timestamps of the fetched batch) or ("take",)
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 2), st.lists(st.integers(0, 12), min_size=1, max_size=6)),
        st.tuples(st.just("take")),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_steps)
@example([("add", 0, [0, 0]), ("add", 1, [0])])  # a tie with another head ends the run
def test_runs_take_records_in_the_one_at_a_time_order(steps: list[tuple]) -> None:
    runs, singles = PartitionGroup(PARTITIONS, 0), PartitionGroup(PARTITIONS, 0)
    offsets = dict.fromkeys(PARTITIONS, 0)
    for step in [*steps, *[("take",)] * 100]:
        if step[0] == "add":
            tp = PARTITIONS[step[1]]
            batch = [FetchedTestRecord(offsets[tp] + i, ts) for i, ts in enumerate(step[2])]
            offsets[tp] += len(batch)
            assert runs.add_records(tp, batch) == singles.add_records(tp, batch)
            continue
        taken = runs.next_run()
        if taken is None:
            assert singles.next_record() is None
            continue
        queue, run = taken
        assert run, "a run has at least the head"
        one_by_one = []
        for _ in run:
            single = singles.next_record()
            assert single is not None
            one_by_one.append((single[0].partition, single[1].offset))
        assert [(queue.partition, r.offset) for r in run] == one_by_one
    assert runs.next_run() is None and singles.next_record() is None
