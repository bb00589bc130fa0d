"""`sparring calibrate`: where the base model's zone lies among the problem families.

Covers: the command's arguments and its table (per family and level: mean reward, whole-problem
pass rate, zone share; per level; the levels in the zone). Does not cover: sampling and scoring
(sparring.evaluation.calibration) or the families (sparring.problems.families).
"""

from __future__ import annotations

import argparse
import json

from sparring.cli.common import (
    Deprecated,
    add_config_args,
    config_from_args,
    output_file,
    write_output,
)
from sparring.errors import SparringError


def int_list(text: str, what: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SparringError(f"{what} {text!r}: expected integers separated by commas") from None


def add_commands(sub) -> None:
    p = sub.add_parser(
        "calibrate",
        help="sample the answerer on problem-family instances: reward per family and level",
        description=(
            "Samples the config's answerer (or --model) --samples-per-instance times on "
            "--per-family instances of each problem family and level, generated under --seed "
            "(use a seed "
            "that neither training nor the held-out sets use), at the training temperature and "
            "completion budget, and prints per family and level the mean reward (share of the "
            "tests no trivial code passes), the whole-problem pass rate and the zone share "
            "(instances whose samples earned differing rewards: where GRPO has a signal). With "
            "--given-tests K (default: the config's data.given_tests) it adds the false-positive "
            "rate (fp): the share of answers that pass the K typical tests a sparse reward sees "
            "and fail a test it withholds, the answers on which a generator's tests can change "
            "the reward. The last line names the levels whose mean reward lies within --band: "
            "the levels a learning config should train on."
        ),
    )
    add_config_args(p)
    p.add_argument("--seed", type=int, default=2, help="instance seed (default 2: development)")
    p.add_argument("--per-family", type=int, default=2, help="instances per family and level")
    p.add_argument(
        "--samples-per-instance",
        dest="samples",
        type=int,
        default=8,
        metavar="N",
        help="samples per instance (default 8)",
    )
    # `--samples` is a file of samples in `eval humaneval`: one meaning per flag name
    p.add_argument(
        "--samples", dest="samples", type=int, action=Deprecated, new="--samples-per-instance"
    )
    p.add_argument("--families", default="", help="comma-separated families (default: all)")
    p.add_argument("--levels", default="1,2", help="comma-separated levels, 0 to 3 (default 1,2)")
    p.add_argument("--model", default="", help="model to sample (default: the config's answerer)")
    p.add_argument(
        "--given-tests",
        type=int,
        default=None,
        metavar="K",
        help="measure false positives at K given tests (default: data.given_tests; 0: off)",
    )
    p.add_argument("--band", default="0.2,0.8", help="zone band of mean reward (default 0.2,0.8)")
    p.add_argument("--out", default="", metavar="FILE", help="also write per-instance rows (JSON)")
    p.set_defaults(func=_calibrate)


def _calibrate(args: argparse.Namespace) -> int:
    from sparring.evaluation import calibration
    from sparring.problems.families import DEFINED_LEVELS, FAMILIES

    if args.seed < 0:
        raise SparringError(f"--seed {args.seed}: use a seed >= 0")
    if args.per_family < 1 or args.samples < 1:
        raise SparringError("--per-family and --samples-per-instance: use at least 1")
    families = [f for f in args.families.split(",") if f.strip()] or None
    for name in families or []:
        if name not in FAMILIES:
            raise SparringError(
                f"--families: unknown family {name!r}; known: {', '.join(FAMILIES)}"
            )
    levels = int_list(args.levels, "--levels")
    if not levels or any(level not in DEFINED_LEVELS for level in levels):
        raise SparringError(f"--levels {args.levels!r}: use levels among {list(DEFINED_LEVELS)}")
    band = [float(x) for x in args.band.split(",")] if args.band else []
    if len(band) != 2 or not 0 <= band[0] < band[1] <= 1:
        raise SparringError(f"--band {args.band!r}: two numbers LO,HI with 0 <= LO < HI <= 1")
    if args.given_tests is not None and args.given_tests < 0:
        raise SparringError(f"--given-tests {args.given_tests}: use 0 (off) or K >= 1")
    out = output_file(args.out, "--out") if args.out else None  # before minutes of sampling
    cfg = config_from_args(args)
    given = cfg.data.given_tests if args.given_tests is None else args.given_tests
    rows = calibration.calibrate(
        cfg, args.seed, args.per_family, args.samples, families, levels, args.model, given
    )
    summary = calibration.summarize(rows)
    if out is not None:
        write_output(out, json.dumps({"rows": rows, "summary": summary}, indent=1), "--out")
    print(calibration.format_table(summary, (band[0], band[1])))
    return 0
