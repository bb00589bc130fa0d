"""Every time and result the README and the docs quote has one source, and each copy agrees.

The source of a measured time or ratio is a row of the "Figures" table of docs/benchmarks.md: a
name, a value, and where and when it was measured. A page quotes a figure as a link to that
table whose title names the row, `[14 min 35 s](docs/benchmarks.md#figures "make run")`, so a
reader sees the value linked to its source and this test can find every copy:

- each quote names a row and its text is the row's value, on the README and on every page;
- the README and the home page (docs/index.md), which a newcomer reads first, state no time
  outside a quote, so a copy cannot dodge the check by losing its link;
- each row says when (a date) and at which code (a commit) it was measured;
- a `LEARN` line the README, the home page or the benchmarks page shows is a line of a result
  file in docs/results, and the README's study table and contrasts are the study report's;
- `make help` states a target's time as the row of that target says it.

Not covered: figures that only one page states (the journal's history, the benchmarks page's
earlier measurements), and whether a row itself is true: that is the measurement's record.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
INDEX = ROOT / "docs" / "index.md"
BENCHMARKS = ROOT / "docs" / "benchmarks.md"
RESULTS = ROOT / "docs" / "results"
STUDY = RESULTS / "study-2026-12-02-seeds.json"  # the report with whole-seed intervals
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
FRONT_PAGES = [README, INDEX]

# `[value](docs/benchmarks.md#figures "name")`, `(benchmarks.md#figures ...)` or, on the
# benchmarks page itself, `(#figures "name")`
QUOTE = re.compile(r'\[([^\]]+)\]\((?:(?:docs/)?benchmarks\.md)?#figures "([^"]+)"\)')
# A stated duration: `14 min 35 s`, `0.91 s`, `about 10 h`, `16-36 min`, `12 minutes`. A limit
# (`under 15 minutes`, `at most 10 minutes`) is a budget, not a measurement, and is not one.
DURATION = re.compile(
    r"(?<![\w.,])(?<!under )(?<!at most )\d+(?:[.,]\d+)?(?:\s*(?:-|to)\s*\d+(?:\.\d+)?)?"
    r"\s?(?:h|hours?|min|minutes?|s|seconds?)\b(?:\s\d+\ss\b)?"
)
LEARN = re.compile(r"^LEARN \S.*$", re.M)
INLINE_LEARN = re.compile(r"`(LEARN [^`]+)`")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
CODE = re.compile(r"\bcode [0-9a-f]{7,40}\b")
# `D - F +0.115 (+0.027..+0.212`: a contrast of the study and its interval
CONTRAST = re.compile(
    r"\b([A-Z]) - ([A-Z]) ([+-]\d\.\d{3}) \(([+-]\d\.\d{3})\.\.([+-]\d\.\d{3})[,)]"
)


def rows() -> list[tuple[str, str, str]]:
    """The Figures table of the benchmarks page: (name, value, where and when) per row."""
    text = BENCHMARKS.read_text()
    section = re.search(r"^## Figures\n(.*?)(?=^## )", text, re.M | re.S)
    assert section, "docs/benchmarks.md has no '## Figures' section"
    out = []
    for line in section.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and cells[0] not in {"figure", "---"}:
            out.append((cells[0], cells[1], cells[2]))
    return out


def figures() -> dict[str, str]:
    """name -> value."""
    found = rows()
    table = {name: value for name, value, _ in found}
    assert len(table) == len(found), "a figure named twice in the table"
    return table


def quotes(text: str) -> list[tuple[str, str]]:
    """(value as quoted, figure name) for every quote on a page."""
    return [(" ".join(v.split()), n) for v, n in QUOTE.findall(text)]


def disagreements(page_text: str, table: dict[str, str]) -> list[str]:
    out = []
    for value, name in quotes(page_text):
        if name not in table:
            out.append(f"quotes figure {name!r}, which the table lacks")
        elif value != " ".join(table[name].split()):
            out.append(f"quotes {name!r} as {value!r}; docs/benchmarks.md says {table[name]!r}")
    return out


def unquoted_times(text: str) -> list[str]:
    """The durations a page states outside a quote (a figure without its source)."""
    text = QUOTE.sub("", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets hold no figures
    return [m.group(0) for m in DURATION.finditer(text)]


def shown_learn_lines(text: str) -> list[str]:
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
    return [line for block in fenced for line in LEARN.findall(block)] + INLINE_LEARN.findall(text)


def result_lines() -> set[str]:
    lines = set()
    for path in RESULTS.glob("*.txt"):
        lines.update(line.strip() for line in path.read_text().splitlines())
    return lines


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_the_table_has_the_figures_the_front_pages_need():
    table = figures()
    for name in ("make install", "make test", "make test count", "make run"):
        assert name in table, name
    for page in FRONT_PAGES:
        named = {name for _, name in quotes(page.read_text())}
        assert {"make install", "make test", "make run"} <= named, _rel(page)


def test_every_row_says_when_and_at_which_code():
    date = code = None
    for name, value, where in rows():
        assert value, f"{name}: no value"
        if not where.startswith("the same"):  # "the same clone/run": the row above's apply
            date, code = DATE.search(where), CODE.search(where)
        assert date and code, f"{name}: say the date and the code it was measured at: {where!r}"


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_quote_is_its_figure(page):
    assert disagreements(page.read_text(), figures()) == []


@pytest.mark.parametrize("page", FRONT_PAGES, ids=_rel)
def test_the_front_pages_state_no_time_without_its_source(page):
    assert unquoted_times(page.read_text()) == [], (
        f"{_rel(page)}: quote each time from docs/benchmarks.md#figures"
    )


@pytest.mark.parametrize("page", [*FRONT_PAGES, BENCHMARKS], ids=_rel)
def test_the_learn_lines_shown_are_result_file_lines(page):
    known = result_lines()
    for line in shown_learn_lines(page.read_text()):
        assert line.strip() in known, f"{_rel(page)}: {line!r} is in no docs/results/*.txt"


def test_the_readme_study_figures_are_the_report():
    report = json.loads(STUDY.read_text())
    readme = README.read_text()
    finals = {r["arm"]: r["final"] for r in report["table"] if r["measure"] == "new_tasks"}
    arms = re.findall(r"^\| ([A-Z]) \|.*\| (\d\.\d{3}) \|$", readme, re.M)
    assert {arm for arm, _ in arms} == set(finals), "the README's arm table lost an arm"
    for arm, final in arms:
        assert final == f"{finals[arm]:.3f}", f"arm {arm}: README {final}, report {finals[arm]:.3f}"
    contrasts = {c["contrast"]: c for c in report["contrasts"] if c["measure"] == "new_tasks"}
    quoted = re.findall(CONTRAST, readme)
    assert quoted, "the README quotes no contrast of the study"
    for a, b, delta, lo, hi in quoted:
        c = contrasts[f"{a}-{b}"]
        assert (delta, lo, hi) == tuple(f"{c[k]:+.3f}" for k in ("delta", "lo", "hi")), f"{a} - {b}"


def test_make_help_states_the_measured_times():
    table = figures()
    for line in (ROOT / "Makefile").read_text().splitlines():
        match = re.match(r"^([a-z-]+):.*## (.*)$", line)
        if not match:
            continue
        target, help_text = match.groups()
        names = [n for n in table if re.fullmatch(rf"make {target}(?: [A-Z]+=\S+)*", n)]
        if not names:  # a target the table does not time (its help's estimate is not checked)
            continue
        measured = {t for n in names for t in unquoted_times(table[n])}
        for stated in unquoted_times(help_text):
            assert stated in measured, (
                f"make help: {target} says {stated!r}; docs/benchmarks.md#figures says "
                f"{[table[n] for n in names]}"
            )


# The checks above must fail on a disagreement, not only pass on agreement.


def test_a_changed_copy_is_found():
    table = {"make run": "14 min 35 s"}
    assert disagreements('[14 min 35 s](docs/benchmarks.md#figures "make run")', table) == []
    assert disagreements('[14 min 36 s](docs/benchmarks.md#figures "make run")', table)
    assert disagreements('[14 min 35 s](benchmarks.md#figures "make rnu")', table)


def test_an_unquoted_time_is_found():
    assert unquoted_times('took [3 min 19 s](docs/benchmarks.md#figures "make install")') == []
    for text in ("about 16-36 min", "11 min 15 s", "0.91 s a completion", "about 10 h", "~6 min"):
        assert unquoted_times(text), text
    for text in ("under 15 minutes", "n=45", "3 seeds", "8.25x", "40,414 tokens/s", "lr 4e-4"):
        assert unquoted_times(text) == [], text


README_LIMIT = 12_000  # characters: a newcomer reads the front page whole; detail lives in docs/


def test_the_readme_stays_short():
    size = len(README.read_text())
    assert size <= README_LIMIT, (
        f"README.md has {size} characters, over {README_LIMIT}: move detail to docs/"
    )


LEARNING = ROOT / "docs" / "learning.md"
LEARNING_LIMIT = 25_000  # characters: the results page; narrative goes to the learning journal


def test_the_learning_results_page_stays_short():
    size = len(LEARNING.read_text())
    assert size <= LEARNING_LIMIT, (
        f"docs/learning.md has {size} characters, over {LEARNING_LIMIT}: move how a result came"
        " about to docs/learning-journal.md and keep the result, its file and its interval"
    )
