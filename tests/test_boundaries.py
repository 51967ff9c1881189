"""Package boundaries: Lambda code never imports the SageMaker SDK (nor the client package, nor a
test helper), so it stays small and starts fast; the pure layers import no edge; layers point one
way; no modules import each other; and no module grows past a size one reader can hold."""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
FUNCTIONS = REPOSITORY / "functions" / "smq_lambda"
FORBIDDEN = ("sagemaker", "smq", "tests", "torch", "moto")


def imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


@pytest.mark.parametrize("path", sorted(FUNCTIONS.rglob("*.py")), ids=lambda path: str(path.relative_to(FUNCTIONS)))
def test_lambda_code_imports_no_sdk_client_or_test_code(path: Path) -> None:
    roots = {module.split(".")[0] for module in imported_modules(path)}
    assert not roots & set(FORBIDDEN), f"{path} imports {sorted(roots & set(FORBIDDEN))}"


PURE_LAYERS = ("domain", "governance", "scheduling", "replay")
"""The pure decisions: they import neither the ports (the edges) nor what sits on them. (botocore's
service model is a library they may read: domain/request_shape validates requests with it.)"""
EDGES = ("smq_lambda.ports", "smq_lambda.adapters", "smq_lambda.service", "smq_lambda.handlers", "boto3")


@pytest.mark.parametrize(
    "path",
    sorted(path for layer in PURE_LAYERS for path in (FUNCTIONS / layer).rglob("*.py")),
    ids=lambda path: str(path.relative_to(FUNCTIONS)),
)
def test_the_pure_layers_import_no_edge(path: Path) -> None:
    edges = {module for module in imported_modules(path) if module.startswith(EDGES)}
    assert not edges, f"{path} imports {sorted(edges)}"


SOURCES = {"smq_lambda": FUNCTIONS, "smq": REPOSITORY / "client" / "smq"}


def module_paths() -> dict[str, Path]:
    """Every module of smq_lambda and smq by its dotted name (a package by its __init__.py)."""
    paths = {}
    for package, root in SOURCES.items():
        for path in root.rglob("*.py"):
            parts = (package, *path.relative_to(root).with_suffix("").parts)
            paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return paths


@functools.cache
def sources_import_graph() -> dict[str, set[str]]:
    """The import graph of smq_lambda and smq, parsed once for all the tests that read it."""
    return import_graph(module_paths())


def import_graph(paths: dict[str, Path]) -> dict[str, set[str]]:
    """Which of `paths` each module imports: `from a import b` is module a.b when there is one, else a."""
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                targets.update(
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base for alias in node.names
                )
        graph[name] = {target for target in targets if target in paths and target != name}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        for target in graph[stack.pop()] - seen:
            seen.add(target)
            stack.append(target)
    return seen


def test_no_import_cycles() -> None:
    """No two modules of smq_lambda or smq import each other, directly or through others.

    Every import statement counts: at module level, inside a function, and under
    `if TYPE_CHECKING:`. A lazy or type-only import only hides a cycle from the interpreter; the
    two modules still need each other, so neither can be read, tested or moved alone. (Running a
    submodule's package __init__ is not counted as an import of it.)
    """
    graph = sources_import_graph()
    reach = {name: reachable(graph, name) for name in graph}
    cycles = {frozenset({name} | {other for other in reach[name] if name in reach[other]}) for name in graph}
    assert [sorted(cycle) for cycle in cycles if len(cycle) > 1] == []


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def imports_from(importers: str, imported: str) -> dict[str, list[str]]:
    """Each module within `importers` that imports modules within `imported`, with those modules."""
    graph = sources_import_graph()
    found = {
        name: sorted(target for target in targets if within(target, imported))
        for name, targets in graph.items()
        if within(name, importers)
    }
    return {name: targets for name, targets in found.items() if targets}


def test_the_domain_imports_only_the_domain_and_errors() -> None:
    """The job model and its rules sit at the bottom: what orchestrates them (governance, the pass,
    the services) sits above and imports them, never the other way round."""
    upward = {
        name: [
            target for target in targets if not within(target, "smq_lambda.domain") and target != "smq_lambda.errors"
        ]
        for name, targets in imports_from("smq_lambda.domain", "smq_lambda").items()
    }
    assert {name: targets for name, targets in upward.items() if targets} == {}


DOMAIN_CONCEPTS = ("jobs", "sagemaker", "placements", "warm", "costs", "access", "config")
"""domain/ by concept: each module in the package of what it is about."""


def test_every_domain_module_lives_in_its_concepts_package() -> None:
    loose = sorted(path.name for path in (FUNCTIONS / "domain").glob("*.py") if path.name != "__init__.py")
    packages = sorted(
        path.name for path in (FUNCTIONS / "domain").iterdir() if path.is_dir() and path.name != "__pycache__"
    )
    assert (loose, packages) == ([], sorted(DOMAIN_CONCEPTS))


def test_sagemakers_own_rules_import_no_concept_of_the_queue() -> None:
    """domain/sagemaker states what SageMaker accepts and reports; the local SageMaker service
    applies it too, so it knows nothing of jobs, placements, costs or teams."""
    outside = {
        name: [target for target in targets if not within(target, "smq_lambda.domain.sagemaker")]
        for name, targets in imports_from("smq_lambda.domain.sagemaker", "smq_lambda.domain").items()
    }
    assert {name: targets for name, targets in outside.items() if targets} == {}


@pytest.mark.parametrize(
    ("importers", "imported"),
    [
        # The simulator (`smq simulate`) is a tool on top: the live start estimates (forecast/) and
        # the service replay the queue through replay/, which lies below both.
        ("smq_lambda.adapters", "smq_lambda.simulation"),
        ("smq_lambda.service", "smq_lambda.simulation"),
        ("smq_lambda.handlers", "smq_lambda.simulation"),
        ("smq_lambda.forecast", "smq_lambda.simulation"),
        ("smq_lambda.replay", "smq_lambda.simulation"),
        ("smq_lambda.replay", "smq_lambda.forecast"),
        ("smq_lambda.scheduling", "smq_lambda.replay"),
        # The API's JSON shapes belong to the API handler.
        ("smq_lambda.service", "smq_lambda.handlers"),
        ("smq_lambda.adapters", "smq_lambda.handlers"),
        # `smq`'s command line is the top floor: `smq local` and `smq simulate` share what sits below it.
        ("smq.local", "smq.cli"),
        ("smq.simulate", "smq.cli"),
    ],
)
def test_layers_point_one_way(importers: str, imported: str) -> None:
    assert imports_from(importers, imported) == {}


PASS_QUESTIONS = ("smq_lambda.scheduling.gates", "smq_lambda.scheduling.verdicts")
"""What the pass asks of a job before deciding (may it run at all; what could be done for it now)."""
PASS_PHASES = (
    "smq_lambda.scheduling.decide",
    "smq_lambda.scheduling.admission",
    "smq_lambda.scheduling.placement",
    "smq_lambda.scheduling.borrowing",
    "smq_lambda.scheduling.backfill",
    "smq_lambda.scheduling.warm_pools",
)


@pytest.mark.parametrize("question", PASS_QUESTIONS)
def test_the_passs_questions_never_reach_the_phases_that_act_on_the_answers(question: str) -> None:
    """Gates and verdicts answer without deciding: the phases import them, never the other way
    round, so an answer cannot depend on what a phase happens to have done."""
    assert reachable(sources_import_graph(), question) & set(PASS_PHASES) == set()


FEATURES = (
    "smq_lambda.scheduling.plan_stops",
    "smq_lambda.scheduling.aging",
    "smq_lambda.scheduling.purchase_options",
    "smq_lambda.scheduling.budget_hold",
    "smq_lambda.scheduling.warm_pools",
)
"""The modules of the features plugged into the pass (scheduling/features.py, `decide.FEATURES`)."""
ABOVE_THE_FEATURES = ("smq_lambda.scheduling.decide", "smq_lambda.scheduling.invariants")
"""The registry, which plugs the features in, and the invariant checker, which checks what each
promises (a budget kept, a spot job's placements as offered)."""


@pytest.mark.parametrize("feature", FEATURES)
def test_features_never_import_each_other(feature: str) -> None:
    assert sources_import_graph()[feature] & set(FEATURES) == set()


def test_the_core_of_the_pass_never_imports_a_feature() -> None:
    """Only the registry names the features: the ledger, the gates, the verdicts and the phases
    reach none of them, so a feature is one module and one line in the registry."""
    graph = sources_import_graph()
    core = {
        name
        for name in graph
        if within(name, "smq_lambda.scheduling") and name not in FEATURES and name not in ABOVE_THE_FEATURES
    }
    reaching = {name: sorted(reachable(graph, name) & set(FEATURES)) for name in sorted(core)}
    assert {name: features for name, features in reaching.items() if features} == {}


def test_only_the_command_line_imports_it() -> None:
    outside = {name: targets for name, targets in imports_from("smq", "smq.cli").items() if not within(name, "smq.cli")}
    assert outside == {}


def test_only_the_handlers_import_the_api_views() -> None:
    outside = {
        name: targets
        for name, targets in imports_from("smq_lambda", "smq_lambda.handlers.views").items()
        if not within(name, "smq_lambda.handlers")
    }
    assert outside == {}


MAX_LINES = 400
"""Past this a module usually holds several jobs; split it by concern (see STYLE.md)."""


@pytest.mark.parametrize(
    "path",
    sorted(path for root in ("functions", "client") for path in (REPOSITORY / root).rglob("*.py")),
    ids=lambda path: path.relative_to(REPOSITORY).as_posix(),
)
def test_no_module_is_over_max_lines(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(REPOSITORY)} has {lines} lines"
