"""The registry from processor spec type to builder."""

from __future__ import annotations

import pytest

from streamlet.errors import TopologyError
from streamlet.runtime import processor_builders, stream_processors
from streamlet.runtime.processor_graph import TaskProcessorGraph
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.topic_names import TopicNames
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder
from streamlet.topology import nodes as n
from tests.unit.runtime._support import FakeContext
from tests.unit.topology._support import spec_families


def test_every_family_but_the_splitter_has_a_builder() -> None:
    # the splitter forwards to one child by name, so processor_graph wires it itself
    assert set(processor_builders._BUILDERS) == spec_families() - {n.BranchSpec}


def test_every_stateless_stream_operation_has_a_builder() -> None:
    assert set(stream_processors._BUILDERS) == n.StreamOperationSpec.OPS


def test_a_spec_of_no_known_family_is_refused_by_name() -> None:
    class Unknown(n.StreamOperationSpec):  # a subclass is a type of its own: no builder is inherited
        pass

    names = TopicNames(StreamsBuilder().build(), "app")
    task = TaskId(0, 0)
    graph = TaskProcessorGraph(task, "app", 0, RecordContext())
    spec = Unknown("x", (), n.FILTER, fn=bool)
    with pytest.raises(TopologyError, match=r"no processor builder for Unknown \(node x, 'filter'\)"):
        processor_builders.build_processor(spec, print, names, FakeContext(task), graph)
