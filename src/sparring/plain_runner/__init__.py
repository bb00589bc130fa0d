"""The plain-Python runner (`sparring train`): every phase of a run in one process, in the order of
sparring.phases.schedule, with checkpoints after each phase and resume (`loop`, `checkpoints`). Not
the
Kubeflow DAG (pipelines/) nor the kfp.local runner (sparring.local_run). Importing it is cheap.
"""
