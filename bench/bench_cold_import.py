"""Cold start of the Lambda handlers: import time in fresh interpreters, and the deployable package size.

Run: .venv/bin/python bench/bench_cold_import.py [--repeats 15] [--json FILE] [--no-package] [--rebuild]
(`make bench-cold-import` writes .bench/cold_import.json)

Part 1 starts a fresh interpreter per measurement and times, inside it, one `import` of a module:
bare `boto3` (the baseline every handler pays anyway) and each handler module
(`smq_lambda.handlers.scheduler`, `.api`, `.idle`, and the module of any other `Handler:` in
template.yaml), each in its own interpreter, interleaved round
robin so that drift in the machine's load spreads over all of them. One discarded round first fills
the bytecode and file caches. Each handler's cost is the median of its import time minus the median
of bare boto3 in the same environment, against the target of +150 ms.

Three environments. `local`: what the handlers need at import, which is nothing (their settings are
read on the first invocation), so no variable is set and the caller's SMQ_*, POWERTOOLS_* and Lambda
variables are removed; the powertools Tracer is then off, as it is on the local stack. `lambda`:
the variables the Lambda runtime and the template's Globals set that change what an import does
(LAMBDA_TASK_ROOT, AWS_LAMBDA_FUNCTION_NAME, AWS_REGION, POWERTOOLS_SERVICE_NAME,
POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_TRACE_DISABLED) under the template's default `Tracing:
Disabled`: the handlers never import the X-Ray SDK. `lambda-traced`: the same with `Tracing:
Active`, where the Tracer imports the X-Ray SDK and patches botocore, as in a traced deployment.

Part 2 builds the function package the way `sam build` does for the template's
`CodeUri: functions/`: `pip install --target` of functions/requirements.txt for the python3.12
x86_64 runtime (manylinux wheels, no .pyc), plus the functions/ source. Reported unzipped and
zipped (deflate, as SAM uploads it), once as built and once without the packages the Lambda python
runtime already provides (boto3 and its dependencies). The dependency build is cached under
.bench/cache/ keyed by requirements.txt, so reruns do not need the network; --no-package skips it.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path

from tabulate import tabulate

REPO = Path(__file__).resolve().parents[1]
FUNCTIONS = REPO / "functions"
REQUIREMENTS = FUNCTIONS / "requirements.txt"
CACHE = REPO / ".bench" / "cache" / "lambda-package"

BASELINE = "boto3"
HANDLERS = ("smq_lambda.handlers.scheduler", "smq_lambda.handlers.api", "smq_lambda.handlers.idle")
"""Always measured; any other module a function of template.yaml names as its Handler is added."""
TEMPLATE = REPO / "template.yaml"
TARGET_ADDED_MS = 150.0

LAMBDA_PLATFORM = ("manylinux2014_x86_64", "3.12")
"""template.yaml: Runtime python3.12, no Architectures (x86_64)."""
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six", "urllib3")
"""Distributions the Lambda python runtime ships (boto3 and what it depends on)."""
LAMBDA_ZIP_LIMIT_MB = 50.0
LAMBDA_UNZIPPED_LIMIT_MB = 250.0

_SCRUBBED_PREFIXES = ("SMQ_", "POWERTOOLS_", "AWS_LAMBDA_", "LAMBDA_", "_X_AMZN_", "AWS_XRAY_", "AWS_SAM_")
LAMBDA_RUNTIME = {
    "LAMBDA_TASK_ROOT": "/var/task",
    "AWS_LAMBDA_FUNCTION_NAME": "smq-bench",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "POWERTOOLS_SERVICE_NAME": "smq",
    "POWERTOOLS_METRICS_NAMESPACE": "smq",
}
ENVIRONMENTS = {
    "local": {},
    "lambda": {**LAMBDA_RUNTIME, "POWERTOOLS_TRACE_DISABLED": "true"},
    "lambda-traced": {**LAMBDA_RUNTIME, "POWERTOOLS_TRACE_DISABLED": "false"},
}
"""`lambda` is a deployed function under the template's default (`Tracing: Disabled`, which sets
POWERTOOLS_TRACE_DISABLED); `lambda-traced` is one deployed with `Tracing: Active`."""

_CHILD = """
import importlib, json, sys, time
started = time.perf_counter()
importlib.import_module(sys.argv[1])
elapsed = time.perf_counter() - started
modules = len(sys.modules)
started = time.perf_counter()
import boto3
then_boto3 = time.perf_counter() - started
print(json.dumps({"ms": elapsed * 1e3, "then_boto3_ms": then_boto3 * 1e3, "modules": modules}))
"""
"""Times the module's import, then `import boto3` (nothing when the module already imported it): a
handler that defers boto3 to its first invocation still pays it in the cold start, so the figure
held against the target is the sum."""


# ---------------------------------------------------------------------------------------- imports


def child_environment(extra: dict[str, str]) -> dict[str, str]:
    """The caller's environment without Lambda or smq settings, plus `extra`; this checkout's
    functions/ first on the path, so the code measured is the code beside this script."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(_SCRUBBED_PREFIXES)}
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FUNCTIONS), os.environ.get("PYTHONPATH")]))
    return env


def import_once(module: str, env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, module], env=env, cwd=REPO, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"importing {module} failed:\n{done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def p90(values: list[float]) -> float:
    """Nearest-rank 90th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def handler_modules() -> list[str]:
    """HANDLERS, plus the module of every `Handler:` in template.yaml (a function added later)."""
    found = list(HANDLERS)
    text = TEMPLATE.read_text() if TEMPLATE.exists() else ""
    for match in re.finditer(r"^\s*Handler:\s*['\"]?([\w.]+)\.\w+['\"]?\s*$", text, re.MULTILINE):
        if match.group(1) not in found:
            found.append(match.group(1))
    return found


def measure_imports(repeats: int, environments: list[str]) -> dict[str, dict[str, dict[str, object]]]:
    modules = (BASELINE, *handler_modules())
    results: dict[str, dict[str, dict[str, object]]] = {}
    for name in environments:
        env = child_environment(ENVIRONMENTS[name])
        for module in modules:  # warm-up round: bytecode and file caches
            import_once(module, env)
        samples: dict[str, list[float]] = {module: [] for module in modules}
        with_boto3: dict[str, list[float]] = {module: [] for module in modules}
        loaded: dict[str, int] = {}
        started = time.perf_counter()
        for _ in range(repeats):
            for module in modules:
                sample = import_once(module, env)
                samples[module].append(sample["ms"])
                with_boto3[module].append(sample["ms"] + sample["then_boto3_ms"])
                loaded[module] = int(sample["modules"])
        print(f"environment {name}: {repeats} x {len(modules)} interpreters in {time.perf_counter() - started:.0f} s")
        base = statistics.median(samples[BASELINE])
        results[name] = {
            module: {
                "samples_ms": [round(value, 2) for value in values],
                "median_ms": statistics.median(values),
                "p90_ms": p90(values),
                "with_boto3_samples_ms": [round(value, 2) for value in with_boto3[module]],
                "with_boto3_median_ms": statistics.median(with_boto3[module]),
                "with_boto3_p90_ms": p90(with_boto3[module]),
                "modules_loaded": loaded[module],
                "added_ms": None if module == BASELINE else statistics.median(with_boto3[module]) - base,
            }
            for module, values in samples.items()
        }
    return results


def import_table(results: dict[str, dict[str, dict[str, object]]]) -> str:
    rows = []
    for env_name, by_module in results.items():
        for module, figures in by_module.items():
            added = figures["added_ms"]
            verdict = "baseline"
            if added is not None:
                verdict = "met" if added <= TARGET_ADDED_MS else "MISSED"
            rows.append(
                [
                    env_name,
                    module,
                    f"{figures['median_ms']:.0f}",
                    f"{figures['p90_ms']:.0f}",
                    f"{figures['with_boto3_median_ms']:.0f}",
                    f"{figures['with_boto3_p90_ms']:.0f}",
                    figures["modules_loaded"],
                    "-" if added is None else f"{added:+.0f}",
                    "-" if added is None else f"+{TARGET_ADDED_MS:.0f}",
                    verdict,
                ]
            )
    headers = [
        "env", "import", "median ms", "p90 ms", "+ boto3 median ms", "+ boto3 p90 ms", "modules loaded",
        "added over boto3 ms", "target", "verdict",
    ]  # fmt: skip
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


# ---------------------------------------------------------------------------------------- package


def _cache_key() -> str:
    digest = hashlib.sha256(REQUIREMENTS.read_bytes())
    digest.update(repr(LAMBDA_PLATFORM).encode())
    return digest.hexdigest()[:16]


def build_dependencies(rebuild: bool) -> tuple[Path, bool]:
    """functions/requirements.txt installed for the Lambda runtime, cached; (directory, was cached)."""
    target = CACHE / _cache_key()
    if target.is_dir() and (target / ".complete").exists() and not rebuild:
        return target, True
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    platform, python = LAMBDA_PLATFORM
    command = [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
        "--target", str(target), "--platform", platform, "--implementation", "cp", "--python-version", python,
        "--only-binary=:all:", "-r", str(REQUIREMENTS),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        raise RuntimeError(f"pip could not build the package (network?):\n{done.stderr.strip()[-2000:]}")
    (target / ".complete").touch()
    return target, False


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def distribution_files(directory: Path) -> dict[str, set[Path]]:
    """Each installed distribution's files (from its RECORD), by canonical distribution name."""
    owners: dict[str, set[Path]] = {}
    root = directory.resolve()
    for info in directory.glob("*.dist-info"):
        name = _canonical(info.name[: -len(".dist-info")].rsplit("-", 1)[0])
        files = owners.setdefault(name, set())
        record = info / "RECORD"
        for line in record.read_text().splitlines() if record.exists() else ():
            relative = line.split(",", 1)[0]
            path = (directory / relative).resolve()
            if path.is_file() and path.is_relative_to(root):
                files.add(path)
        files.update(path.resolve() for path in info.rglob("*") if path.is_file())
    return owners


def package_files(dependencies: Path) -> dict[str, list[tuple[Path, str]]]:
    """(file, name in the zip) per part of the package: each distribution, `smq source`, `other`."""
    owners = distribution_files(dependencies)
    owned = {path for files in owners.values() for path in files}
    parts: dict[str, list[tuple[Path, str]]] = {
        name: [(path, str(path.relative_to(dependencies.resolve()))) for path in sorted(files)]
        for name, files in owners.items()
    }
    other = [
        path.resolve()
        for path in dependencies.rglob("*")
        if path.is_file() and path.resolve() not in owned and path.name != ".complete"
    ]
    parts["other (not in any RECORD)"] = [(path, str(path.relative_to(dependencies.resolve()))) for path in other]
    source = [
        path
        for path in sorted(FUNCTIONS.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    ]
    parts["smq source (functions/)"] = [(path, str(path.relative_to(FUNCTIONS))) for path in source]
    return parts


def zipped_bytes(files: list[tuple[Path, str]]) -> int:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, name in files:
            archive.write(path, name)
    return buffer.tell()


def measure_package(rebuild: bool) -> dict[str, object]:
    started = time.perf_counter()
    dependencies, cached = build_dependencies(rebuild)
    parts = package_files(dependencies)
    sizes = {name: sum(path.stat().st_size for path, _ in files) for name, files in parts.items()}
    everything = [item for files in parts.values() for item in files]
    without = [item for name, files in parts.items() if name not in RUNTIME_PROVIDED for item in files]
    provided = sorted(name for name in parts if name in RUNTIME_PROVIDED)
    return {
        "requirements": str(REQUIREMENTS.relative_to(REPO)),
        "platform": {"platform": LAMBDA_PLATFORM[0], "python_version": LAMBDA_PLATFORM[1]},
        "build_cached": cached,
        "build_dir": str(dependencies),
        "runtime_provided_excluded": provided,
        "as_built": {
            "unzipped_mb": sum(sizes.values()) / 1e6,
            "zipped_mb": zipped_bytes(everything) / 1e6,
            "files": len(everything),
        },
        "without_runtime_provided": {
            "unzipped_mb": sum(size for name, size in sizes.items() if name not in RUNTIME_PROVIDED) / 1e6,
            "zipped_mb": zipped_bytes(without) / 1e6,
            "files": len(without),
        },
        "unzipped_mb_by_part": {name: size / 1e6 for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])},
        "seconds": time.perf_counter() - started,
    }


def package_tables(figures: dict[str, object]) -> str:
    provided = ", ".join(figures["runtime_provided_excluded"]) or "none"
    rows = [
        ["as sam build packages it (requirements.txt as is)", *_size_row(figures["as_built"])],
        [f"without what the runtime provides ({provided})", *_size_row(figures["without_runtime_provided"])],
    ]
    sizes = tabulate(
        rows, headers=["package", "unzipped MB", "zipped MB", "files"], tablefmt="github", disable_numparse=True
    )
    parts = [
        [name, f"{size:.2f}", "yes" if name in RUNTIME_PROVIDED else ""]
        for name, size in figures["unzipped_mb_by_part"].items()
    ]
    by_part = tabulate(
        parts, headers=["part", "unzipped MB", "runtime provides it"], tablefmt="github", disable_numparse=True
    )
    return f"{sizes}\n\n{by_part}"


def _size_row(size: dict[str, float]) -> list[str]:
    return [f"{size['unzipped_mb']:.1f}", f"{size['zipped_mb']:.1f}", str(size["files"])]


# ---------------------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="fresh interpreters per module and environment")
    parser.add_argument("--env", choices=sorted(ENVIRONMENTS), action="append", help="default: all three")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--no-package", action="store_true", help="skip the package build and its size")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached package dependencies")
    args = parser.parse_args()
    environments = args.env or ["local", "lambda", "lambda-traced"]

    load = os.getloadavg()[0]
    print(
        f"## Cold import: {args.repeats} fresh interpreters per module per environment "
        f"({sys.executable}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.2f})\n"
    )
    imports = measure_imports(args.repeats, environments)
    print()
    print(import_table(imports))
    print(
        "\n+ boto3 = the module's import and then `import boto3` in the same interpreter (no time when the module "
        "imported it already; a handler that defers boto3 pays it at its first invocation);\n"
        "added over boto3 = median(+ boto3) - median(bare `import boto3`) in the same environment; "
        f"target +{TARGET_ADDED_MS:.0f} ms per handler; modules loaded counts sys.modules after the module's import"
    )

    package: dict[str, object] | None = None
    package_error: str | None = None
    if not args.no_package:
        print(f"\n## Function package (CodeUri functions/, {REQUIREMENTS.relative_to(REPO)}, python3.12 x86_64)\n")
        try:
            package = measure_package(args.rebuild)
        except RuntimeError as exc:
            package_error = str(exc)
            print(f"package not measured: {exc}")
        else:
            state = "cached" if package["build_cached"] else "built"
            print(f"dependencies {state} in {package['build_dir']}\n")
            print(package_tables(package))
            print(
                f"\nLambda limits: {LAMBDA_ZIP_LIMIT_MB:.0f} MB zipped (direct upload), "
                f"{LAMBDA_UNZIPPED_LIMIT_MB:.0f} MB unzipped. The runtime provides boto3 and its dependencies; "
                f"functions/requirements.txt ships its own boto3 anyway (see its comment), so the first row "
                f"is what is deployed today."
            )

    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "benchmark": "cold_import",
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "load_average_at_start": load,
            "repeats": args.repeats,
            "target_added_ms": TARGET_ADDED_MS,
            "environments": {name: ENVIRONMENTS[name] for name in environments},
            "imports": imports,
            "package": package,
            "package_error": package_error,
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
