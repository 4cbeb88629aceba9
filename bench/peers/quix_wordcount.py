"""Quix Streams WordCount with its RocksDB state: split -> group_by(word) -> stateful count -> output.

Usage: quix_wordcount.py BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR COMMIT_INTERVAL_S
"""

import struct
import sys

from _split import split_words
from quixstreams import Application


def main() -> None:
    bootstrap, app_id, input_topic, output_topic, state_dir, commit_s = sys.argv[1:7]
    app = Application(
        broker_address=bootstrap,
        consumer_group=app_id,
        auto_offset_reset="earliest",
        state_dir=state_dir,
        commit_interval=float(commit_s),
        loglevel="WARNING",
    )
    lines = app.topic(input_topic, key_deserializer="bytes", value_deserializer="str")
    out = app.topic(output_topic, key_serializer="str", value_serializer="bytes")

    def count(word: str, state) -> bytes:
        n = state.get("n", 0) + 1
        state.set("n", n)
        return struct.pack(">q", n)

    sdf = app.dataframe(lines)
    sdf = sdf.apply(split_words, expand=True)
    sdf = sdf.group_by(
        lambda word: word,
        name="word",
        key_serializer="str",
        key_deserializer="str",
        value_serializer="str",
        value_deserializer="str",
    )
    sdf = sdf.apply(count, stateful=True)
    sdf.to_topic(out)
    app.run()


if __name__ == "__main__":
    main()
