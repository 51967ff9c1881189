"""Write the baseline that tests/simulate/test_baseline.py replays: `metrics.json` of
`smq simulate` for each generated workload (`mixed`, `kueue`, `spot`, `teams`), seed (7, 11) and
backfill setting (on, off), one file per case in this folder, 16 in all.

    .venv/bin/python -m tests.simulate.baseline.regenerate

Each case runs the command line's own code: `smq simulate generate KIND --seed N --out DIR`
through `smq.cli.main.main`, then `smq simulate DIR/trace.jsonl --config DIR/config.json
--backfill on|off --seed N` parsed by the real parser and run by `smq.simulate.cli.simulate_args`
(what `smq simulate` prints and writes), the smq policy only; the file is the text
`metrics.json` gets (`smq.simulate.report.metrics_json`), floats as written. `metrics.json` holds
only summary figures (per pool, priority and team; `unfinished` lists job names and is empty
here), about 1 to 2 KB a case.

Sizes are the generators' defaults (`mixed` 300 jobs, `spot` 120, `teams` 120), except `kueue`:
one pool of 20 instances (`--pools 1`, 500 jobs) instead of three, which alone would take over
20 s of the test on a 2-core machine. `kueue` runs with `--start-s 0`, as its generator says; so
its trace and its run ignore the seed, and its two seeds give the same metrics. `teams` runs with
the quotas of its generated config.json.

When to regenerate: the baseline is the proof that a change to the scheduling pass (or to the
simulation) changed nothing. Never regenerate to make a failing test pass in the same commit as
the change that made it fail. Regenerate only when a difference is meant (a bug fixed, a rule
changed on purpose, a metric added), in a commit of its own whose message gives the reason for each
difference; `git diff tests/simulate/baseline/` shows them.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from dataclasses import dataclass
from pathlib import Path

from smq.cli.main import build_parser, main
from smq.simulate.cli import simulate_args
from smq.simulate.report import metrics_json

HERE = Path(__file__).parent
WORKLOADS = ("mixed", "kueue", "spot", "teams")
SEEDS = (7, 11)
GENERATE_OPTIONS = {"kueue": ("--pools", "1")}
SIMULATE_OPTIONS = {"kueue": ("--start-s", "0")}


@dataclass(frozen=True)
class Case:
    workload: str
    seed: int
    backfill: bool

    @property
    def name(self) -> str:
        return f"{self.workload}-seed{self.seed}-backfill-{'on' if self.backfill else 'off'}"

    @property
    def path(self) -> Path:
        return HERE / f"{self.name}.json"


CASES = tuple(Case(workload, seed, backfill) for workload in WORKLOADS for seed in SEEDS for backfill in (True, False))


def metrics_text(case: Case, directory: Path) -> str:
    """The metrics.json `smq simulate` writes for `case`, with its generated trace in `directory`."""
    generate = ["simulate", "generate", case.workload, "--seed", str(case.seed), "--out", str(directory)]
    with contextlib.redirect_stdout(io.StringIO()):
        code = main([*generate, *GENERATE_OPTIONS.get(case.workload, ())])
    if code != 0:
        raise RuntimeError(f"smq {' '.join(generate)} exited {code}")
    args = build_parser().parse_args(
        [
            "simulate",
            str(directory / "trace.jsonl"),
            "--config",
            str(directory / "config.json"),
            "--backfill",
            "on" if case.backfill else "off",
            "--seed",
            str(case.seed),
            *SIMULATE_OPTIONS.get(case.workload, ()),
        ]
    )
    _, results = simulate_args(args)
    return metrics_json(results["smq"].metrics)


def regenerate() -> None:
    for case in CASES:
        with tempfile.TemporaryDirectory() as directory:
            text = metrics_text(case, Path(directory))
        case.path.write_text(text)
        print(f"wrote {case.path.relative_to(Path.cwd())} ({len(text.encode())} bytes)")


if __name__ == "__main__":
    regenerate()
