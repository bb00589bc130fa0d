"""Recipe search for the learning canary on the development split (was `make learn-search`;
configs/study/2026-11-26-search.yaml asks its question as a study).

Each configuration is configs/learn.yaml with a few overrides, trained for one answerer phase of
`--steps` GRPO steps from the base model on the same training instances (seed 0, the calibrated
level), then sampled `--samples` times on fresh instances of the trained families under the
development seed 2 (`--dev-per-family` per family; calibration and this search are the only users
of that seed). Every configuration and the base are sampled at configs/learn.yaml's temperature
and budget with the same seed, so a configuration's gain over the base, and over the baseline
configuration, is paired per problem (95% bootstrap over problems).

What it leaves out, on purpose: the generator phase (the search tunes the answerer's GRPO
recipe; the bank the generator adds is a few tests per round) and the held-out sets (a
configuration is chosen here; the held-out sets are measured once, by `make learn`).

Results go to local_outputs/learn-search/results-*.jsonl as each configuration finishes, each
with the code version (sparring.backends.lineage.code_digest) and config digest it ran, so an
interrupted
search continues where it stopped; a configuration whose code or resolved config changed since
is measured again (`stale`), never kept by its name alone. The table is printed at the end.

Usage: .venv/bin/python scripts/learn_search.py [--configs baseline,all-layers] [--steps 20]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
DEV_SEED = 2

CONFIGS: dict[str, list[str]] = {
    # configs/learn.yaml as the search ran it (2026-11-26): LoRA on the top 8 layers, lr 2e-4,
    # groups of 8, T 0.7; pinned, since learn.yaml has trained all layers since 2026-11-27
    "baseline": ["lora.top_layers=8"],
    "format-only": ["rewards.answerer=format_only", "lora.top_layers=8"],  # its control
    "all-layers": ["lora.top_layers=0"],
    # the control of the all-layers recipe: is its lead the reward's or the format's?
    "format-only-all-layers": ["rewards.answerer=format_only", "lora.top_layers=0"],
    "lr-1e-4": ["grpo.learning_rate=1e-4", "lora.top_layers=8"],
    "groups-16": ["grpo.num_generations=16", "lora.top_layers=8"],
    "temperature-1.0": ["grpo.temperature=1.0", "lora.top_layers=8"],
    "lr-2e-5": ["grpo.learning_rate=2e-5", "lora.top_layers=8"],
}
DEFAULT = "baseline,format-only,all-layers,lr-1e-4,format-only-all-layers,groups-16"


def problem_means(rows: list[dict]) -> dict[str, float]:
    """Per dev instance: mean discriminating share over its samples (a sandbox failure counts 0)."""
    return {r["id"]: sum(x or 0.0 for x in r["rewards"]) / len(r["rewards"]) for r in rows}


def mean(per_problem: dict[str, float]) -> float:
    return sum(per_problem.values()) / max(1, len(per_problem))


def load_results(path: Path) -> dict[str, dict]:
    if not path.exists():
        return {}
    return {r["name"]: r for r in map(json.loads, path.read_text().splitlines()) if r}


def stale(result: dict | None, code: str, config_digest: str) -> str:
    """Why a stored result must be measured again, or "" when it still describes today's code
    and config (a later line of the results file replaces an earlier one of its name).

    >>> stale({"code": "c1", "config_digest": "d1"}, "c1", "d1")
    ''
    >>> stale({"code": "c0", "config_digest": "d1"}, "c1", "d1")
    'measured by code c0, today c1'
    >>> stale({"code": "c1", "config_digest": "d0"}, "c1", "d1")
    'measured with config d0, today d1'
    >>> stale({}, "c1", "d1")
    'measured by code of unknown version, today c1'
    """
    if result is None:
        return "not measured yet"
    if result.get("code") != code:
        return f"measured by code {result.get('code') or 'of unknown version'}, today {code}"
    if result.get("config_digest") != config_digest:
        return f"measured with config {result.get('config_digest')}, today {config_digest}"
    return ""


def append(path: Path, record: dict) -> None:
    with path.open("a") as f:
        f.write(json.dumps(record) + "\n")


def table(results: dict[str, dict]) -> str:
    from sparring.evaluation.intervals import paired_delta

    base = results["base"]["problems"]
    ids = sorted(base)
    ref = results.get("baseline", {}).get("problems")
    lines = [
        "| configuration | overrides | completions trained | train reward | dev reward "
        "| gain over base (95%) | over baseline (95%) | minutes |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        f"| base | (no training) | 0 | | {mean(base):.3f} | | | "
        f"{results['base']['seconds'] / 60:.1f} |",
    ]
    for name, r in results.items():
        if name == "base":
            continue
        after = [r["problems"][i] for i in ids]
        gain = paired_delta([base[i] for i in ids], after)
        vs = (
            ""
            if ref is None or name == "baseline"
            else gain_text(paired_delta([ref[i] for i in ids], after))
        )
        lines.append(
            f"| {name} | {' '.join(r['overrides']) or '(configs/learn.yaml)'} "
            f"| {r['completions_trained']:.0f} | {r['train_reward']:.3f} "
            f"| {gain['after']:.3f} | {gain_text(gain)} | {vs} "
            f"| {r['seconds'] / 60:.1f} |"
        )
    return "\n".join(lines)


def results_name(model: str, steps: int, dev_per_family: int, samples: int) -> str:
    """The results file of one search design: arms measured on another development set or
    sample count are not comparable, so they never share a file (the defaults keep the name
    the first search wrote).

    >>> results_name("smollm2-135m", 20, 3, 4)
    'results-smollm2-135m-20steps.jsonl'
    >>> results_name("smollm2-135m", 20, 8, 4)
    'results-smollm2-135m-20steps-dev8x4.jsonl'
    """
    design = "" if (dev_per_family, samples) == (3, 4) else f"-dev{dev_per_family}x{samples}"
    return f"results-{model}-{steps}steps{design}.jsonl"


def gain_text(d: dict) -> str:
    """`+0.107 (0.027,0.191 n=36)`: a paired gain with its interval, or n/a under 5 problems."""
    from sparring.evaluation.intervals import interval_text

    return f"{d['delta']:+.3f} ({interval_text(d).removeprefix('ci95_delta=')})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default=DEFAULT, help=f"of {', '.join(CONFIGS)}")
    parser.add_argument("--steps", type=int, default=20, help="answerer GRPO steps each")
    parser.add_argument("--dev-per-family", type=int, default=3, help="dev instances per family")
    parser.add_argument("--samples", type=int, default=4, help="samples per dev instance")
    parser.add_argument("--model", default="smollm2-135m", help="tiny-random rehearses the harness")
    parser.add_argument("--out", default="local_outputs/learn-search", help="results folder")
    args = parser.parse_args()
    names = [n for n in args.configs.split(",") if n]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown or args.steps < 1 or args.samples < 1 or args.dev_per_family < 1:
        parser.exit(2, f"learn_search: unknown configuration {unknown} (known: "
                       f"{', '.join(CONFIGS)}) or a count below 1\n")  # fmt: skip

    from sparring.backends.lineage import code_digest
    from sparring.config import load_config
    from sparring.evaluation.calibration import calibrate
    from sparring.phases.answerer import train_answerer
    from sparring.phases.materialize import materialize
    from sparring.problems.families.sets import trained_families

    out = ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / results_name(args.model, args.steps, args.dev_per_family, args.samples)
    results = load_results(results_path)
    learn = ROOT / "configs" / "learn.yaml"
    common = [f"models.answerer.name={args.model}", f"steps.answerer={args.steps}", "rounds=1"]
    base_cfg = load_config(learn, common)
    levels = list(base_cfg.data.families.levels)
    families = trained_families(base_cfg.data.families)

    def dev_rows(model: str) -> list[dict]:
        # base_cfg for every arm: the same temperature, budget and sampling seed
        return calibrate(base_cfg, DEV_SEED, args.dev_per_family, args.samples, families,
                         levels, model=model)  # fmt: skip

    code = code_digest()
    why = stale(results.get("base"), code, base_cfg.digest())
    if why:
        print(f"base: sampled ({why})", flush=True)
        start = time.perf_counter()
        rows = dev_rows("")
        results["base"] = {"name": "base", "problems": problem_means(rows),
                           "seconds": time.perf_counter() - start, "code": code,
                           "config_digest": base_cfg.digest()}  # fmt: skip
        append(results_path, results["base"])
    base = results["base"]["problems"]
    print(f"base: dev reward {mean(base):.3f} over {len(base)} instances", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = os.path.join(tmp, "data")
        materialize(base_cfg, data_dir)  # the training instances: the same for every arm
        for name in names:
            cfg = load_config(learn, [*common, *CONFIGS[name]])
            why = stale(results.get(name), code, cfg.digest())
            if not why:
                print(f"{name}: done before at this code and config, kept", flush=True)
                continue
            print(f"{name}: measured ({why})", flush=True)
            start = time.perf_counter()
            model_dir = os.path.join(tmp, name)
            m = train_answerer(cfg, 1, data_dir, "", None, model_dir)
            rows = dev_rows(model_dir)
            results[name] = {
                "name": name,
                "overrides": CONFIGS[name],
                "completions_trained": m.get("completions_trained", 0.0),
                "train_reward": m.get("reward", 0.0),
                "useful_group_share": m.get("useful_group_share", 0.0),
                "problems": problem_means(rows),
                "seconds": time.perf_counter() - start,
                "code": code,
                "config_digest": cfg.digest(),
            }
            append(results_path, results[name])
            print(f"{name}: {m.get('completions_trained', 0):.0f} completions trained, dev "
                  f"reward {mean(results[name]['problems']):.3f}, "
                  f"{results[name]['seconds'] / 60:.1f} min", flush=True)  # fmt: skip
    print(table(results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
