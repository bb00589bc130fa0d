"""The pool screen of an answerer phase that no generator phase precedes (`phase_schedule:
answerer`, the given-tests arm of issue 45), so that it draws its problems as the self-play arm
does: the answerer it starts from is sampled `steps.frozen_samples` times on every training
problem, and the problems whose samples earned different rewards come first.

Covers: `screen_zone` (sample, run the samples on the tests the reward sees, summarise; the
phase has passed the isolation gate before it).
Does not cover: the sampling itself, the generator phase's too (sparring.serving.duel,
`sample_frozen_pool`: in process or behind the server with `serving.mode: server`), whose own
screen is the frozen answers its tests are rewarded against (sparring.phases.generator); the
statistics (sparring.rewards.frozen) and the draw (sparring.phases.zone).
"""

from __future__ import annotations

import gc
import time

from sparring import backends
from sparring import progress as lines
from sparring.config import Config
from sparring.distributed import ranks
from sparring.phases.zone import in_zone
from sparring.problems import Problem
from sparring.rewards.frozen import frozen_zone
from sparring.sandbox import Sandbox
from sparring.sandbox.limits import SandboxLimits
from sparring.serving.duel import sample_frozen_pool


def screen_zone(
    cfg: Config, limits: SandboxLimits, model: str, pool: list[Problem], stages: list[str],
    seed: int,
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:  # fmt: skip
    """Per problem of `pool`, the zone statistics of `model`'s samples (with the reasoning
    `stages` and the `seed` the phase gives; sparring.rewards.frozen), run in sandboxes of
    `limits`, and the screen's metrics: completions sampled, seconds, problems in the zone. The
    caller has passed the isolation gate (sparring.sandbox.gate) before it."""
    start = time.perf_counter()
    rows = sample_frozen_pool(
        cfg, backends.get(cfg.backend), model, pool, stages, seed, "train-answerer"
    )[0]
    gc.collect()  # the sampled model is dropped: the phase loads its trainable copy next
    solutions = {r["problem_id"]: [s for s in r["solutions"] if s] for r in rows}
    with Sandbox(limits) as sb:
        zone = frozen_zone(cfg.steps.frozen_samples, {p.id: p for p in pool}, solutions, sb)
    seconds = time.perf_counter() - start
    zoned = sum(in_zone(z) for z in zone.values())
    if ranks.world().main:  # the sampling said its own line
        lines.say(f"{lines.LABEL or 'train-answerer'} screen: {zoned} of {len(pool)} in the zone")
    return zone, {
        "screen_sampled": float(len(pool) * cfg.steps.frozen_samples),
        "screen_s": seconds,
        "pool_in_zone": float(zoned),
    }
