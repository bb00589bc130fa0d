"""The words in one place: docs/glossary.md defines every term of the field and of the project
the docs lean on, and the README and the docs' home page link to it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "docs" / "glossary.md"
TERMS = (
    "zone", "screen", "flat", "bank", "reserve", "stated case", "catch", "room", "arm", "pilot",
    "champion", "start gate", "answerer", "generator", "writer", "fuzzer", "given tests",
    "held-out new tasks", "LEARN line", "honest reward", "frozen snapshot", "GRPO", "group",
    "useful group", "dynamic sampling", "pool", "pre-check", "rerun", "record",
)  # fmt: skip


def test_every_term_is_defined():
    defined = {t.lower() for t in re.findall(r"\*\*([^*]+)\*\*", GLOSSARY.read_text(), flags=re.M)}
    missing = [t for t in TERMS if t.lower() not in defined]
    assert not missing, f"docs/glossary.md defines no {missing}"


def test_the_readme_and_the_home_page_link_it():
    assert "](docs/glossary.md)" in (ROOT / "README.md").read_text()
    assert "](glossary.md)" in (ROOT / "docs" / "index.md").read_text()
