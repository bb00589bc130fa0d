"""The README's and the docs' examples cannot rot: every `bash` or `python` block is either run
here, for real, with the installed `sparring` command, or marked right before it with
`<!-- not-run: reason -->` (a cluster, a server, a model, minutes of training), or is an
`<!-- example: ... -->` that another test runs (the riddles game: tests/unit/test_readme_game.py).
A block that is none of these fails, and so does a `sparring` command that no expectation below
covers: each run command must exit 0 and print what the docs say it prints."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLE_LANGUAGES = {"bash", "sh", "shell", "console", "python"}
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.*?)\s*-->")
EXAMPLE = re.compile(r"<!--\s*example:.*?\((tests/\S+\.py) runs it\)\s*-->")
BIN = Path(sys.executable).parent


@dataclass
class Block:
    page: Path
    line: int
    language: str
    code: str
    marker: str  # the HTML comment on the last non-blank line before the fence, or ""

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def commands(self) -> list[str]:
        """The `sparring` commands of the block, continuation lines joined, comments dropped."""
        joined = re.sub(r"\\\n\s*", " ", self.code)
        out = []
        for line in joined.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("sparring "):
                out.append(line)
        return out


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in FENCE.finditer(text):
            language = match.group(1).lower()
            if language not in EXAMPLE_LANGUAGES:
                continue  # diagrams, sample output, LEARN lines: not examples
            before = [line for line in text[: match.start()].splitlines() if line.strip()]
            marker = before[-1].strip() if before and before[-1].strip().startswith("<!--") else ""
            line = text.count("\n", 0, match.start()) + 1
            found.append(Block(page, line, language, match.group(2), marker))
    return found


ALL = blocks()
RUN = [b for b in ALL if not b.marker]


def _sets(command: str) -> list[tuple[str, str]]:
    words = shlex.split(command)
    return [tuple(words[i + 1].split("=", 1)) for i, w in enumerate(words[:-1]) if w == "--set"]


def _output_file(command: str) -> str | None:
    words = shlex.split(command)
    for flag in ("--output", "-o"):
        if flag in words:
            return words[words.index(flag) + 1]
    return None


def _families_out(command: str) -> str:
    words = shlex.split(command)
    return words[words.index("--out") + 1]


def _expect(command: str, out: str, cwd: Path) -> None:
    """What each documented command must print (a command nobody described fails)."""
    words = shlex.split(command)
    sub = " ".join(w for w in words[1:3] if not w.startswith("-"))
    if sub == "config validate":
        assert ": valid (" in out
    elif sub == "config show":
        for key, value in _sets(command):
            assert f"{key.split('.')[-1]}: {value}" in out, (key, value)
    elif sub == "config reference":
        assert "grpo.beta" in out
    elif sub == "problems list":
        assert '"reference_solution"' in out if "--json" in words else out.strip()
    elif sub == "problems families":
        assert out.startswith("wrote ") and (cwd / _families_out(command)).stat().st_size > 0
    elif sub == "problems check":
        assert '"discriminating_tests"' in out if "--json" in words else "discriminate" in out
    elif sub == "reward":
        rows = [json.loads(line) for line in out.splitlines() if line.startswith('{"line"')]
        assert rows and all("reward" in row for row in rows)
        assert any(row["trivial"] and row["reward"] == 0.0 for row in rows)  # `return 0` earns 0
    elif sub == "sandbox exec":
        assert '"infra_error": null' in out and '"outcome": "passed"' in out
    elif sub == "sandbox validate":
        assert '"validity": 1.0' in out
    elif sub == "eval humaneval":
        assert '"pass@1"' in out
    elif words[1] == "compile":
        assert "compiled" in out
        target = _output_file(command)
        assert target and (cwd / target).stat().st_size > 0, target
    elif sub == "game list":
        assert "debate" in out and "roles:" in out
    elif "--help" in words:
        assert f"usage: sparring {words[1]}" in out
    else:
        raise AssertionError(f"no expectation for {command!r}: add one to _expect above")


def test_every_example_block_is_run_or_marked():
    assert len(RUN) >= 10, "the docs lost their runnable examples"
    for block in ALL:
        if not block.marker:
            assert block.language != "python", f"{block.name}: a python block needs a marker"
            assert block.commands(), f"{block.name}: nothing to run; mark it <!-- not-run: ... -->"
            continue
        if (match := NOT_RUN.fullmatch(block.marker)) is not None:
            assert match.group(1), f"{block.name}: a not-run marker needs its reason"
        elif (match := EXAMPLE.fullmatch(block.marker)) is not None:
            assert (ROOT / match.group(1)).is_file(), f"{block.name}: {match.group(1)} is missing"
        else:
            raise AssertionError(f"{block.name}: unknown marker {block.marker!r}")


def test_the_readme_runs_examples_too():
    assert any(block.page.name == "README.md" for block in RUN)


@pytest.mark.parametrize("block", RUN, ids=[b.name for b in RUN])
def test_example_block_runs(block, tmp_path):
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", HF_HUB_OFFLINE="1")
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, f"{block.name}:\n{block.code}\n{result.stderr[-3000:]}"
    for command in block.commands():
        _expect(command, result.stdout, tmp_path)


def _slug(heading: str) -> str:
    """The anchor MkDocs (and GitHub, for these headings) gives a heading."""
    text = re.sub(r"[^\w\s-]", "", heading).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def test_the_readme_links_into_the_docs_resolve():
    """The README is not part of the site, so `mkdocs build --strict` does not see its links."""
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#\s]+)(?:#([^)\s]+))?\)", readme)
    pages = {target for target, _ in links}
    assert {f"docs/{p.name}" for p in PAGES if p.parent.name == "docs"} <= pages  # every page
    for target, anchor in links:
        assert (ROOT / target).is_file(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / target).read_text(), re.M)
            assert anchor in {_slug(h) for h in headings}, f"{target}#{anchor}"


def test_the_docs_links_stay_inside_the_site():
    """mkdocs --strict (`make docs`, in CI) refuses links to files outside docs/: catch them."""
    docs = ROOT / "docs"
    for page in sorted(docs.rglob("*.md")):
        for target in re.findall(r"\]\(([^)#\s:]+)(?:#[^)\s]*)?\)", page.read_text()):
            resolved = (page.parent / target).resolve()
            assert resolved.is_relative_to(docs) and resolved.exists(), f"{page.name}: {target}"
