"""Golden draws: the problems the families draw today, recorded so that a change of one
character in any drawn problem fails here (issue 63, item 1: the family system is rebuilt and
every result measured so far must still describe the code).

Covers, each draw recomputed in-process and compared with tests/golden/draws.json:

- every shipped config (configs/*.yaml, configs/games/*.yaml) whose `data.train` names
  `families`: what `sparring.problems.sources.problem_sets` returns, the pure drawing step
  that `materialize` calls before the sandbox: the training problems (`<config>/train`), each
  held-out set by its `heldout:<set>` tag (`<config>/heldout:new_tasks`, `new_ops` (a subset
  of new_tasks), `trained_tasks`, `new_families`, and a `data.heldout` source such as
  `bundled`, whose split depends on the training prompts), and the drop counts and task
  overlap (`<config>/drops`). Today these are configs/learn.yaml, configs/local.yaml,
  configs/recur.yaml and the cluster presets that schedule (their held-out new tasks are what
  the start gate measures); a config that starts naming `families` without a record fails
  `test_every_draw_is_recorded`. A remote source (s3://: the cluster presets' own problems)
  cannot be drawn offline and is left out of its config's record;
- `sparring problems families --per-family 8` at seeds 0, 1, 2 and levels 0, 1, 2, 3, through
  the function behind the CLI (`sparring.problems.families.generate`): for the 16 spec families
  (`cli/spec/...`, named in SPEC_FAMILIES, not read from SPECS, so the record does not follow
  the catalogue) and for the CLI's default selection (`cli/default/...`: the 14 families
  configs/learn.yaml trains on; before issue 63 retired the hand-written families the default
  was all 30, regenerated once on purpose then). Level 3 (a stated value at a special input,
  sparring.problems.families.special) recorded the one-line FamilyError `generate` raised while no
  family had it; since issue 73 it records the draws (the six `level=3` records were rewritten
  then, every other record unchanged). A selection with none of a level would still record
  its FamilyError.

A draw is recorded as the sha256 of its problems, each serialized as JSON with sorted keys from
`dataclasses.asdict` (every field: id, description, signature, tests, reference, difficulty,
tags, ...), one per line; its count; its first ids; and an 8-hex-digit hash per problem, so a
mismatch names the draw and the first problem that differs.

Does not cover: what materialize does after drawing (the sandbox check of references,
`data.max_problems`, the val split, trivial passes, `data.given_tests`' view), the eval set
(HumanEval), configs that draw no families, other draws (`sparring calibrate`, the search's
development seed).
The `cli/default` draws will change by design when issue 63 retires the hand-written families
and changes the CLI default; the spec families' draws must not.

Regenerate the record with `.venv/bin/python tests/unit/test_golden_draws.py --write` (without
`--write` it only compares), and only when a draw is meant to change (a new family, a fixed
bug in one): the record is the evidence that results measured before still describe the code,
so rewriting it to make a refactoring pass throws that evidence away. Say in the commit which
draws changed and why.

Drawing everything takes ~35 s of CPU (cli/default ~24, cli/spec ~10, the configs ~2); the
draws run in parallel in spawned processes, one per core.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import hashlib
import json
import multiprocessing
import os
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "draws.json"
CONFIG_GLOBS = ("configs/*.yaml", "configs/games/*.yaml")
SEEDS = (0, 1, 2)
LEVELS = (0, 1, 2, 3)
PER_FAMILY = 8  # the CLI's --per-family for the recorded draws
SPEC_FAMILIES = (
    "list_stat",
    "list_count",
    "list_map",
    "list_filter",
    "list_slice",
    "list_index",
    "int_arith",
    "int_range",
    "str_case",
    "str_count",
    "str_slice",
    "sentence_ops",
    "word_list",
    "pair_math",
    "digit_ops",
    "dict_keys",
)
# the CLI's default: the families configs/learn.yaml trains on (all but the two held out; since
# issue 63 it no longer mixes in the retired hand-written families)
SELECTIONS = {"spec": list(SPEC_FAMILIES), "default": list(SPEC_FAMILIES[:-2])}
FIRST_IDS = 3
HASH_CHARS = 8  # per-problem hashes only say where a draw differs; sha256 decides
ALL_IDS = "all_ids"
WRITE_HINT = "if the change is meant, regenerate: python tests/unit/test_golden_draws.py --write"


def _canonical(problem) -> str:
    return json.dumps(asdict(problem), sort_keys=True, ensure_ascii=False)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _record(problems) -> dict:
    """{count, sha256, ids (the first few), hashes (one per problem)} of a list of problems."""
    lines = [_canonical(p) for p in problems]
    return {
        "count": len(problems),
        "sha256": _sha("\n".join(lines)),
        "ids": [p.id for p in problems[:FIRST_IDS]],
        "hashes": " ".join(_sha(line)[:HASH_CHARS] for line in lines),
        ALL_IDS: [p.id for p in problems],  # to name a differing problem; not written
    }


def _value_record(value) -> dict:
    return {"sha256": _sha(json.dumps(value, sort_keys=True)), "value": value}


def family_configs() -> list[str]:
    """The shipped configs (paths relative to the repository) whose data.train names families."""
    from sparring.config import load_config
    from sparring.problems.sources import FAMILIES_SOURCE

    paths = sorted(p for pattern in CONFIG_GLOBS for p in ROOT.glob(pattern))
    return [str(p.relative_to(ROOT)) for p in paths if FAMILIES_SOURCE in load_config(p).data.train]


def _config_draws(config: str) -> dict[str, dict]:
    """The draws of one config: its training set, each held-out set, the drops."""
    from sparring.config import load_config
    from sparring.problems import HELDOUT_TAG
    from sparring.problems.sources import problem_sets

    cfg = load_config(ROOT / config)
    local = [s for s in cfg.data.train if not s.startswith("s3://")]  # offline: see the top
    cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, train=local))
    sets = problem_sets(cfg.data, cfg.seed)
    draws = {f"{config}/train": _record(sets.train)}
    by_set: dict[str, list] = {}
    for p in sets.heldout:
        for tag in p.tags:
            if tag.startswith(HELDOUT_TAG):
                by_set.setdefault(tag, []).append(p)
    draws.update({f"{config}/{tag}": _record(ps) for tag, ps in by_set.items()})
    drops = {"dropped": sets.dropped, "task_overlap": sets.task_overlap}
    draws[f"{config}/drops"] = _value_record(drops)
    return draws


def _cli_draw(selection: str, seed: int, level: int) -> dict[str, dict]:
    from sparring.problems.families import FamilyError, generate

    name = f"cli/{selection}/seed={seed}/level={level}"
    try:
        problems = generate(seed, PER_FAMILY, SELECTIONS[selection], [level])
    except FamilyError as exc:  # what the CLI prints for a selection without the level
        return {name: {"count": 0, **_value_record({"error": str(exc)})}}
    return {name: _record(problems)}


def _jobs() -> list[tuple]:
    # level 1 first: its draws are the slowest, so the pool ends sooner
    cli = [
        (_cli_draw, selection, seed, level)
        for level in sorted(LEVELS, key=lambda level: level != 1)
        for selection in SELECTIONS
        for seed in SEEDS
    ]
    return [*cli, *((_config_draws, config) for config in family_configs())]


def compute_draws() -> dict[str, dict]:
    """Every draw, computed in parallel (spawned workers: each draw is the same in any
    process)."""
    jobs = _jobs()
    workers = max(1, min(os.cpu_count() or 1, len(jobs)))
    context = multiprocessing.get_context("spawn")
    draws: dict[str, dict] = {}
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        for result in pool.map(_call, jobs):
            draws.update(result)
    return dict(sorted(draws.items()))


def _call(job: tuple) -> dict[str, dict]:
    fn, *args = job
    return fn(*args)


def _recorded() -> dict[str, dict]:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


def mismatch(name: str, recorded: dict, now: dict) -> str:
    """One message naming the draw and, where the hashes tell, the first problem that differs
    ("" when the draw is as recorded)."""
    if recorded["sha256"] == now["sha256"]:
        return ""
    if "value" in recorded or "value" in now:
        return f"draw {name}: recorded {recorded.get('value')}, now {now.get('value')}"
    old, new = recorded["hashes"].split(), now["hashes"].split()
    where = f"count recorded {recorded['count']}, now {now['count']}"
    index = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), None)
    if index is not None:
        where += f"; first differing problem: #{index}, {now[ALL_IDS][index]}"
    elif len(old) != len(new):
        where += f"; the first {min(len(old), len(new))} problems are as recorded"
    return f"draw {name}: sha256 differs; {where}"


@pytest.fixture(scope="module")
def drawn() -> dict[str, dict]:
    return compute_draws()


RECORDED = _recorded()


def test_every_draw_is_recorded(drawn):
    assert RECORDED, f"{GOLDEN} is missing; {WRITE_HINT}"
    missing = sorted(set(drawn) - set(RECORDED))
    gone = sorted(set(RECORDED) - set(drawn))
    assert not missing and not gone, (
        f"draws not recorded: {missing}; recorded draws no longer drawn: {gone}; {WRITE_HINT}"
    )


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_draw_is_as_recorded(drawn, name):
    if name not in drawn:
        pytest.fail(f"draw {name} is recorded but no longer drawn; {WRITE_HINT}")
    message = mismatch(name, RECORDED[name], drawn[name])
    if message:
        pytest.fail(f"{message}; {WRITE_HINT}", pytrace=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {GOLDEN}")
    args = parser.parse_args(argv)
    draws = compute_draws()
    if not args.write:
        recorded = _recorded()
        bad = [
            name for name in draws if recorded.get(name, {}).get("sha256") != draws[name]["sha256"]
        ]
        print(f"{len(draws)} draws; {len(bad)} differ from {GOLDEN}: {bad}")
        return 1 if bad else 0
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    kept = {name: {k: v for k, v in d.items() if k != ALL_IDS} for name, d in draws.items()}
    GOLDEN.write_text(json.dumps(kept, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"wrote {len(draws)} draws to {GOLDEN} ({GOLDEN.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
