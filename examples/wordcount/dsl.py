"""WordCount with the Kafka Streams-style DSL, node for node the topology of Kafka Streams' WordCountDemo.

builder.stream("streams-plaintext-input")
    .flatMapValues(value -> Arrays.asList(value.toLowerCase(Locale.getDefault()).split("\\W+")))
    .groupBy((key, value) -> value)
    .count(Materialized.as("counts-store"))
    .toStream()
    .to("streams-wordcount-output", Produced.with(Serdes.String(), Serdes.Long()));
"""

from __future__ import annotations

import re

from streamlet.topology import KStream, StreamsBuilder, Topology

INPUT_TOPIC = "streams-plaintext-input"
OUTPUT_TOPIC = "streams-wordcount-output"
APPLICATION_ID = "streams-wordcount"
_NON_WORD = re.compile(r"\W+", re.ASCII)  # Java's \W is ASCII-only: "café" splits to "caf"


def split_words(line: str | None) -> list[str]:
    """Java's `line.toLowerCase().split("\\W+")`: a leading separator yields one empty first word,
    trailing empty strings are dropped, and a line with no separator (even an empty one) is one word.
    A null line (a record with no value, e.g. a tombstone) has no words."""
    if line is None:
        return []
    words = _NON_WORD.split(line.lower())
    if len(words) == 1:
        return words
    while words and words[-1] == "":
        words.pop()
    return words


def count_words(lines: KStream, output_topic: str = OUTPUT_TOPIC, *, pre_aggregate: bool = False) -> None:
    """The WordCount pipeline on a stream of text lines (string values); `pre_aggregate` counts words per
    task before the repartition topic (streamlet's opt-in, see `streamlet.topology.pre_aggregation`)."""
    (
        lines.flat_map_values(split_words)
        .group_by(lambda _key, word: word, key_serde="str", value_serde="str")
        .count("counts-store", pre_aggregate=pre_aggregate)
        .to_stream()
        .to(output_topic, key_serde="str", value_serde="int64")
    )


def build_topology(
    input_topic: str = INPUT_TOPIC, output_topic: str = OUTPUT_TOPIC, *, pre_aggregate: bool = False
) -> Topology:
    builder = StreamsBuilder()
    lines = builder.stream(input_topic, key_serde="str", value_serde="str")
    count_words(lines, output_topic, pre_aggregate=pre_aggregate)
    return builder.build()
