#!/bin/bash
# What each node runs under SLURM (digits_ddp.sbatch runs it once per node with srun): one torchrun that starts
# one process per GPU and meets the other nodes' torchruns at MASTER_ADDR:MASTER_PORT.
#
# Reads what SLURM sets on each node: SLURM_NNODES (how many nodes), SLURM_JOB_ID (names the rendezvous, so two
# jobs never meet), SLURM_GPUS_ON_NODE (processes per node; 1 if unset). No node rank is passed: with the c10d
# rendezvous the torchruns number the nodes themselves as they arrive (SLURM_NODEID is only printed, for the logs).
# Taught in notebooks/04_ddp.ipynb.
set -euo pipefail
echo "node ${SLURM_NODEID:-?} of $SLURM_NNODES: torchrun meets the others at $MASTER_ADDR:$MASTER_PORT" >&2
exec "${PYTHON:-python}" -m torch.distributed.run \
    --nnodes="$SLURM_NNODES" \
    --nproc-per-node="${SLURM_GPUS_ON_NODE:-1}" \
    --rdzv-backend=c10d \
    --rdzv-endpoint="$MASTER_ADDR:$MASTER_PORT" \
    --rdzv-id="$SLURM_JOB_ID" \
    "$(dirname "$0")/digits_ddp.py" "$@"
