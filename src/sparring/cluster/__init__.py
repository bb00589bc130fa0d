"""Scale-out of the training phases: Kubeflow Trainer TrainJobs and multi-process runs.

Modules, lightest first:
- `trainjob`: the TrainJob a training phase becomes (spec from the config, names, reading its
  status). Pure: no heavy framework, no network.
- `recipes`: the distributed recipe as GRPOConfig keywords (DDP, FSDP, DeepSpeed ZeRO-3, vLLM
  colocate or server). Pure.
- `kube`: a small Kubernetes REST client (urllib) for TrainJobs, their pods and logs.
- `wait`: the wait loop: poll a TrainJob until it ends or times out, streaming rank 0's log.
- `launch`: what a KFP training component does with a TrainJob: stage the config in S3, create,
  wait, fetch the outputs and metrics back into the task.
- `ranks`: torch.distributed helpers (process group, rank-0 work shared with every rank).
- `entry`: the one entry point every training process runs (`python -m sparring.cluster.entry`,
  under `torchrun`, or on TrainJob nodes).
"""
