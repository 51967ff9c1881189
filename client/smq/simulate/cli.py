"""`smq simulate TRACE.jsonl ...` and `smq simulate generate KIND ...`.

Both forms share one parser: `generate` in the place of the trace names the generator (a trace
file called `generate` is given as `./generate`). A bad trace, configuration or option is one line
on stderr and exit 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.simulation.costs import DEFAULT_SPOT_DISCOUNT, Pricing
from smq_lambda.simulation.engine import Result, Timing, simulate
from smq_lambda.simulation.policies import PolicyName
from smq_lambda.simulation.trace import TraceError, check_pools, parse_trace, write_trace

from smq.argument_types import pool_capacity
from smq.simulate.report import cost_table, estimate_table, metrics_table, team_table, write_outputs
from smq.simulate.workloads import GENERATORS, Workload

if TYPE_CHECKING:
    from smq_lambda.domain.config.config_document import QueueConfigDocument

EXIT_OK = 0
EXIT_USAGE = 2
GENERATE = "generate"


class SimulationUsageError(Exception):
    """What the user gave cannot be simulated: exit 2 with this message."""


def register_simulate_command(subparsers: Any) -> None:
    generators = ",".join(GENERATORS)
    parser = subparsers.add_parser(
        "simulate",
        help="replay a workload against the scheduler in virtual time (what-if, baselines, Gantt chart)",
        usage=f"smq simulate TRACE.jsonl [options]\n       smq simulate generate {{{generators}}} [--seed N] [--out DIR]",
        description="Replay TRACE.jsonl (one JSON object per job) with the real scheduling code, or generate a trace.",
    )
    parser.add_argument("trace", metavar="TRACE.jsonl", help="the trace to replay, or 'generate'")
    parser.add_argument("kind", nargs="?", help=f"generate only: the workload ({', '.join(GENERATORS)})")
    parser.add_argument("--policy", choices=[str(name) for name in PolicyName], default=str(PolicyName.SMQ))
    parser.add_argument("--compare", action="store_true", help="run every policy and print them side by side")
    parser.add_argument("--backfill", choices=("on", "off"), default="on", help="smq's backfill (default on)")
    parser.add_argument(
        "--capacity", action="append", default=[], metavar="TYPE=N", type=pool_capacity, help="a pool, repeatable"
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE.json",
        help="the queue's configuration document (pools, team quotas, preemption and aging rules, prices, budgets)",
    )
    parser.add_argument(
        "--region",
        metavar="REGION",
        help="price the types --config does not with the prices smq ships for this region (e.g. us-east-1)",
    )
    parser.add_argument(
        "--spot-discount",
        type=share,
        default=DEFAULT_SPOT_DISCOUNT,
        metavar="SHARE",
        help=f"the share of a spot job's training time SageMaker does not bill (default {DEFAULT_SPOT_DISCOUNT})",
    )
    parser.add_argument("--out", type=Path, metavar="DIR", help="write metrics.json, timeline.csv, gantt.png here")
    parser.add_argument("--seed", type=int, default=7, help="start-up times (simulate) or the workload (generate)")
    parser.add_argument(
        "--start-s",
        type=start_range,
        default=(120.0, 300.0),
        metavar="MIN[:MAX]",
        help="seconds from a start to training, drawn uniformly (default 120:300)",
    )
    parser.add_argument(
        "--pass-delay-s", type=float, default=0.0, metavar="S", help="from an event to its pass (default 0)"
    )
    parser.add_argument(
        "--estimates",
        action="store_true",
        help="smq only: estimate the pending jobs' starts before passes and measure them (slower)",
    )
    parser.add_argument("--jobs", type=int, help="generate (all but seed and kueue): how many jobs")
    parser.add_argument("--pools", type=int, help="generate kueue: how many pools of 20 instances (default 3)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        if args.trace == GENERATE:
            return generate(args)
        if args.kind is not None:
            raise SimulationUsageError(f"unexpected argument {args.kind!r} after the trace")
        return replay(args)
    except (SimulationUsageError, TraceError) as exc:
        print(f"smq simulate: {exc}", file=sys.stderr)
        return EXIT_USAGE


def generate(args: argparse.Namespace) -> int:
    if args.kind not in GENERATORS:
        raise SimulationUsageError(f"generate needs a workload: one of {', '.join(GENERATORS)}")
    given = {key: value for key, value in {"jobs": args.jobs, "pools": args.pools}.items() if value is not None}
    generator, size = GENERATORS[args.kind]
    unknown = [f"--{key}" for key in given if key != size]
    if unknown:
        raise SimulationUsageError(f"generate {args.kind} takes no {' or '.join(unknown)}")
    workload: Workload = generator(args.seed, **given)
    if args.out is None:
        sys.stdout.write(write_trace(workload.jobs))
        return EXIT_OK
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "trace.jsonl").write_text(write_trace(workload.jobs))
    (args.out / "config.json").write_text(json.dumps(workload.config, indent=2) + "\n")
    print(f"wrote {args.out / 'trace.jsonl'} ({len(workload.jobs)} jobs) and {args.out / 'config.json'}")
    print(
        f"next: smq simulate {args.out / 'trace.jsonl'} --config {args.out / 'config.json'} --compare --out {args.out}"
    )
    return EXIT_OK


def replay(args: argparse.Namespace) -> int:
    config, results = simulate_args(args)
    print(metrics_table({name: result.metrics for name, result in results.items()}))
    teams = team_table({name: result.metrics for name, result in results.items()})
    if teams is not None:
        print(f"\nper team (quotas of {args.config}):\n\n{teams}")
    estimates = estimate_table({name: result.metrics for name, result in results.items()})
    if estimates is not None:
        print(f"\nstart estimates (smq), measured against the starts that followed:\n\n{estimates}")
    costs = cost_table({name: result.metrics for name, result in results.items()})
    if costs is not None:
        print(f"\ncost (US dollars; budgets hold under smq only):\n\n{costs}")
    if args.out is not None:
        for name, result in results.items():
            directory = args.out / name if args.compare else args.out
            title = f"{Path(args.trace).name}: {name}" + (f", backfill {args.backfill}" if name == "smq" else "")
            skipped = write_outputs(directory, result, config.pools, title)
            if skipped:
                print(f"smq simulate: gantt.png not drawn: {skipped}", file=sys.stderr)
        print(f"wrote metrics.json, timeline.csv and gantt.png under {args.out}")
    return EXIT_OK


def simulate_args(args: argparse.Namespace) -> tuple[SchedulerConfig, dict[str, Result]]:
    """The configuration and each policy's result for `smq simulate TRACE.jsonl [options]`: what
    it prints and writes (tests/simulate/test_baseline.py replays through it)."""
    trace = read_trace(args.trace)
    config = config_of(args)
    try:
        check_pools(trace, config.pools)
    except TraceError as exc:
        raise SimulationUsageError(f"{args.trace} {exc}") from None
    timing = Timing(args.start_s[0], args.start_s[1], args.pass_delay_s, args.seed)
    names = list(PolicyName) if args.compare else [PolicyName(args.policy)]
    pricing = pricing_of(args, config)
    return config, {
        str(name): simulate(trace, config, name, timing, estimates=args.estimates, pricing=pricing) for name in names
    }


def pricing_of(args: argparse.Namespace, config: SchedulerConfig) -> Pricing | None:
    """What the run is priced at: the prices of --config over those shipped for --region; None (no
    cost figures, as before prices) when neither prices anything and --config has no budgets."""
    pricing = Pricing.of(config.prices, args.region, args.spot_discount)
    return pricing if pricing.prices or config.budgets else None


def read_trace(path: str) -> list[TraceJob]:
    try:
        with open(path) as file:
            return parse_trace(file)
    except OSError as exc:
        raise SimulationUsageError(f"cannot read the trace {path}: {exc.strerror}") from None
    except TraceError as exc:
        raise SimulationUsageError(f"{path} {exc}") from None


def config_of(args: argparse.Namespace) -> SchedulerConfig:
    """The document of --config (pools, teams, preemption and aging rules), then the pools of
    --capacity on top (a pool given twice takes the later count); --backfill."""
    from smq_lambda.domain.config.config_document import QueueConfigDocument, with_pools
    from smq_lambda.errors import ConfigError

    document = read_config(args.config) if args.config is not None else QueueConfigDocument(pools={})
    if args.capacity:
        try:
            document = with_pools(document, dict(args.capacity), source=f"{args.config or 'the pools'} with --capacity")
        except ConfigError as exc:
            raise SimulationUsageError(str(exc)) from None
    if not document.pools:
        raise SimulationUsageError("no pools: give --config FILE.json or --capacity TYPE=N")
    return SchedulerConfig.of(document, backfill=args.backfill == "on")


def read_config(path: Path) -> QueueConfigDocument:
    """The configuration document the deployed queue reads from SSM, checked by the same rules."""
    from smq_lambda.domain.config.config_document import parse_config_document
    from smq_lambda.errors import ConfigError

    try:
        document = parse_config_document(json.loads(path.read_text()), source=str(path))
    except OSError as exc:
        raise SimulationUsageError(f"cannot read the configuration {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise SimulationUsageError(f"{path} is not JSON: {exc.msg} at line {exc.lineno}") from None
    except ConfigError as exc:
        raise SimulationUsageError(str(exc)) from None
    for warning in document.warnings:
        print(f"warning: {path}: {warning}", file=sys.stderr)
    return document


def share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a share from 0 to 1 (e.g. 0.7), got {text!r}")
    return value


def start_range(text: str) -> tuple[float, float]:
    low, _, high = text.partition(":")
    try:
        bounds = (float(low), float(high or low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MIN[:MAX] seconds (e.g. 120:300), got {text!r}") from None
    if not 0 <= bounds[0] <= bounds[1]:
        raise argparse.ArgumentTypeError(f"expected 0 <= MIN <= MAX, got {text!r}")
    return bounds
