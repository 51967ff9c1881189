"""Every relative link of the documentation resolves: the file it names exists, and its anchor is a
heading of that file, slugged as GitHub slugs headings. The README's documentation list names
every page under docs/."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted(
    [REPOSITORY / "README.md", REPOSITORY / "CONTRIBUTING.md", REPOSITORY / "trainer" / "README.md"]
    + list((REPOSITORY / "docs").glob("*.md"))
)
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+).*?\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, line) for the lines outside fenced code blocks."""
    lines: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: link text only, lower case, punctuation dropped, spaces to
    hyphens (so "Data scientists: change `fit()` — now" is "data-scientists-change-fit--now")."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings; a repeated slug gets -1, -2, ... as on GitHub."""
    seen: Counter[str] = Counter()
    found: set[str] = set()
    for _, line in prose_lines(path):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            found.add(f"{base}-{seen[base]}" if seen[base] else base)
            seen[base] += 1
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link and image outside code."""
    return [
        (number, target) for number, line in prose_lines(path) for target in LINK.findall(INLINE_CODE.sub("", line))
    ]


def test_the_slugs_are_githubs() -> None:
    assert slug("Data scientists: change one argument") == "data-scientists-change-one-argument"
    assert slug("The Python API: `TrainingQueue`") == "the-python-api-trainingqueue"
    assert slug("`GET /jobs/{name}`") == "get-jobsname"
    assert slug("When will my job start?") == "when-will-my-job-start"
    assert slug("Operations: alarms and the dashboard") == "operations-alarms-and-the-dashboard"
    assert (
        slug("Data scientists on SDK v3: queue a `ModelTrainer` — change `model_trainer.train(...)`")
        == "data-scientists-on-sdk-v3-queue-a-modeltrainer--change-model_trainertrain"
    )


def test_the_links_are_found() -> None:
    assert len(DOCUMENTS) >= 8
    targets = [target for _, target in links(REPOSITORY / "README.md")]
    assert "docs/scheduling.md#teams-and-quotas" in targets
    assert "#teams-and-quotas" in targets
    in_code = [target for _, target in links(REPOSITORY / "docs" / "api.md") if "-*" in target]
    assert not in_code, "the pattern ^[a-zA-Z0-9](-*[a-zA-Z0-9]) in a code block is not a link"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPOSITORY)))
def test_every_relative_link_resolves(document: Path) -> None:
    broken: list[str] = []
    for number, target in links(document):
        if EXTERNAL.match(target):
            continue
        where, _, anchor = target.partition("#")
        linked = (document.parent / unquote(where)).resolve() if where else document
        place = f"{document.relative_to(REPOSITORY)}:{number}: {target}"
        if not linked.is_relative_to(REPOSITORY) or not linked.exists():
            broken.append(f"{place} (no such file)")
        elif anchor and (linked.suffix != ".md" or unquote(anchor) not in anchors(linked)):
            broken.append(f"{place} (no heading {anchor!r} in {linked.relative_to(REPOSITORY)})")
    assert not broken, "\n".join(broken)


def test_the_readme_lists_every_page_of_docs() -> None:
    listed = {target.partition("#")[0] for _, target in links(REPOSITORY / "README.md")}
    pages = {f"docs/{page.name}" for page in (REPOSITORY / "docs").glob("*.md")}
    assert pages <= listed, pages - listed
