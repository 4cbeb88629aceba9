"""Collects bench/results/*.json into one report: prints it, writes bench/results/summary.md and, with
--update-readme, replaces the part of bench/README.md between the `results:start/end` markers."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
START, END = "<!-- results:start -->", "<!-- results:end -->"


def load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _when(d: dict) -> str:
    m = d.get("machine", {})
    return f" ({m.get('date', '?')}, commit {m.get('commit', '?')})"


def build() -> str:
    parts: list[str] = []
    wc, rs, rb, hp = load("wordcount"), load("restore"), load("rebalance"), load("hotpath")
    machine = next((d["machine"] for d in (wc, rs, rb, hp) if d), None)
    if machine:
        parts.append(
            f"Run of {machine['date']} on {machine['cpus']} cores ({machine['cpu']}), "
            f"{machine['mem_gib']} GiB, load average {machine.get('loadavg_at_end', '?')} at the end, "
            f"{machine['os']}; Python {machine['python']}, {machine['java']}, Kafka {machine['kafka']} (one "
            f"local KRaft broker), streamlet {machine['streamlet']} at commit {machine.get('commit', '?')}, "
            f"aiokafka {machine['aiokafka']}, "
            f"rocksdict {machine['rocksdict']}."
        )
    if wc:
        c = wc["corpus"]
        parts.append(
            f"### WordCount throughput{_when(wc)}\n\n`{wc['command']}`: {c['words']:,} words "
            f"({c['lines']:,} lines, "
            f"{c['distinct_words']:,} distinct, corpus sha256 {c['sha256'][:12]}), "
            f"{wc.get('partitions', 6)} partitions. words/s = "
            "words / (last correct count out - first record in); start-up = launch -> first record in.\n\n"
            + wc["table"]
        )
    if rs:
        parts.append(
            f"### Restoration{_when(rs)}\n\n`{rs['command']}`: {rs['keys']:,} distinct keys in the count "
            "store's "
            f"changelog ({rs['partitions']} partition(s)); records/s = restored records / (first restore "
            "start -> last restore end) from the restore listener; start -> processing = until a probe "
            "line is counted on top of the restored counts.\n\n" + rs["table"]
        )
    jn = load("join")
    if jn:
        parts.append(
            f"### Stream-table join throughput{_when(jn)}\n\n`{jn['command']}`: {jn['customers']:,} customers (a "
            f"KTable), then {jn['orders']:,} orders left-joined with it, {jn['threads']} threads; rate = orders / "
            "(launch -> last joined order out); unjoined = orders joined with no customer. Median ratio "
            f"streamlet / Kafka Streams: **{jn['median']}**.\n\n" + jn["table"]
        )
    wd = load("windowed")
    if wd and "table" in wd:
        parts.append(
            f"### Windowed count throughput{_when(wd)}\n\n`{wd['command']}`: {wd['records']:,} records into "
            f"{wd['windows']:,} one-minute windows (10 s grace), {wd['threads']} threads; rate = records / (launch "
            f"-> every window's latest count right). Median ratio streamlet / Kafka Streams: **{wd['median']}**.\n\n"
            + wd["table"]
        )
    lt = load("latency")
    if lt:
        st = lt["settings"]
        parts.append(
            f"### End-to-end latency at {st['rate']:,.0f} words/s{_when(lt)}\n\n`bench/latency.py`: update "
            "received by a consumer of the output (read_committed under exactly-once) minus its input record's "
            f"timestamp, over {st['seconds']:.0f} s after a {st['warmup']:.0f} s warm-up; commit interval "
            f"{st['commit_interval_ms']} ms, cache off, producer linger 5 ms for every peer; medians over the "
            "interleaved rounds.\n\n" + lt["table"]
        )
    mem = load("memory")
    if mem:
        parts.append(
            f"### Worker memory against distinct keys{_when(mem)}\n\n`{mem['command']}`: WordCount of all-distinct "
            "words, one worker (2 threads, 10 MiB record cache), RSS sampled every 0.2 s.\n\n" + mem["table"]
        )
    if rb:
        parts.append(
            f"### Rebalance pause (streamlet, 2 -> 3 clients){_when(rb)}\n\n`{rb['command']}`: "
            f"{(rb.get('runs') or [rb])[0]['rate_lines_per_s']:.0f} lines/s, cache off.\n\n" + rb["table"]
        )
    mg = load("migration")
    if mg:
        parts.append(
            f"### Migration pause (a stateful task moves to a new client){_when(mg)}\n\n`{mg['command']}`: "
            "2 -> 3 clients (1 thread each, cache off, commit 1 s, probing rebalance every 60 s, Kafka Streams' "
            "warmup defaults), the count store preloaded through its changelog; the pause of a moved task is the "
            "gap in its output partition around the move (ownership sampled from the group every 0.5 s).\n\n"
            + mg["table"]
        )
    if hp:
        rows = "\n".join(f"| {100 * s:.1f}% | `{f}` |" for f, s in hp["self"][:12])
        parts.append(
            f"### Hot path (py-spy, one streamlet worker, own time){_when(hp)}\n\n`{hp['command']}`, "
            f"{hp['samples']} samples\n\n| share | function |\n|---|---|\n{rows}"
        )
    return "\n\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args(argv)
    text = build()
    print(text)
    (RESULTS / "summary.md").write_text(text)
    readme = BENCH / "README.md"
    if args.update_readme and readme.exists():
        content = readme.read_text()
        if START in content and END in content:
            head, rest = content.split(START, 1)
            _, tail = rest.split(END, 1)
            readme.write_text(f"{head}{START}\n{text}{END}{tail}")
            print(f"updated {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
