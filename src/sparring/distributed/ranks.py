"""Which process this is among the training processes, and the little they share outside TRL.

Covers: `world()` (rank, world size, local rank and node rank from the variables `torchrun`,
`accelerate launch` and Kubeflow Trainer's torch runtime set), `init` (the default process
group: NCCL on GPUs, gloo on CPUs; TRL/Accelerate reuse it), `barrier`, `all_gather`,
`shard_and_gather` (each rank does a share of a list of work and every rank gets the whole
result in order: how the frozen snapshot's solutions are sampled once and shared),
`merge_lists` (per-key lists gathered from every rank) and `close`.
One process (no `WORLD_SIZE`, or 1) needs no process group: every helper then acts locally.
Does not cover: the process group TRL uses for training (Accelerate's), or launching.
torch is imported only inside the functions that talk to other ranks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0
    node_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def local_main(self) -> bool:
        return self.local_rank == 0


def world() -> World:
    """This process's place, from RANK, WORLD_SIZE, LOCAL_RANK and GROUP_RANK (torchrun)."""
    env = os.environ
    return World(
        rank=int(env.get("RANK", 0)),
        size=int(env.get("WORLD_SIZE", 1)),
        local_rank=int(env.get("LOCAL_RANK", 0)),
        node_rank=int(env.get("GROUP_RANK", env.get("NODE_RANK", 0))),
    )


def _dist():
    import torch.distributed as dist

    return dist


def active() -> bool:
    """True when several processes train and their process group is up."""
    if world().size <= 1:
        return False
    dist = _dist()
    return dist.is_available() and dist.is_initialized()


def init() -> World:
    """Start the default process group when several processes run (once; idempotent)."""
    w = world()
    if w.size <= 1:
        return w
    import torch

    dist = _dist()
    if not dist.is_initialized():
        if torch.cuda.is_available():
            torch.cuda.set_device(w.local_rank)
            dist.init_process_group(backend="nccl")
        else:
            dist.init_process_group(backend="gloo")
    return w


def barrier() -> None:
    if active():
        _dist().barrier()


def all_gather(obj: T) -> list[T]:
    """`obj` of every rank, in rank order (`[obj]` for one process)."""
    if not active():
        return [obj]
    dist = _dist()
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def shard_and_gather(items: Sequence[T], fn: Callable[[list[T]], list[R]]) -> list[R]:
    """`fn(items)` computed in shares: rank r runs `fn(items[r::size])`, and every rank gets all
    results in the order of `items` (`fn` must return one result per item). Starts the process
    group if several processes run and none is up yet."""
    init()
    if not active():
        return list(fn(list(items)))
    size, rank = _dist().get_world_size(), _dist().get_rank()
    share = list(items[rank::size])
    mine = list(fn(share)) if share else []
    if len(mine) != len(share):
        raise ValueError("shard_and_gather: fn must return one result per item")
    shares = all_gather(mine)
    out: list[Any] = [None] * len(items)
    for r, share in enumerate(shares):
        for k, value in enumerate(share):
            out[r + k * size] = value
    return out


def merge_lists(mapping: dict[str, list[T]]) -> dict[str, list[T]]:
    """Per key, the lists of every rank concatenated in rank order without repeats (keys in the
    order first seen): what every rank produced, e.g. the tests each rank's completions wrote."""
    init()
    if not active():
        return {k: list(v) for k, v in mapping.items()}
    merged: dict[str, list[T]] = {}
    for part in all_gather(mapping):
        for key, values in part.items():
            bucket = merged.setdefault(key, [])
            bucket.extend(v for v in values if v not in bucket)
    return merged


def close() -> None:
    """Tear the process group down at the end of a run (no-op for one process)."""
    if active():
        _dist().destroy_process_group()
