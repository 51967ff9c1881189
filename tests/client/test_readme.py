"""The client's documentation shows what the tests run: its Python blocks (the README's quick start,
docs/client.md's Python API) are the example files the end-to-end tests execute, and the README's
`smq` session runs, command by command, against the real API."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest
from smq.cli import main as cli

from tests.client.queue_world import POOL, QueueWorld

REPOSITORY = Path(__file__).resolve().parents[2]
README = REPOSITORY / "README.md"
CLIENT_DOCS = REPOSITORY / "docs" / "client.md"
EXAMPLES = REPOSITORY / "examples" / "client"


def blocks(language: str, document: Path = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", document.read_text(), flags=re.DOTALL)


def without_docstring(path: Path) -> str:
    source = path.read_text()
    docstring = ast.get_docstring(ast.parse(source), clean=False)
    assert docstring is not None, f"{path} explains itself in a docstring"
    return source.split('"""', 2)[2].lstrip("\n")


@pytest.mark.parametrize(("example", "document"), [("train_with_queue.py", README), ("queue_api.py", CLIENT_DOCS)])
def test_each_python_example_is_shown_verbatim(example: str, document: Path) -> None:
    assert without_docstring(EXAMPLES / example) in blocks("python", document)


def session_steps() -> list[tuple[list[str], list[str]]]:
    """(`smq` arguments, the output the README shows) for each `$ smq` line of the ops session."""
    (session,) = [block for block in blocks("console") if "$ smq status" in block]
    steps: list[tuple[list[str], list[str]]] = []
    for line in session.splitlines():
        if line.startswith("$ "):
            steps.append((shlex.split(line[2:], comments=True), []))
        elif steps:
            steps[-1][1].append(line)
    return [(argv[1:], shown) for argv, shown in steps if argv[:2] != ["smq", "local"]]


def test_the_ops_session_runs_against_the_api(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPOSITORY)
    steps = session_steps()
    assert len(steps) >= 8

    with QueueWorld({POOL: 2}) as world:
        monkeypatch.setenv("SMQ_API_URL", world.url)
        for argv, shown in steps:
            code = cli.main(argv)
            out, err = capsys.readouterr()
            assert (code, err) == (0, ""), argv
            printed = out.splitlines()
            assert printed and shown, argv
            if shown[0].startswith(("Job Name", "Pool", "#")):
                assert printed[0].split() == shown[0].split(), argv
            assert printed[0].split()[0] == shown[0].split()[0], argv
