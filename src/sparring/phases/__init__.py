"""The phases of self-play, one module each, each run by a row of the phase table (`table`) as
one KFP task (and, for most, as one step of the plain runner, sparring.plain_runner.loop).

Modules: `materialize` (datasets and the carried-in bank), `init_models` (what round 1 starts
from), `warm_start` (SFT on reference solutions), `generator` (GRPO of the test writer against a
frozen answerer), `validate` (the sandbox keeps honest tests; the bank grows), `answerer` (GRPO
of the answerer on problems plus banked tests), `snapshot` (the manifest evaluation reads),
`evaluate` (every snapshot, the report), `select` (the champion), `fuzz` (the generator that
does not learn, in the generator phase's place), `game` and `game_loop` (a game's phases and its
training loop); `schedule` the order of phases, `table` the one table of phases (every DAG
task and every runner's phase is a row of it), `kfp_tasks` what each row does as a KFP task.
`common` and `zone` hold what they share; `kfp_io` what every component does at its edges.
Paths are local files or folders (KFP artifact `.path`s); each phase returns a flat dict of
metrics and is idempotent given its inputs and cfg.seed. Importing the package imports nothing.
"""
