"""Launching the training phases on a cluster: Kubeflow Trainer TrainJobs and their processes.

Modules, lightest first:
- `trainjob`: the TrainJob a training phase becomes (spec from the config, names, reading its
  status). Pure: no heavy framework, no network.
- `kube`: a small Kubernetes REST client (urllib) for TrainJobs, their pods and logs.
- `wait`: the wait loop: poll a TrainJob until it ends or times out, streaming rank 0's log.
- `launch`: what a KFP training component does with a TrainJob: stage the config in S3, create,
  wait, fetch the outputs and metrics back into the task.
- `entry`: the one entry point every training process runs (`python -m sparring.cluster.entry`,
  under `torchrun`, or on TrainJob nodes).
What every rank uses inside a phase (ranks, recipes) is sparring.distributed's.
"""
