#!/usr/bin/env bash
# Installs what the benchmarks need besides the library's own .venv: the peers' venv (bench/.venv-peers,
# from requirements-peers.txt) and the Java parts (bench/kafka-streams, bench/spark) built with Maven.
# Idempotent: re-installs only when requirements-peers.txt or a pom changed.
set -euo pipefail
BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-python3}"
VENV="$BENCH/.venv-peers"
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "the peers need Python 3.11+")'
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
STAMP="$VENV/.installed"
if [ ! -f "$STAMP" ] || [ "$BENCH/requirements-peers.txt" -nt "$STAMP" ]; then
  echo "installing the peers into $VENV ..."
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r "$BENCH/requirements-peers.txt"
  touch "$STAMP"
fi
command -v mvn >/dev/null || { echo "mvn not found (apt-get install maven): the Java peers cannot be built"; exit 1; }
# the Kafka Streams peers: STREAMLET_BENCH_KAFKA_STREAMS_VERSION (as bench/common.py reads it), else the pom's version
KS_VERSION="${STREAMLET_BENCH_KAFKA_STREAMS_VERSION:-$(sed -n 's|.*<kafka.version>\(.*\)</kafka.version>.*|\1|p' "$BENCH/kafka-streams/pom.xml")}"
KS_BUILT="$BENCH/kafka-streams/target/kafka-$KS_VERSION/.built"
if [ ! -f "$KS_BUILT" ] || [ "$BENCH/kafka-streams/pom.xml" -nt "$KS_BUILT" ] \
   || [ -n "$(find "$BENCH/kafka-streams/src" -newer "$KS_BUILT" -type f 2>/dev/null)" ]; then
  echo "building bench/kafka-streams for Kafka $KS_VERSION (Kafka Streams WordCount, kafka-tools) ..."
  (cd "$BENCH/kafka-streams" && mvn -q -B package -DskipTests -Dkafka.version="$KS_VERSION" && touch "$KS_BUILT")
fi
SPARK_VERSION="$("$VENV/bin/python" -c 'import pyspark; print(pyspark.__version__)')"
if [ ! -f "$BENCH/spark/target/.built-$SPARK_VERSION" ]; then
  echo "resolving Spark's Kafka connector $SPARK_VERSION ..."
  (cd "$BENCH/spark" && rm -rf target && mvn -q -B -Dspark.version="$SPARK_VERSION" package && touch "target/.built-$SPARK_VERSION")
fi
