"""The `sparring` command line: argument parsing and thin handlers, one module per command group.

Covers: `main` (the top-level parser, `sparring = sparring.cli.main:main`), `common` (`--config`,
`--set`, command groups), and the groups: `config`, `problems`, `reward`, `sandbox`, `train`
(train, phase), `pipeline` (compile, run, submit, schedule, runs), `evaluate` (eval, infer).

Does not cover: what the commands do. Handlers parse, check user input, call the library
(sparring.problems, sparring.local_run, sparring.evaluation, sparring.plain_runner, sandbox,
…) and print; heavy frameworks (torch, kfp, mlflow, transformers) are imported inside the
handlers, so `sparring --help` stays fast. This package is empty on purpose: import the modules.
"""
