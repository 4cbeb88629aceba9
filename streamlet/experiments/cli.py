"""`streamlet experiment run SCENARIO...` and `streamlet experiment report RUN_DIR...` (wired into streamlet.cli).

`run` exits 0 when the run passed (timeline done, output exact), 1 when it failed, 2 for a bad scenario
(nothing was started), 130 on Ctrl-C and 143 on SIGTERM; in every case the processes it started are gone
when it returns. With several scenarios or `--protocols`, the runs go one after another (one broker, one
run at a time: they would skew each other's timings), a failed run does not stop the others, the exit code
is the worst one, and Ctrl-C stops the rest. `report` never fails on a damaged run dir: it says what is
missing and reports the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamlet.experiments.protocols import compares_protocols, render_protocol_table
from streamlet.experiments.report import RunSummary, render_report, summarize
from streamlet.experiments.runner import ExperimentRunner, RunRecord
from streamlet.experiments.scenario import Scenario, ScenarioError, load_scenario
from streamlet.experiments.sweep_report import render_html, render_markdown, summary_json
from streamlet.experiments.sweep_space import Shard, SweepError, SweepSpec, expand, load_sweep, selected

log = logging.getLogger("streamlet.experiments")


def add_experiment_parser(sub: Any) -> None:
    experiment = sub.add_parser("experiment", help="run scale-out experiments and report their assignments")
    actions = experiment.add_subparsers(dest="experiment_action", required=True)

    run = actions.add_parser("run", help="run a scenario (TOML) on real worker processes into a run directory")
    run.add_argument(
        "scenarios", nargs="+", metavar="SCENARIO", help="scenario file(s), e.g. examples/experiments/*.toml"
    )
    run.add_argument("--assignor", default=None, help="override [app.config] task_assignor (e.g. balanced)")
    run.add_argument(
        "--protocols",
        default=None,
        help="comma list of rebalance protocols, e.g. eager,cooperative: each scenario runs once under each "
        "(default: the scenario's rebalance_protocol)",
    )
    run.add_argument(
        "--run-dir",
        default=None,
        help="where to record the run (default runs/<name>-<assignor>-<time>); with several runs, a directory "
        "holding one <scenario>-<protocol> run dir each",
    )
    run.add_argument(
        "--bootstrap-servers", default=None, help="use this broker (default: start a local one in the run dir)"
    )
    run.add_argument("-l", "--log-level", dest="log_level", default="info")
    run.set_defaults(handler=run_command)

    report = actions.add_parser(
        "report",
        help="analyse one or more run directories with PySpark: report.html (tables, plots) and summary.json",
    )
    report.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    report.add_argument(
        "--out",
        default=None,
        help="where report.html and summary.json go (default: the run dir, or for several "
        "runs a compare-<labels> dir beside the first)",
    )
    report.add_argument(
        "--master",
        default=None,
        help="Spark master, e.g. spark://host:7077 (default $STREAMLET_SPARK_MASTER or local[*])",
    )
    report.add_argument(
        "--from-kafka",
        default=None,
        metavar="BOOTSTRAP_SERVERS",
        help="read the events from the run's <application_id>-assignments/-metrics topics with Spark's Kafka "
        "source instead of the run dir's files (falls back to the files if the connector is unavailable)",
    )
    report.add_argument("--markdown-only", action="store_true", help="print the markdown tables; no Spark, no HTML")
    report.set_defaults(handler=report_command)

    sweep = actions.add_parser(
        "sweep",
        help="simulate a sweep (TOML) of thousands of scenarios under every assignor on Spark; report.md/html",
    )
    sweep.add_argument("sweep_file", metavar="SWEEP.toml", help="e.g. examples/experiments/sweeps/small.toml")
    sweep.add_argument("--master", default=None, help="Spark master, e.g. spark://host:7077 (default local[*])")
    sweep.add_argument("--out", default=None, help="where report.md, report.html, summary.json go (default runs/)")
    sweep.add_argument(
        "--max-size",
        type=int,
        default=None,
        metavar="N",
        help="a subset: only the situations with clients x stateful tasks <= N (the report says so)",
    )
    sweep.add_argument(
        "--shard",
        default=None,
        metavar="K/N",
        help="a subset: every N-th situation, starting at the K-th (run all N, with --rows, for the whole sweep)",
    )
    sweep.add_argument(
        "--rows",
        default=None,
        metavar="DIR",
        help="also save the per-scenario rows (Parquet) under DIR, one directory per shard",
    )
    sweep.add_argument(
        "--from-rows",
        default=None,
        metavar="DIR",
        help="simulate nothing: one report from the rows that shard runs saved under DIR (--rows DIR)",
    )
    sweep.set_defaults(handler=sweep_command)


def read_run_dir(run_dir: Path) -> RunSummary:
    """run.json, assignments.jsonl and metrics.jsonl of a run dir, each possibly missing or damaged, summarized."""
    record: Mapping[str, Any] | None = None
    path = run_dir / "run.json"
    if path.exists():
        with contextlib.suppress(ValueError, OSError):
            loaded = json.loads(path.read_text())
            record = loaded if isinstance(loaded, Mapping) else None
    events = run_dir / "assignments.jsonl"
    lines = events.read_text(errors="replace").splitlines() if events.exists() else None
    label = run_dir.name
    metrics = run_dir / "metrics.jsonl"
    metrics_lines = metrics.read_text(errors="replace").splitlines() if metrics.exists() else None
    summary = summarize(label, record, lines, metrics_lines)
    if metrics_lines is None and run_dir.is_dir():
        summary.problems.append("metrics.jsonl is missing: no per-client records processed or time not RUNNING")
    if not run_dir.is_dir():
        summary.problems.insert(0, f"{run_dir} is not a directory")
    return summary


def default_out_dir(run_dirs: list[Path]) -> Path:
    if len(run_dirs) == 1:
        return run_dirs[0]
    return run_dirs[0].parent / ("compare-" + "-".join(d.name for d in run_dirs))


def render_with_protocols(summaries: list[RunSummary]) -> str:
    """The report, preceded by the protocols' table when the runs compare one scenario under several."""
    head = "\n".join(render_protocol_table(summaries)) + "\n" if compares_protocols(summaries) else ""
    return head + render_report(summaries)


def report_command(args: argparse.Namespace) -> int:
    run_dirs = [Path(d) for d in args.run_dirs]
    summaries = [read_run_dir(d) for d in run_dirs]
    print(render_with_protocols(summaries), end="")
    if args.markdown_only:
        return 0
    # the Spark side depends on this package's pure report modules, not the other way round: loaded here only
    from streamlet.spark import SparkNotInstalledError, SparkSetupError
    from streamlet.spark.experiment_report import write_html_report
    from streamlet.spark.session import session_active, stop_spark

    out = Path(args.out) if args.out else default_out_dir(run_dirs)
    keep_session = session_active()  # the process's own (a test's, a notebook's): not the command's to stop
    try:
        html, summary = write_html_report(run_dirs, summaries, out, master=args.master, from_kafka=args.from_kafka)
    except (SparkNotInstalledError, SparkSetupError) as exc:
        print(f"error: report.html needs Spark: {exc}", file=sys.stderr)
        return 2
    finally:
        if not keep_session:
            stop_spark()
    print(f"\nwrote {html} and {summary}")
    return 0


def sweep_command(args: argparse.Namespace) -> int:
    """Expand, simulate on Spark, aggregate in Spark, write the report; 2 for a bad sweep file or no Spark."""
    # the Spark side depends on this package's pure sweep modules, not the other way round: loaded here only
    from streamlet.spark import SparkNotInstalledError, SparkSetupError
    from streamlet.spark.session import get_spark, session_active, stop_spark
    from streamlet.spark.sweep import DEFAULT_SWEEP_MASTER, aggregate, read_rows, run_sweep, saved_rows_problem

    try:
        spec = load_sweep(Path(args.sweep_file))
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        shard = Shard.parse(args.shard) if args.shard else None
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.from_rows and (shard or args.max_size is not None or args.rows):
        print("error: --from-rows reports on saved rows: no --shard, --max-size or --rows", file=sys.stderr)
        return 2
    if not args.from_rows and not any(selected(s, args.max_size, shard) for s in expand(spec)):
        given = [f"--max-size {args.max_size}"] if args.max_size is not None else []
        given += [f"--shard {args.shard}"] if shard else []
        print(f"error: {' and '.join(given)} leaves no situation of the sweep", file=sys.stderr)
        return 2
    saved = sorted(p for p in Path(args.from_rows).glob("shard-*") if p.is_dir()) if args.from_rows else []
    if args.from_rows and not saved:
        print(f"error: {args.from_rows} holds no shard-* rows (save them with --shard K/N --rows DIR)", file=sys.stderr)
        return 2
    rows = None
    if args.rows:
        label = (shard or Shard(1, 1)).label + ("" if args.max_size is None else f"-max-size-{args.max_size}")
        rows = Path(args.rows) / label
    master = args.master or DEFAULT_SWEEP_MASTER
    out = Path(args.out) if args.out else Path("runs") / f"sweep-{spec.name}"
    started = time.monotonic()
    keep_session = session_active()  # the process's own (a test's, a notebook's): not the command's to stop
    try:
        spark = get_spark(master, kafka=False, app_name=f"streamlet-sweep-{spec.name}")
        if saved:
            frame = read_rows(spark, saved)
            problem = saved_rows_problem(frame, spec)
            if problem:
                print(f"error: the rows under {args.from_rows}: {problem}", file=sys.stderr)
                return 2
            aggregates = aggregate(frame)
        else:
            aggregates = run_sweep(spark, spec, max_size=args.max_size, shard=shard, rows=rows)
    except (SparkNotInstalledError, SparkSetupError) as exc:
        print(f"error: the sweep needs Spark: {exc}", file=sys.stderr)
        return 2
    finally:
        if not keep_session:
            stop_spark()
    note = subset_note(spec, aggregates.situations, args.max_size, shard)
    if saved:
        names = ", ".join(p.name for p in saved)
        note += f"Aggregated from the rows of {len(saved)} shard runs saved under {args.from_rows} ({names})."
    else:
        note += f"Ran on Spark master {master} in {time.monotonic() - started:.0f} s."
    out.mkdir(parents=True, exist_ok=True)
    markdown = render_markdown(spec, aggregates, note)
    (out / "report.md").write_text(markdown)
    (out / "report.html").write_text(render_html(spec, aggregates, note))
    (out / "summary.json").write_text(json.dumps(summary_json(spec, aggregates), indent=1) + "\n")
    print(markdown, end="")
    print(f"\nwrote {out / 'report.md'}, {out / 'report.html'} and {out / 'summary.json'}")
    return 0


def subset_note(spec: SweepSpec, situations: int, max_size: int | None, shard: Shard | None) -> str:
    """What part of the sweep a report covers, when not all of it (the report's note begins with it)."""
    if situations == spec.situations:
        return ""
    taken = []
    if max_size is not None:
        taken.append(f"only its situations with clients x stateful tasks <= {max_size}")
    if shard is not None:
        taken.append(
            f"shard {shard.index} of {shard.count} (the situations numbered {shard.index - 1} modulo {shard.count})"
        )
    how = ", ".join(taken) or "the situations of the saved shards"
    return f"A SUBSET of the sweep: {how} ({situations} of {spec.situations}). "


def planned_runs(args: argparse.Namespace) -> list[tuple[Scenario, Path]]:
    """Every (scenario, run dir) the command runs, all checked before the first starts: a typo in the third
    scenario must not surface after two runs' worth of rebalancing."""
    scenarios = [load_scenario(path) for path in args.scenarios]  # ScenarioError: exit 2, nothing started
    if args.assignor:
        scenarios = [s.with_assignor(args.assignor) for s in scenarios]
    protocols = [p.strip() for p in args.protocols.split(",") if p.strip()] if args.protocols else []
    if args.protocols is not None and not protocols:
        raise ScenarioError("--protocols: give at least one rebalance protocol (eager, cooperative)")
    if protocols:
        scenarios = [s.with_protocol(p) for s in scenarios for p in protocols]
    names = [(s.name, s.app.rebalance_protocol) for s in scenarios]
    if len(set(names)) != len(names):
        raise ScenarioError("the same scenario is given twice under the same protocol: its run dirs would collide")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    if len(scenarios) == 1:
        only = scenarios[0]
        return [(only, Path(args.run_dir or f"runs/{only.name}-{only.app.task_assignor}-{stamp}"))]
    base = Path(args.run_dir or f"runs/experiments-{stamp}")
    return [(s, base / f"{s.name}-{s.app.rebalance_protocol}") for s in scenarios]


def run_command(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    if args.log_level.lower() != "debug":  # the clients' retries while new topics get leaders are noise here
        logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    runs = planned_runs(args)
    for _, run_dir in runs:  # checked up front too, rather than by the runner after the earlier runs
        if run_dir.exists() and any(run_dir.iterdir()):
            raise ScenarioError(f"run directory {run_dir} is not empty: give a new one")
    codes = []
    for scenario, run_dir in runs:
        code = run_one(scenario, run_dir, args.bootstrap_servers)
        codes.append(code)
        if code in (130, 143):  # interrupted: the rest is not run
            return code
    if len(runs) > 1:
        summaries = [read_run_dir(run_dir) for _, run_dir in runs]
        table = "\n".join(render_protocol_table(summaries)) + "\n"
        base = runs[0][1].parent
        (base / "protocols.md").write_text(table)
        print("\n" + table, end="")
        print(
            f"wrote {base / 'protocols.md'}; every run: streamlet experiment report {' '.join(str(d) for _, d in runs)}"
        )
    return max(codes)


def run_one(scenario: Scenario, run_dir: Path, bootstrap_servers: str | None) -> int:
    """Run one scenario into `run_dir`, print its report; the exit code of `experiment run` for it."""
    log.info(
        "running %s (%s, %s) into %s",
        scenario.name,
        scenario.app.task_assignor,
        scenario.app.rebalance_protocol,
        run_dir,
    )
    runner = ExperimentRunner(scenario, run_dir, bootstrap_servers=bootstrap_servers)
    terminated = False

    async def main() -> RunRecord:
        nonlocal terminated
        task = asyncio.current_task()
        assert task is not None

        def on_sigterm() -> None:
            nonlocal terminated
            terminated = True
            task.cancel()

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_sigterm)
        return await runner.run()

    try:
        record = asyncio.run(main())
    except KeyboardInterrupt:
        print(f"interrupted; every process was stopped; partial run in {run_dir}", file=sys.stderr)
        return 130
    except asyncio.CancelledError:
        print(f"terminated; every process was stopped; partial run in {run_dir}", file=sys.stderr)
        return 143 if terminated else 130
    report = render_report([read_run_dir(run_dir)])
    (run_dir / "report.md").write_text(report)
    print(report, end="")
    print(f"\nrun {record.status} in {(record.ended_at or time.time()) - record.started_at:.0f}s: {run_dir}")
    print(f"plots and summary.json (PySpark): streamlet experiment report {run_dir}")
    if record.error:
        print(f"error: {record.error}", file=sys.stderr)
    return 0 if record.status == "passed" else 1
