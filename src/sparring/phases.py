"""The phase functions that the pipeline components and the plain runner call.

Covers, one function per phase (paths are local files/folders, e.g. KFP artifact `.path`s; each
returns a flat dict[str, float] of metrics, writes its outputs, and is idempotent given its inputs
and cfg.seed):
- `materialize`: load, cap, sandbox-check, split and write the datasets and the carried-in bank;
- `train_answerer`: GRPO of the answerer on baseline + banked adversarial tests;
- `train_generator`: sample the frozen answerer once, then GRPO of the test writer (or proposer)
  rewarded against those cached solutions; writes the generated tests and frozen solutions;
- `validate_tests`: keep generated tests that pass the reference and are not duplicates; append
  the survivors to the adversarial test bank.

Topology: dual loads one model per role per phase; shared keeps ONE base per process with an
`answerer` and a `generator` LoRA adapter (sparring.models.shared_peft_model), and an artifact is
just that adapter + its base name. `cfg.dry_run`: no model is loaded, no GRPO update; artifacts are
copied (or point at the base) and generated tests come from mutating baseline tests.
Does not cover: the order of phases (training.schedule), checkpoints (training.checkpoints) or
MLflow logging (the caller logs the returned metrics).

Why one module (for now): each phase function is the body of one KFP component and they share
the load/train/save helpers; one module per phase is tracked with the layout issue (#12).
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from sparring import prompts, rewards
from sparring.budget import completion_targets, completion_tokens
from sparring.config import Config
from sparring.errors import SparringError
from sparring.problems import (
    Problem,
    compute_trivial_passes,
    load_humaneval,
    load_source,
    load_sources,
    read_jsonl,
    write_jsonl,
)
from sparring.problems import split as split_problems

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- helpers


def derived_seed(cfg: Config, round_index: int, phase: str) -> int:
    """A seed for one phase of one round, stable across processes."""
    text = f"{cfg.seed}:{round_index}:{phase}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def sandbox_limits(cfg: Config) -> Any:
    from sparring.sandbox import SandboxLimits

    return SandboxLimits.from_config(cfg.sandbox)


def read_lines(path: str | Path | None) -> list[dict[str, Any]]:
    if not path or not Path(path).is_file():
        return []
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def write_lines(path: str | Path, rows: list[dict[str, Any]]) -> None:
    """Write JSONL atomically (temp file + rename)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}-", dir=p.parent)
    with os.fdopen(fd, "w") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in rows))
    os.replace(tmp, p)


def _train_problems(data_dir: str) -> list[Problem]:
    path = Path(data_dir) / "train.jsonl"
    if not path.is_file():
        raise SparringError(f"{path}: missing; run the materialize phase first")
    problems = read_jsonl(path)
    if not problems:
        raise SparringError(f"{path}: no training problems")
    return problems


def draw_problems(cfg: Config, problems: list[Problem], round_index: int, phase: str) -> list:
    """`steps.problems_per_phase` problems drawn with a seed derived from cfg.seed and round."""
    n = cfg.steps.problems_per_phase
    if not n or n >= len(problems):
        return list(problems)
    rng = random.Random(derived_seed(cfg, round_index, phase))
    return rng.sample(problems, n)


ZONE_FILE = "zone.json"


def read_zone(bank_path: str | None) -> dict[str, dict[str, float]]:
    """Per problem, the answerer's rollout rewards seen so far (n, mean, spread), written by
    validation next to the bank it outputs; {} when there is none yet."""
    if not bank_path:
        return {}
    path = Path(bank_path).parent / ZONE_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def in_zone(stats: dict[str, float] | None) -> bool:
    """Rewards that differed within the problem's group: its pass rate is strictly between
    0 and 1, so GRPO gets a non-zero advantage there."""
    return bool(stats) and stats.get("spread", 0.0) > 0.0


def zone_stats(values: list[float]) -> dict[str, float]:
    return {
        "n": float(len(values)),
        "mean": sum(values) / len(values) if values else 0.0,
        "spread": (max(values) - min(values)) if values else 0.0,
    }


_DIFFICULTY_ORDER = {"easy": 0, "medium": 1, "hard": 2}


def draw_in_zone(
    cfg: Config,
    problems: list[Problem],
    zone: dict[str, dict[str, float]],
    round_index: int,
    phase: str,
) -> list[Problem]:
    """DAPO's dynamic sampling, at the level of problems: draw `steps.problems_per_phase`
    problems, first those whose earlier rollouts had differing rewards (the zone), then those
    never tried, and last those whose every rollout earned the same (a flat group trains
    nothing). With `steps.easy_first`, the untried come easy, then medium, then hard: a weak
    model's zone is most likely among easy problems. Seeded like `draw_problems`, which it
    equals when there is no zone estimate and easy_first is off."""
    n = cfg.steps.problems_per_phase
    if not n or n >= len(problems) or not (zone or cfg.steps.easy_first):
        return draw_problems(cfg, problems, round_index, phase)
    rng = random.Random(derived_seed(cfg, round_index, phase))
    shuffled = rng.sample(problems, len(problems))

    def rank(p: Problem) -> int:
        stats = zone.get(p.id)
        if in_zone(stats):
            return 0
        if stats:
            return 4  # flat: every rollout earned the same
        return 1 + (_DIFFICULTY_ORDER.get(p.difficulty, 1) if cfg.steps.easy_first else 0)

    return sorted(shuffled, key=rank)[:n]


def bank_tests(bank_path: str | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for row in read_lines(bank_path):
        tests = out.setdefault(row["problem_id"], [])
        if row["test"] not in tests:
            tests.append(row["test"])
    return out


def _base_name(cfg: Config, role: str, init_model: str | None) -> str:
    from sparring.models import base_name_of, read_meta

    if init_model is None:
        return cfg.model_for(role).name
    meta = read_meta(init_model) if os.path.isdir(init_model) else None
    if meta is None:
        return init_model
    if meta.get("tuning_mode") in ("lora", "base"):
        return str(meta["base"])
    return str(meta.get("base") or base_name_of(init_model))


def _load_trainable(cfg: Config, role: str, init_model: str | None):
    """(model, tokenizer, peft_config) ready for GRPO of `role`."""
    from sparring import models

    mc = cfg.model_for(role)
    if cfg.backend == "mlx":  # LoRA layers are added (or kept, from an adapter) by train_mlx
        from sparring import mlx_backend

        model, tok = mlx_backend.load(init_model or mc.name)
        return model, tok, None
    if cfg.topology == "shared":
        model, tok = models.shared_peft_model(
            cfg.shared_model, cfg.lora, device=mc.device, dtype=mc.dtype
        )
        models.ensure_adapter(model, role, init_model, cfg.lora)
        return model, tok, None
    source = init_model or mc.name
    meta = models.read_meta(source) if os.path.isdir(source) else None
    if cfg.tuning_mode == "lora":
        if meta and meta.get("tuning_mode") == "lora":
            model, tok = models.load_model(source, device=mc.device, dtype=mc.dtype, trainable=True)
            return model, tok, None
        model, tok = models.load_model(source, device=mc.device, dtype=mc.dtype)
        return model, tok, models.peft_lora_config(cfg.lora)
    model, tok = models.load_model(source, device=mc.device, dtype=mc.dtype)
    return model, tok, None


def _save_trained(
    cfg: Config, model: Any, tok: Any, out_model: str, role: str, base: str, meta: dict[str, Any]
) -> None:
    from sparring import models

    record = {"base": base, "role": role, "topology": cfg.topology, **meta}
    if cfg.backend == "mlx":
        from sparring import mlx_backend

        mlx_backend.save_adapter(model, out_model, record, tokenizer=tok)
        return
    if hasattr(model, "peft_config") and "ref" in model.peft_config:
        model.delete_adapter("ref")  # TRL's frozen reference copy (beta > 0)
    models.save_model(model, tok, out_model, record)
    if hasattr(model, "sparring_sources"):  # shared base: the adapter now equals the artifact
        model.sparring_sources[role] = out_model


def _train(
    cfg, model, tok, dataset, reward_fn, steps: int, tmp: str, seed: int, peft_config,
    problems: list[Problem], role: str,
):  # fmt: skip
    """GRPO of `role` on the configured backend; returns (trained model, metrics)."""
    if cfg.backend == "mlx":
        import dataclasses

        from sparring.backends import train_mlx

        grpo = dataclasses.replace(
            cfg.grpo, max_completion_length=completion_tokens(cfg, tok, problems, role)
        )
        cfg = dataclasses.replace(cfg, grpo=grpo)
        return model, train_mlx(cfg, model, tok, dataset.to_list(), reward_fn, steps, seed)
    from sparring.training.grpo import run_grpo

    return run_grpo(
        model, tok, dataset, reward_fn, cfg, steps, tmp, seed, peft_config,
        reference_solutions=completion_targets(problems, role),
    )  # fmt: skip


def _check_shared_beta(cfg: Config) -> None:
    if cfg.topology == "shared" and cfg.grpo.beta != 0.0:
        raise SparringError(
            "grpo.beta: the shared topology trains named adapters and needs beta 0 "
            "(TRL's reference adapter assumes a single 'default' adapter)"
        )


# --------------------------------------------------------------------------- materialize


def materialize(cfg: Config, out_dir: str, bank_in: str | None = None) -> dict[str, float]:
    """Write train/val/eval datasets, the carried-in bank and a manifest into `out_dir`."""
    from sparring.sandbox import Sandbox

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    problems = load_sources(list(cfg.data.train))
    loaded = len(problems)
    if cfg.data.max_problems and len(problems) > cfg.data.max_problems:
        keep = set(p.id for p in random.Random(cfg.seed).sample(problems, cfg.data.max_problems))
        problems = [p for p in problems if p.id in keep]
    with Sandbox(sandbox_limits(cfg)) as sb:
        reports = sb.run_many([(p.reference_solution, p.baseline_tests) for p in problems])
    infra = [p.id for p, r in zip(problems, reports, strict=True) if r.infra_error]
    if problems and len(infra) == len(problems):
        raise SparringError(
            "materialize: the sandbox failed on every reference solution "
            f"({reports[0].infra_error})"
        )
    checked = [p for p, r in zip(problems, reports, strict=True) if r.pass_rate == 1.0]
    failing = len(problems) - len(checked)
    for p, r in zip(problems, reports, strict=True):
        if r.pass_rate != 1.0:
            log.warning("dropping %s: reference solution fails its tests (%s)", p.id, r.pass_rate)
    if not checked:
        raise SparringError("materialize: no problem's reference solution passes its tests")
    train, val = split_problems(checked, cfg.data.val_fraction, cfg.seed)
    try:
        if cfg.data.eval == "humaneval":
            eval_set = load_humaneval(cfg.data.humaneval_limit)
        else:
            eval_set = load_source(cfg.data.eval)
    except SparringError:
        raise
    except Exception as exc:
        raise SparringError(f"data.eval: cannot load {cfg.data.eval!r}: {exc}") from None
    if not eval_set:
        raise SparringError(f"data.eval: {cfg.data.eval!r} holds no problems")
    if cfg.data.humaneval_limit and cfg.data.eval == "humaneval":
        eval_set = eval_set[: cfg.data.humaneval_limit]
    from sparring.evaluation.humaneval import sandbox_limits as trusted_limits

    with Sandbox(trusted_limits(cfg)) as sb:  # baseline and HumanEval tests are trusted
        train, val, eval_set = (
            compute_trivial_passes(group, sb) for group in (train, val, eval_set)
        )
    honest = _discrimination_metrics([*train, *val])
    for pid in honest.pop("ids_without"):
        log.warning("%s: every test is passed by some trivial solution: it earns no reward", pid)
    write_jsonl(train, out / "train.jsonl")
    write_jsonl(val, out / "val.jsonl")
    write_jsonl(eval_set, out / "eval.jsonl")
    bank = read_lines(bank_in)
    write_lines(out / "bank.jsonl", bank)
    manifest = {
        "loaded": loaded,
        "checked": len(checked),
        "dropped_failing": failing,
        "train": len(train),
        "val": len(val),
        "eval": len(eval_set),
        "bank": len(bank),
        "config_digest": cfg.digest(),
        "seed": cfg.seed,
        **honest,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return {
        "problems_loaded": float(loaded),
        "problems_train": float(len(train)),
        "problems_val": float(len(val)),
        "problems_eval": float(len(eval_set)),
        "problems_dropped": float(failing),
        "bank_size": float(len(bank)),
        **{k: float(v) for k, v in honest.items()},
    }


def _discrimination_metrics(problems: list[Problem]) -> dict[str, Any]:
    """How much of the problems' tests trivial code passes (what honest credit leaves)."""
    from sparring.trivial import discriminating_indices

    n_tests = sum(len(p.baseline_tests) for p in problems)
    n_disc = 0
    without: list[str] = []
    for p in problems:
        k = len(discriminating_indices(len(p.baseline_tests), p.trivial_passes))
        n_disc += k
        if k == 0:
            without.append(p.id)
    return {
        "tests_discriminating_share": n_disc / n_tests if n_tests else 0.0,
        "problems_without_discriminating_tests": len(without),
        "ids_without": without,
    }


# --------------------------------------------------------------------------- answerer


def answerer_rows(
    problems: list[Problem], bank: dict[str, list[str]], stages: list[str]
) -> list[dict[str, Any]]:
    """One row per problem: the prompt and what the answerer's reward needs (tests = baseline
    + banked, which tests discriminate, and the trivial solutions' results on them)."""
    rows = []
    for p in problems:
        banked = bank.get(p.id, [])
        mask, trivial = rewards.credit_view(len(p.baseline_tests), p.trivial_passes, len(banked))
        rows.append(
            {
                "prompt": prompts.answerer_messages(p, stages),
                "problem_id": p.id,
                "tests": list(p.baseline_tests) + banked,
                "discriminating": mask,
                "trivial_results": trivial,
                "difficulty": p.difficulty,
                "function_name": p.function_name,
                "reference_solution": p.reference_solution,
            }
        )
    return rows


def answerer_dataset(problems: list[Problem], bank: dict[str, list[str]], stages: list[str]):
    from datasets import Dataset

    return Dataset.from_list(answerer_rows(problems, bank, stages))


def train_answerer(
    cfg: Config,
    round_index: int,
    data_dir: str,
    bank_path: str,
    init_model: str | None,
    out_model: str,
    phase: str = "answerer",
) -> dict[str, float]:
    """GRPO of the answerer for `cfg.steps.answerer` steps; writes the model artifact."""
    from sparring.training.schedule import reasoning_stages

    init_model = init_model or None  # "" from a pipeline means "the base model"
    zone = read_zone(bank_path)
    problems = draw_in_zone(cfg, _train_problems(data_dir), zone, round_index, phase)
    bank = bank_tests(bank_path)
    stages = reasoning_stages(cfg, round_index)
    base = _base_name(cfg, "answerer", init_model)
    meta = {"round": round_index, "phase": phase, "stages": stages}
    n_bank = sum(len(bank.get(p.id, [])) for p in problems)
    metrics: dict[str, float] = {
        "problems": float(len(problems)),
        "problems_in_zone": float(sum(in_zone(zone.get(p.id)) for p in problems)),
        "bank_tests_used": float(n_bank),
        "stages": float(len(stages)),
        "dry_run": float(cfg.dry_run),
    }
    if cfg.dry_run or cfg.steps.answerer == 0:
        from sparring.models import copy_model

        copy_model(init_model or base, out_model, {**meta, "role": "answerer"})
        return metrics
    _check_shared_beta(cfg)
    from sparring.duel import AnswererRewardFn
    from sparring.sandbox import Sandbox

    model, tok, peft_config = _load_trainable(cfg, "answerer", init_model)
    dataset = answerer_dataset(problems, bank, stages)
    seed = derived_seed(cfg, round_index, phase)
    with Sandbox(sandbox_limits(cfg)) as sb, tempfile.TemporaryDirectory() as tmp:
        reward_fn = AnswererRewardFn(sb, cfg.rewards)
        model, trl_metrics = _train(
            cfg, model, tok, dataset, reward_fn, cfg.steps.answerer, tmp, seed, peft_config,
            problems, "answerer",
        )  # fmt: skip
    metrics.update(trl_metrics)
    metrics.update(_reward_metrics(reward_fn.rewards, reward_fn.history, cfg))
    _save_trained(cfg, model, tok, out_model, "answerer", base, meta)
    return metrics


def _reward_metrics(values: list[float | None], history: list[dict[str, float]], cfg: Config):
    kept = [v for v in values if v is not None]
    out = {
        "reward": sum(kept) / len(kept) if kept else 0.0,
        "reward_none": float(len(values) - len(kept)),
    }
    from sparring.game import flat_group_share

    out["flat_group_share"] = flat_group_share(values, cfg.grpo.num_generations)
    keys = {k for h in history for k in h}
    for k in sorted(keys):
        vals = [h[k] for h in history if k in h]
        out[k] = sum(vals) / len(vals)
    return out


# --------------------------------------------------------------------------- generator


def _equality(test: str) -> tuple[ast.expr, ast.expr] | None:
    """(call, expected) of `assert call == expected`; None for any other shape."""
    try:
        node = ast.parse(test).body[0]
    except (SyntaxError, IndexError, ValueError):
        return None
    if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare):
        return None
    cmp = node.test
    if len(cmp.ops) != 1 or not isinstance(cmp.ops[0], ast.Eq):
        return None
    return cmp.left, cmp.comparators[0]


def fallback_tests(problem: Problem, n: int = 4) -> list[str]:
    """The dry run's stand-in for generated tests: pairs of baseline equality tests joined into
    one `assert (a, b) == (x, y)`. Valid by construction (the reference passes both halves),
    new as text, and as hard to pass trivially as the harder half, so a dry run exercises the
    whole validate -> bank -> selection path the way real generated tests do."""
    parts = [e for e in (_equality(t) for t in problem.baseline_tests) if e]
    out: list[str] = []
    for gap in range(1, len(parts)):
        for i in range(len(parts) - gap):
            (c1, e1), (c2, e2) = parts[i], parts[i + gap]
            joined = ast.Compare(
                ast.Tuple([c1, c2], ast.Load()), [ast.Eq()], [ast.Tuple([e1, e2], ast.Load())]
            )
            out.append(ast.unparse(ast.Assert(joined)))
            if len(out) == n:
                return out
    return out


def sample_frozen_solutions(
    cfg: Config, model: Any, tok: Any, problems: list[Problem], round_index: int, progress=True
) -> list[dict[str, Any]]:
    """`steps.frozen_samples` solutions per problem, sampled once ("" when unparseable)."""
    from sparring.backends import sample
    from sparring.training.schedule import reasoning_stages

    stages = reasoning_stages(cfg, round_index)
    texts = sample(
        cfg.backend,
        model,
        tok,
        [prompts.answerer_messages(p, stages) for p in problems],
        max_new_tokens=completion_tokens(cfg, tok, problems),
        temperature=cfg.grpo.temperature,
        top_p=cfg.grpo.top_p,
        num_samples=cfg.steps.frozen_samples,
        seed=derived_seed(cfg, round_index, "frozen"),
        progress=progress,
    )
    return [
        {
            "problem_id": p.id,
            "solutions": [prompts.extract_code(t, p.function_name) or "" for t in samples],
        }
        for p, samples in zip(problems, texts, strict=True)
    ]


def _load_frozen(cfg: Config, frozen_answerer: str):
    from sparring import models

    mc = cfg.model_for("answerer")
    if cfg.backend == "mlx":
        from sparring import mlx_backend

        return mlx_backend.load(frozen_answerer)
    if cfg.topology == "shared":
        model, tok = models.shared_peft_model(
            cfg.shared_model, cfg.lora, device=mc.device, dtype=mc.dtype
        )
        meta = models.read_meta(frozen_answerer) if os.path.isdir(frozen_answerer) else None
        source = frozen_answerer if meta and meta.get("tuning_mode") == "lora" else None
        models.ensure_adapter(model, "answerer", source, cfg.lora)
        return model, tok
    return models.load_model(frozen_answerer, device=mc.device, dtype=mc.dtype, merge=True)


def train_generator(
    cfg: Config,
    round_index: int,
    data_dir: str,
    frozen_answerer: str,
    init_model: str | None,
    out_model: str,
    out_tests: str,
    out_frozen_solutions: str,
) -> dict[str, float]:
    """GRPO of the generator against a frozen answerer snapshot (sampled once)."""
    init_model = init_model or None
    frozen_answerer = frozen_answerer or cfg.model_for("answerer").name
    problems = draw_in_zone(cfg, _train_problems(data_dir), {}, round_index, "generator")
    base = _base_name(cfg, "generator", init_model)
    meta = {"round": round_index, "phase": "generator", "mode": cfg.generator_mode}
    metrics: dict[str, float] = {"problems": float(len(problems)), "dry_run": float(cfg.dry_run)}
    if cfg.dry_run or cfg.steps.generator == 0:
        from sparring.models import copy_model

        write_lines(out_frozen_solutions, [{"problem_id": p.id, "solutions": []} for p in problems])
        rows = [
            {"problem_id": p.id, "tests": fallback_tests(p), "round": round_index} for p in problems
        ]
        write_lines(out_tests, rows)
        copy_model(init_model or base, out_model, {**meta, "role": "generator"})
        metrics["generated_tests"] = float(sum(len(r["tests"]) for r in rows))
        return metrics
    _check_shared_beta(cfg)
    import gc
    import time

    from sparring import duel
    from sparring.backends import sample
    from sparring.generation import LAST_STATS
    from sparring.sandbox import Sandbox

    start = time.perf_counter()
    frozen, ftok = _load_frozen(cfg, frozen_answerer)
    frozen_rows = sample_frozen_solutions(cfg, frozen, ftok, problems, round_index)
    metrics["frozen_sampling_s"] = time.perf_counter() - start
    metrics["frozen_tokens_per_s"] = LAST_STATS["tokens"] / max(LAST_STATS["seconds"], 1e-9)
    write_lines(out_frozen_solutions, frozen_rows)
    solutions = {r["problem_id"]: [s for s in r["solutions"] if s] for r in frozen_rows}
    metrics["frozen_parse_rate"] = sum(len(v) for v in solutions.values()) / max(
        1, len(problems) * cfg.steps.frozen_samples
    )
    proposer = cfg.generator_mode == "problems"
    if cfg.topology != "shared" and not proposer:
        del frozen  # the cached solutions are all the phase needs from the snapshot
        gc.collect()
    model, tok, peft_config = _load_trainable(cfg, "generator", init_model)
    seed = derived_seed(cfg, round_index, "generator")
    w = cfg.rewards
    weights = {
        "validity": w.validity,
        "hardness": w.hardness,
        "diversity": w.diversity,
        "consistency": w.consistency,
    }
    from datasets import Dataset

    role = "proposer" if proposer else "generator"
    with Sandbox(sandbox_limits(cfg)) as sb, tempfile.TemporaryDirectory() as tmp:
        if proposer:
            reward_fn = _ProposerRewardFn(cfg, sb, frozen, ftok, round_index)
            rows = [{"prompt": prompts.proposer_messages(p), "problem_id": p.id} for p in problems]
        else:
            infos = {p.id: duel.problem_info(p, solutions[p.id]) for p in problems}
            scorer = duel.GeneratorScorer(
                infos,
                sb,
                weights,
                w.duplicate_similarity,
                reference_expected=w.reference_expected,
            )
            reward_fn = duel.GeneratorRewardFn(scorer)
            rows = [{"prompt": prompts.generator_messages(p), "problem_id": p.id} for p in problems]
        model, trl_metrics = _train(
            cfg,
            model,
            tok,
            Dataset.from_list(rows),
            reward_fn,
            cfg.steps.generator,
            tmp,
            seed,
            peft_config,
            problems,
            role,
        )
        metrics.update(trl_metrics)
        metrics.update(_reward_metrics(reward_fn.rewards, reward_fn.history, cfg))
        if cfg.topology == "shared":
            model.set_adapter("generator")
        final = sample(
            cfg.backend,
            model,
            tok,
            [r["prompt"] for r in rows],
            max_new_tokens=completion_tokens(cfg, tok, problems, role),
            temperature=cfg.grpo.temperature,
            top_p=cfg.grpo.top_p,
            num_samples=1,
            seed=seed,
        )
    if proposer:
        out_rows = [
            {
                "problem_id": p.id,
                "tests": [],
                "round": round_index,
                "proposed": reward_fn.proposed.get(p.id, []),
            }
            for p in problems
        ]
    else:
        out_rows = []
        for p, (text,) in zip(problems, final, strict=True):
            tests = list(scorer.generated.get(p.id, []))
            for t in prompts.extract_tests(text, p.function_name):
                if t not in tests:
                    tests.append(t)
            out_rows.append({"problem_id": p.id, "tests": tests, "round": round_index})
    write_lines(out_tests, out_rows)
    metrics["generated_tests"] = float(sum(len(r["tests"]) for r in out_rows))
    _save_trained(cfg, model, tok, out_model, "generator", base, meta)
    return metrics


class _ProposerRewardFn:
    """Proposer mode: goldilocks on the frozen solver's pass rate on each proposed problem."""

    __name__ = "proposer_reward"

    def __init__(self, cfg: Config, sandbox: Any, frozen: Any, ftok: Any, round_index: int):
        self.cfg, self.sandbox, self.frozen, self.ftok = cfg, sandbox, frozen, ftok
        self.round_index = round_index
        self.rewards: list[float | None] = []
        self.history: list[dict[str, float]] = []
        self.proposed: dict[str, list[dict[str, Any]]] = {}

    def _solve(self, proposed: list[dict[str, Any]]) -> list[list[str]]:
        from sparring.backends import sample

        msgs, refs = [], []
        for i, p in enumerate(proposed):
            problem = Problem(
                f"proposed-{i}",
                p["description"],
                p["function_signature"],
                p["baseline_tests"],
                p["reference_solution"],
            )
            refs.append(problem)
            msgs.append(prompts.answerer_messages(problem))
        if self.cfg.topology == "shared":
            self.frozen.set_adapter("answerer")
        try:
            return sample(
                self.cfg.backend,
                self.frozen,
                self.ftok,
                msgs,
                max_new_tokens=completion_tokens(self.cfg, self.ftok, refs),
                temperature=self.cfg.grpo.temperature,
                num_samples=self.cfg.steps.frozen_samples,
                seed=len(self.rewards),
            )
        finally:
            if self.cfg.topology == "shared":
                self.frozen.set_adapter("generator")

    def __call__(self, prompts, completions, problem_id, **kwargs):
        from sparring.duel import completion_text, proposer_rewards

        texts = [completion_text(c) for c in completions]
        out, valid = proposer_rewards(
            texts, self.sandbox, self._solve, self.cfg.rewards.goldilocks_target
        )
        for pid, p in zip(problem_id, valid, strict=True):
            if p:
                self.proposed.setdefault(pid, []).append(p)
        self.history.append({"proposal_validity": sum(v is not None for v in valid) / len(valid)})
        self.rewards.extend(out)
        return out


# --------------------------------------------------------------------------- validation


def validate_tests(
    cfg: Config,
    round_index: int,
    data_dir: str,
    generated_tests: str,
    frozen_solutions: str,
    bank_in: str,
    bank_out: str,
) -> dict[str, float]:
    """Validate generated tests in the sandbox; append survivors to the bank (bank_out)."""
    from sparring.sandbox import Sandbox, normalize
    from sparring.sandbox import validate_tests as sandbox_validate
    from sparring.sandbox.oracle import with_reference_expected

    problems = {p.id: p for p in _train_problems(data_dir)}
    bank = read_lines(bank_in)
    existing: dict[str, list[str]] = {}
    for row in bank:
        existing.setdefault(row["problem_id"], []).append(row["test"])
    solutions = {
        r["problem_id"]: [s for s in r["solutions"] if s] for r in read_lines(frozen_solutions)
    }
    generated = read_lines(generated_tests)
    threshold = cfg.rewards.duplicate_similarity
    total = valid = honest = discriminating = duplicates = 0
    new_rows: list[dict[str, Any]] = []
    infra = 0
    with Sandbox(sandbox_limits(cfg)) as sb:
        zone = _frozen_zone(cfg, problems, solutions, sb)
        for row in generated:
            p = problems.get(row["problem_id"])
            tests = [t for t in row.get("tests", []) if isinstance(t, str)]
            if p is None or not tests:
                continue
            if cfg.rewards.reference_expected:
                tests = with_reference_expected(p.reference_solution, tests, sb)
            report = sandbox_validate(p.reference_solution, tests, solutions.get(p.id, []), sb)
            if report.infra_error:
                infra += 1
                continue
            trivially_passed = _trivially_passed(p, tests, sb)
            known = list(p.baseline_tests) + existing.get(p.id, [])
            known_keys = {normalize(t) for t in known}
            for v in report.verdicts:
                total += 1
                dup = (
                    v.duplicate
                    or normalize(v.test) in known_keys
                    or any(rewards.jaccard(v.test, k) >= threshold for k in known)
                )
                duplicates += dup
                if not v.valid:
                    continue
                valid += 1
                if v.test in trivially_passed:
                    continue  # trivial code passes it: no credit to anyone, not banked
                honest += 1
                discriminating += bool(v.breaks)
                if dup:
                    continue
                new_rows.append(
                    {
                        "problem_id": p.id,
                        "test": v.test,
                        "round": round_index,
                        "breaks": len(v.breaks),
                    }
                )
                known.append(v.test)
                known_keys.add(normalize(v.test))
    write_lines(bank_out, bank + new_rows)
    (Path(bank_out).parent / ZONE_FILE).write_text(json.dumps(zone, sort_keys=True))
    return {
        "candidates": float(total),
        "validity": valid / total if total else 0.0,
        "honest_share": honest / total if total else 0.0,
        "break_rate": discriminating / total if total else 0.0,
        "discrimination": discriminating / honest if honest else 0.0,
        "zone_problems": float(sum(in_zone(z) for z in zone.values())),
        "zone_estimated": float(len(zone)),
        "duplicate_rate": duplicates / total if total else 0.0,
        "new_tests": float(len(new_rows)),
        "bank_size": float(len(bank) + len(new_rows)),
        "infra_errors": float(infra),
    }


def _trivially_passed(problem: Problem, tests: list[str], sandbox: Any) -> set[str]:
    """The tests among `tests` that some trivial solution of the problem passes."""
    from sparring.duel import problem_info, run_cached

    family = problem_info(problem, []).trivial_solutions
    rows = run_cached(sandbox, [(code, tests) for code in family], None)
    return {t for row in rows for t, ok in zip(tests, row, strict=True) if ok is not False}


def _frozen_zone(
    cfg: Config, problems: dict[str, Problem], solutions: dict[str, list[str]], sandbox: Any
) -> dict[str, dict[str, float]]:
    """Per problem the frozen answerer was sampled on: the honest rewards of its solutions
    (unparseable ones earn 0), summarised by `zone_stats` for the next answerer phase."""
    from sparring.duel import run_cached

    zone: dict[str, dict[str, float]] = {}
    for pid, codes in solutions.items():
        p = problems.get(pid)
        if p is None:
            continue
        mask, trivial = rewards.credit_view(len(p.baseline_tests), p.trivial_passes)
        rows = run_cached(sandbox, [(c, p.baseline_tests) for c in codes], None) if codes else []
        values = [rewards.answerer_credit(row, mask, trivial, p.difficulty).reward for row in rows]
        kept = [v for v in values if v is not None]
        kept += [0.0] * (cfg.steps.frozen_samples - len(codes))  # unparseable samples
        zone[pid] = zone_stats(kept)
    return zone


def copy_file(src: str, dst: str) -> None:
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
