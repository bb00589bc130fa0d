"""The self-play recipe search's table (issue 45): each configuration of `make learn` tried on the
development split against the given-tests arm of the same start, from the files each run leaves.

A search is a JSON manifest (docs/results/selfplay-search-*.json):

    {"given": "docs/results/learn-given-l2-dev-t1-2026-11-29",
     "configs": [{"name": "gen4", "overrides": "steps.generator=4", "code": "88dfa1d",
                  "minutes": 35.0, "prefix": "docs/results/learn-l2-gen4-dev-t1-2026-11-29"}]}

where a prefix names a run's files: `<prefix>-heldout.json` (its evaluate phase's heldout.json,
with the every-test-passed measure in `measures.strict`), `<prefix>-learn.txt` (the LEARN lines it
printed) and, for a self-play run, `<prefix>-bank.jsonl` (its validated bank). Every row pairs
the configuration's final against the given arm's final over the held-out new tasks
(`intervals.control_gain`: the interval resamples tasks), on every test passed and on the share
of tests passed, and adds what its LEARN lines and its bank say.

What it leaves out: running anything (each row is a finished `make learn`), choosing (the reader
picks on this table, on the development split only).

Usage: .venv/bin/python scripts/selfplay_table.py docs/results/selfplay-search-2026-11-29.json
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from sparring.evaluation.arms import heldout_pair
from sparring.evaluation.heldout import Heldout
from sparring.evaluation.intervals import control_gain

# the value a level-2 problem states for its empty input
# (sparring.problems.families.spec.EMPTY_VALUES):
# a banked test expecting one of them tests the clause (or, banked before 4953def, calls the
# function off its domain: None, 0 for a list)
STATED_EMPTY = re.compile(r"==\s*(99|'empty'|\"empty\"|\[0\]|\['empty'\]|\[\"empty\"\])\s*$")


def learn_values(text: str) -> dict[str, str]:
    """{`LEARN` name: the rest of its line}."""
    out = {}
    for line in text.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3 and parts[0] == "LEARN":
            out[parts[1]] = parts[2]
    return out


def field(rest: str, key: str) -> str:
    match = re.search(rf"\b{key}=(\S+)", rest or "")
    return match.group(1) if match else "n/a"


def bank_text(prefix: Path) -> str:
    path = Path(f"{prefix}-bank.jsonl")
    if not path.exists():
        return "-"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    clause = sum(bool(STATED_EMPTY.search(r["test"])) for r in rows)
    problems = len({r["problem_id"] for r in rows})
    return f"{len(rows)} ({clause}) on {problems}"


def versus(run: Heldout, given: Heldout, measure: str) -> str:
    """The configuration's gain minus the given arm's (heldout_pair checks the pair is fair)."""
    mine, theirs, tasks = heldout_pair(run, given, "new_tasks", "phase_schedule", measure)
    gain = control_gain([mine], [theirs], tasks)
    return f"{gain['delta']:+.3f} ({gain['lo']:+.3f}..{gain['hi']:+.3f})"


def row(config: dict, given: Heldout) -> str:
    prefix = Path(config["prefix"])
    run = Heldout.load(f"{prefix}-heldout.json")
    learn = learn_values(Path(f"{prefix}-learn.txt").read_text())
    strict = learn.get("heldout_new_tasks_strict", "")
    catch = learn.get("generator_catch_heldout", "")
    trained = learn.get("completions_trained", "n/a").split()
    cells = [
        config["name"],
        f"`{config['overrides']}`",
        config["code"],
        f"{config['minutes']:.0f}",
        bank_text(prefix),
        f"{trained[0]} of {field(' '.join(trained[1:]), 'sampled')}",
        f"{field(strict, 'base')} -> {field(strict, 'final')}",
        versus(run, given, "strict"),
        versus(run, given, "discriminating"),
        f"{field(catch, 'base')} -> {field(catch, 'final')} ({field(catch, 'ci95_delta')})",
        learn.get("false_positive_rate", "n/a"),
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| configuration | overrides | code | min | bank tests (expecting the empty value) on problems "
    "| completions trained | new tasks every test passed | - given: every test "
    "| - given: share of tests | generator catch held out (95% delta) | false positives |"
)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    manifest = json.loads(Path(argv[0]).read_text())
    given = Heldout.load(f"{manifest['given']}-heldout.json")
    print(HEADER)
    print("|" + " --- |" * (HEADER.count("|") - 1))
    for config in manifest["configs"]:
        print(row(config, given))
    n = len(given.sets["new_tasks"])
    print(f"\nPaired over the {n} held-out new tasks: gain minus the given arm's gain.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
