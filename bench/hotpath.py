"""Where does a streamlet worker spend its time in WordCount? py-spy samples one worker process.

Loads the corpus into a fresh input topic (or `--words`), starts one `streamlet worker` (2 threads, commit
1 s, 10 MiB cache) on it, attaches `py-spy record` (from bench/.venv-peers) for the processing phase, and
prints the top functions by own time and by inclusive time (streamlet/aiokafka/rocksdict frames), plus
the flame-graph input in bench/results/hotpath.raw.txt (py-spy's collapsed stacks).

`--native` also samples C frames (py-spy's --native): the modules mypyc compiles (streamlet/_compiled.py) and the
C extensions are opaque to a Python-only profile, whose samples land on the interpreted line that called into
them (about half of a worker's time at 17b4650). Written to hotpath-native.json / hotpath-native.raw.txt.

Usage: .venv/bin/python bench/hotpath.py [--words N] [--seconds S] [--native]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import corpus as corpus_mod  # noqa: E402
from common import LIB_PY, PEERS_VENV, log, spawn  # noqa: E402

PY_SPY = PEERS_VENV / "bin" / "py-spy"


# frames a native profile charges CPython's own work to: Python functions, mypyc-compiled ones, streamlet's C
OWNER_MARKS = (".py:", "CPyDef_", "record_encoder.c", "record_batch.c")


def owner(frames: list[str]) -> str:
    """The innermost frame that is streamlet's or Python code, without its line: a native sample in Py_DECREF or
    a dict lookup is charged to the function that called it."""
    frame = next((f for f in reversed(frames) if any(mark in f for mark in OWNER_MARKS)), frames[-1])
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rsplit(':', 1)[0].rstrip(')')})"


def summarize(raw: Path, top: int = 25) -> dict[str, Any]:
    own: collections.Counter[str] = collections.Counter()
    owners: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        count = int(n)
        total += count
        frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        if not frames:
            continue
        own[frames[-1]] += count
        owners[owner(frames)] += count
        for f in set(frames):
            incl[f] += count
    return {
        "samples": total,
        "self": [(f, round(n / total, 4)) for f, n in own.most_common(top)],
        "self_by_owner": [(f, round(n / total, 4)) for f, n in owners.most_common(top)],
        "inclusive": [(f, round(n / total, 4)) for f, n in incl.most_common(top * 3)],
    }


async def prepare(bootstrap: str, topic: str, c: corpus_mod.Corpus) -> None:
    await common.recreate_topics(bootstrap, {topic: 6})
    await common.produce_lines(bootstrap, topic, c.lines, 6)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", type=int, default=corpus_mod.TARGET_WORDS)
    parser.add_argument("--seconds", type=int, default=25, help="how long py-spy samples")
    parser.add_argument("--native", action="store_true", help="sample C frames too (compiled modules, C extensions)")
    args = parser.parse_args(argv)
    if not PY_SPY.exists():
        print(f"{PY_SPY} missing: run bench/setup_peers.sh")
        return 1
    run_id = time.strftime("%m%d%H%M%S")
    common.quiet_logs()
    app_id = f"bench-profile-{run_id}"
    input_topic, output_topic = f"{app_id}-input", f"{app_id}-output"
    work = common.WORK / run_id / "profile"
    name = "hotpath-native" if args.native else "hotpath"
    raw = common.RESULTS / f"{name}.raw.txt"
    c = corpus_mod.build(args.words)
    with common.broker() as bootstrap:
        asyncio.run(prepare(bootstrap, input_topic, c))
        asyncio.run(common.recreate_topics(bootstrap, {output_topic: 6}))
        env = {
            "WORDCOUNT_INPUT_TOPIC": input_topic,
            "WORDCOUNT_OUTPUT_TOPIC": output_topic,
            "WORDCOUNT_APPLICATION_ID": app_id,
        }
        worker = spawn(
            "worker",
            [
                str(LIB_PY),
                "-m",
                "streamlet.cli",
                "worker",
                "examples.wordcount.app:app",
                "--threads",
                "2",
                "--state-dir",
                str(work / "state"),
                "--bootstrap-servers",
                bootstrap,
                "--log-level",
                "warning",
                "--config",
                "commit_interval_ms=1000",
            ],
            work / "worker.log",
            env=env,
        )
        try:
            time.sleep(4)  # group join; the input is already there, so it is processing after this
            common.RESULTS.mkdir(parents=True, exist_ok=True)
            log(f"py-spy record for {args.seconds}s on pid {worker.popen.pid}")
            proc = subprocess.run(
                [
                    str(PY_SPY),
                    "record",
                    "--pid",
                    str(worker.popen.pid),
                    "--duration",
                    str(args.seconds),
                    *(["--native"] if args.native else []),
                    "--rate",
                    "200",
                    "--format",
                    "raw",
                    "--output",
                    str(raw),
                ],
                capture_output=True,
                text=True,
                timeout=args.seconds + 60,
                check=False,
            )
            if proc.returncode != 0:
                print(proc.stdout + proc.stderr)
                return 1
        finally:
            common.stop(worker)
        asyncio.run(common.delete_topics_with_prefix(bootstrap, app_id))
    summary = summarize(raw)
    print(f"\n{summary['samples']} samples; top by own time:")
    for f, share in summary["self"][:20]:
        print(f"  {100 * share:5.1f}%  {f}")
    if args.native:
        print("\ntop by own time, CPython's internals charged to the function that called them:")
        for f, share in summary["self_by_owner"][:20]:
            print(f"  {100 * share:5.1f}%  {f}")
    print("\ntop by inclusive time:")
    for f, share in summary["inclusive"][:45]:
        print(f"  {100 * share:5.1f}%  {f}")
    path = common.write_result(name, {**summary, "command": " ".join(["bench/hotpath.py", *sys.argv[1:]])})
    log(f"wrote {path} and {raw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
