"""Multi-process training's low-level pieces, which the backends and phases use on every rank.

Modules: `ranks` (torch.distributed helpers: the process group, rank-0 work shared with every
rank) and `recipes` (the distributed recipe as GRPOConfig keywords: DDP, FSDP, DeepSpeed ZeRO-3,
vLLM colocate or server). Launching a run on a cluster is sparring.cluster's.
"""
