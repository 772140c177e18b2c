"""Every relative link and ``#anchor`` in README.md, ARCHITECTURE.md and
docs/*.md resolves: the target file or folder exists, and an anchor names a
heading of the target Markdown file as GitHub spells heading ids.

Links inside code (fenced blocks, inline code) are not links and are skipped;
links with a scheme (``https:``, ``mailto:``) are not checked here.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([ROOT / "README.md", ROOT / "ARCHITECTURE.md", *(ROOT / "docs").glob("*.md")])

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    fenced = False
    kept: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            kept.append((number, line))
    return kept


def slug(heading: str) -> str:
    """GitHub's id for a heading: the rendered text (link text, code without
    backticks, no emphasis marks), lower case, punctuation dropped, each
    space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = CODE_SPAN.sub(lambda match: match.group(2), text)
    text = re.sub(r"(\*\*|__|\*)", "", text)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The heading ids of ``path``, repeated titles numbered as GitHub does."""
    seen: dict[str, int] = {}
    ids: set[str] = set()
    for _, line in prose_lines(path.read_text()):
        heading = HEADING.match(line)
        if heading is None:
            continue
        base = slug(heading.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        ids.add(base if count == 0 else f"{base}-{count}")
    return ids


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link in ``path``'s prose."""
    found: list[tuple[int, str]] = []
    for number, line in prose_lines(path.read_text()):
        reference = REFERENCE.match(line)
        if reference is not None:
            found.append((number, reference.group(1)))
            continue
        without_code = CODE_SPAN.sub("code", line)
        found.extend((number, match.group(1)) for match in INLINE_LINK.finditer(without_code))
    return found


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """Each link of ``path`` that does not resolve, with the reason (``path``
    named relative to ``root``)."""
    problems: list[str] = []
    for number, target in links(path):
        if SCHEME.match(target):
            continue
        where = f"{path.relative_to(root).as_posix()}:{number}: {target}"
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not resolved.exists():
            problems.append(f"{where}: no such file or folder")
            continue
        if not anchor:
            continue
        if resolved.suffix != ".md" or not resolved.is_file():
            problems.append(f"{where}: an anchor into a file that is not Markdown")
        elif unquote(anchor) not in anchors(resolved):
            problems.append(f"{where}: no heading with the id {anchor!r}")
    return problems


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(path: Path) -> None:
    assert links(path) or path.name != "README.md"  # the README links somewhere
    assert broken_links(path) == []


def test_the_readme_links_every_document_in_docs() -> None:
    linked = {target.partition("#")[0] for _, target in links(ROOT / "README.md")}
    in_docs = [f"docs/{doc.name}" for doc in DOCUMENTS if doc.parent.name == "docs"]
    assert in_docs  # the folder is there
    assert [name for name in in_docs if name not in linked] == []


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        pytest.param("Run the tests", "run-the-tests", id="words become hyphenated"),
        pytest.param(
            "Simulate without a cluster: `pyscheduler simulate`",
            "simulate-without-a-cluster-pyscheduler-simulate",
            id="code loses its backticks and colons go",
        ),
        pytest.param(
            "Simulate's throughput: the framework's own ceiling",
            "simulates-throughput-the-frameworks-own-ceiling",
            id="apostrophes go",
        ),
        pytest.param(
            "SchedulingBasic, backlog ([details](x.md), [plot](x.png))",
            "schedulingbasic-backlog-details-plot",
            id="links keep their text",
        ),
        pytest.param(
            "DynamicResources (DRA): state and invariants",
            "dynamicresources-dra-state-and-invariants",
            id="brackets go",
        ),
        pytest.param(
            "scheduler_perf and **bold**",
            "scheduler_perf-and-bold",
            id="underscores stay, emphasis goes",
        ),
    ],
)
def test_heading_ids_are_spelled_as_github_does(heading: str, expected: str) -> None:
    assert slug(heading) == expected


def test_a_broken_link_or_anchor_is_reported(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (tmp_path / "README.md").write_text("# Top\n\n## Run it\n")
    page = docs / "page.md"
    page.write_text(
        "# Page\n\n## Twice\n\n## Twice\n\n"
        "[ok](../README.md#run-it) [ok](#twice-1) [ok](../README.md) [web](https://x.y/z)\n"
        "`[code](missing.md)`\n```\n[fenced](missing.md)\n```\n"
        "[gone](missing.md) [bad anchor](../README.md#run) [self](#nowhere)\n"
        "[ref]: other.md\n"
    )
    assert broken_links(page, tmp_path) == [
        "docs/page.md:12: missing.md: no such file or folder",
        "docs/page.md:12: ../README.md#run: no heading with the id 'run'",
        "docs/page.md:12: #nowhere: no heading with the id 'nowhere'",
        "docs/page.md:13: other.md: no such file or folder",
    ]
