"""`sparring problems list | check | families`: list problem sets, check them in the sandbox
(reference solutions against their own tests, and which tests trivial code passes), and write a
seeded set generated from the problem families.

Does not cover: loading problems and running the checks (sparring.problems,
sparring.problems.trivial),
generating family instances (sparring.problems.families), or scoring solutions (`sparring reward`,
sparring.cli.reward).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sparring.cli.common import add_group
from sparring.errors import SparringError


def add_commands(sub) -> None:
    prob = add_group(sub, "problems", "list and check problem sets")
    p = prob.add_parser(
        "list",
        help="list the problems of a source",
        description="List a problem source's problems (id, difficulty, number of tests, tags) "
        "and their count, or print them in full as JSON. A source that holds no problems is "
        "refused.",
    )
    p.add_argument("--source", default="bundled", help="bundled, humaneval, FILE, DIR or s3://…")
    p.add_argument("--json", action="store_true", help="print a JSON list of full problems")
    p.set_defaults(func=_problems_list)
    p = prob.add_parser(
        "check",
        help="run every reference solution against its own tests, and the trivial solutions too",
        description=(
            "Runs every reference solution against its tests, and the trivial solutions "
            "(constants, echoed arguments, len/list/sorted of the first) against them: a test "
            "that trivial code passes earns no reward. Exit 1 when a reference fails or a "
            "problem has fewer than --min-discriminating tests that no trivial solution passes."
        ),
    )
    p.add_argument("--source", default="bundled", help="bundled, humaneval, FILE, DIR or s3://…")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds per test")
    p.add_argument(
        "--min-discriminating",
        type=int,
        default=3,
        metavar="N",
        help="tests per problem that no trivial solution may pass (default 3)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="per problem: reference verdict, tests, and the tests trivial code passes",
    )
    p.set_defaults(func=_problems_check)
    p = prob.add_parser(
        "families",
        help="write seeded problems generated from the procedural problem families",
        description=(
            "Writes --per-family instances of every chosen (family, level) pair: short "
            "function-writing problems over lists, strings, integers and dicts, each drawn "
            "from a family's operations and their constants, with function and parameter "
            "names and phrasing from --seed. Level 0 is one step with drawn constants, level "
            "1 two steps, level 2 level 0 with a stated value for the empty input, level 3 "
            "level 0 with a stated value at a special input drawn per task. Every "
            "instance has 8-10 tests that its reference solution passes, at least 3 (and "
            "half) of which no trivial solution passes. The same arguments write the same "
            "file; ids are fam-<family>-L<level>-s<seed>-<index>. Without --families it "
            "writes the 14 families that configs/learn.yaml (`make learn`) trains on; name "
            "others with --families (the held-out digit_ops and dict_keys, or any of the "
            "16); an unknown name is refused with the list of known ones. It prints how many "
            "instances, distinct tasks (functions, compared by their outputs on a fixed pool "
            "of inputs) and distinct prompts (names taken out) it wrote."
        ),
        epilog="Example: sparring problems families --seed 1 --per-family 5 --out fam.jsonl",
    )
    p.add_argument(
        "--seed",
        metavar="INT",
        help="required: a non-negative integer; the same seed, the same problems",
    )
    p.add_argument(
        "--per-family",
        metavar="INT",
        help="required: instances of each family at each level (>= 1)",
    )
    p.add_argument(
        "--families",
        metavar="A,B",
        help="comma-separated family names (default: the 14 that configs/learn.yaml trains "
        "on; the held-out ones are digit_ops,dict_keys)",
    )
    p.add_argument(
        "--levels",
        metavar="0,1",
        default="1,2",
        help="comma-separated levels, 0 to 3 (default: 1,2; configs/learn.yaml trains on 0)",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="required: the file to write: JSONL (one problem per line) when it ends in "
        '.jsonl, else JSON {"problems": [...]}; readable by `problems list --source FILE`',
    )
    p.add_argument(
        "--against-seed",
        metavar="INT",
        help="also generate the same families, levels and count under this seed (the "
        "training seed) and print how many of the written instances compute a function that "
        "none of those computes (new tasks)",
    )
    p.set_defaults(func=_problems_families)


def _problems_list(args: argparse.Namespace) -> int:
    from sparring.problems import load_source

    problems = load_source(args.source)
    if args.json:
        json.dump([p.to_dict() for p in problems], sys.stdout, indent=1)
        print()
        return 0
    for p in problems:
        print(f"{p.id:40s} {p.difficulty:7s} {len(p.baseline_tests):2d} tests  {','.join(p.tags)}")
    print(f"{len(problems)} problems")
    return 0


def _problems_check(args: argparse.Namespace) -> int:
    from sparring.problems import answer_tests, check_problems, compute_trivial_passes, load_source
    from sparring.problems.trivial import discriminating_indices

    problems = load_source(args.source)
    failures = dict(check_problems(problems, timeout_s=args.timeout))
    scored = compute_trivial_passes(problems, timeout_s=args.timeout)
    rows, weak = [], []
    for p in scored:
        tests = answer_tests(p)
        by_test: dict[int, list[str]] = {}
        for name, hits in p.trivial_passes.items():
            for i in hits:
                by_test.setdefault(i, []).append(name)
        n_disc = len(discriminating_indices(len(tests), p.trivial_passes))
        if n_disc < args.min_discriminating:
            weak.append(p.id)
        rows.append(
            {
                "id": p.id,
                "reference_passes": p.id not in failures,
                "reference_failure": failures.get(p.id),
                "tests": len(tests),
                "discriminating_tests": n_disc,
                "trivially_passed": [
                    {"test": tests[i], "passed_by": names} for i, names in sorted(by_test.items())
                ],
            }
        )
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
    else:
        for problem_id, detail in failures.items():
            print(f"FAIL {problem_id}: {detail}", file=sys.stderr)
        for row in rows:
            if row["discriminating_tests"] < args.min_discriminating:
                print(
                    f"WEAK {row['id']}: {row['discriminating_tests']} of {row['tests']} tests "
                    "discriminate (trivial code passes the rest)",
                    file=sys.stderr,
                )
        n_tests = sum(r["tests"] for r in rows)
        n_disc = sum(r["discriminating_tests"] for r in rows)
        print(
            f"{len(problems) - len(failures)}/{len(problems)} reference solutions pass their "
            f"tests; {n_disc}/{n_tests} tests discriminate (no trivial solution passes them); "
            f"{len(weak)} problems have fewer than {args.min_discriminating} such tests"
        )
    return 1 if failures or weak else 0


def _problems_families(args: argparse.Namespace) -> int:
    from sparring.atomic import write_file
    from sparring.problems.families import DEFINED_LEVELS, TRAINED_FAMILIES, FamilyError, generate

    seed = _int_option(args.seed, "--seed", 0, FamilyError)
    per_family = _int_option(args.per_family, "--per-family", 1, FamilyError)
    if not args.out:
        raise FamilyError("--out FILE is required: where to write the problems (.json or .jsonl)")
    families = list(TRAINED_FAMILIES)
    if args.families is not None:
        families = [name.strip() for name in args.families.split(",") if name.strip()]
        if not families:
            raise FamilyError(
                "--families: name at least one family, or leave it out for the default"
            )
    levels = []
    for part in args.levels.split(","):
        level = part.strip()
        if not level.isdigit() or int(level) not in DEFINED_LEVELS:
            known = ", ".join(map(str, DEFINED_LEVELS))
            raise FamilyError(f"--levels: {level!r} is not one of {known}")
        levels.append(int(level))
    path = Path(args.out)
    if path.is_dir():
        raise FamilyError(f"--out {path}: is a folder; name a .json or .jsonl file")
    problems = generate(seed, per_family, families, levels)
    n_families = len({p.tags[0] for p in problems})
    n_levels = len({p.tags[1] for p in problems})
    if args.out.endswith(".jsonl"):
        text = "".join(json.dumps(p.to_dict()) + "\n" for p in problems)
    else:
        text = json.dumps({"problems": [p.to_dict() for p in problems]}, indent=1) + "\n"
    try:
        write_file(path, text.encode())
    except OSError as exc:
        # name the blocking folder (a file where a folder should be), not the temporary file
        blocker = str(exc.filename or "")
        where = f" ({blocker})" if blocker and str(path).startswith(blocker + "/") else ""
        raise FamilyError(f"--out {path}: cannot write: {exc.strerror or exc}{where}") from None
    from sparring.problems.families import task_tag
    from sparring.problems.families.sets import describe

    counts = describe(problems)
    print(
        f"wrote {len(problems)} problems ({n_families} families x {n_levels} levels x "
        f"{per_family}) to {path}: {counts['tasks']} distinct tasks, {counts['prompts']} "
        "distinct prompts"
    )
    if args.against_seed is not None:
        other_seed = _int_option(args.against_seed, "--against-seed", 0, FamilyError)
        other = {task_tag(p) for p in generate(other_seed, per_family, families, levels)}
        new = sum(task_tag(p) not in other for p in problems)
        print(f"new tasks against seed {other_seed}: {new} of {len(problems)}")
    return 0


def _int_option(value: str | None, flag: str, minimum: int, error: type[SparringError]) -> int:
    """An integer option checked here, so that a bad one is one line, not argparse's usage."""
    if value is None:
        raise error(f"{flag} INT is required")
    try:
        number = int(value)
    except ValueError:
        raise error(f"{flag} {value!r}: not an integer") from None
    if number < minimum:
        raise error(f"{flag} {number}: must be at least {minimum}")
    return number
