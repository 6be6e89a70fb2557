"""JupyterHub on a SLURM cluster: every learner's single-user server is a SLURM job, started by batchspawner's
SlurmSpawner (``pip install -c constraints-server.txt -e '.[hub]'``, which brings batchspawner). Described in
docs/clusters.md; ``make test-cluster`` starts a real Hub from this file on a local SLURM cluster, spawns servers
with and without a GPU, starts a kernel in each and stops them (tests/cluster/test_batchspawner.py).

Load it from the site's own ``jupyterhub_config.py``, which adds what only the site knows (its authenticator, its
partition, memory), and run the Hub on a machine where ``sbatch``, ``squeue`` and ``scancel`` reach the cluster::

    c = get_config()
    load_subconfig("/path/to/gpulab/deploy/batchspawner_config.py")
    c.SlurmSpawner.req_partition = "gpu"

SLURM allocates the GPUs here: the Hub's GPU hooks (tools/jupyterhub_config.py's server model) are not for this
Hub, and would reserve nothing under this spawner.
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 - provided by the config loader

# The course's environment (the one this Hub runs from, gpulab and batchspawner installed in it) must be at the same
# path on every node, as a shared filesystem gives it; otherwise name the nodes' own environment here.
BIN = Path(sys.executable).parent

c.JupyterHub.spawner_class = "batchspawner.SlurmSpawner"
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
c.SlurmSpawner.batchspawner_singleuser_cmd = str(BIN / "batchspawner-singleuser")  # tells the Hub the server's port
c.Spawner.default_url = "/lab"
# The job's whole environment is what the Hub passes (--export below): JupyterHub passes no PATH to a batch job, so
# the server and its kernels get the course's environment first, then the Hub's PATH (where SLURM's commands are).
c.Spawner.environment = {"PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", os.defpath)])}
# A job may wait in the queue before it runs: the Hub gives up on a spawn after start_timeout seconds.
c.Spawner.start_timeout = 300
c.Spawner.http_timeout = 120
c.SlurmSpawner.startup_poll_interval = 1.0  # how often the Hub asks squeue whether the job runs yet
# Each server is a job that asks for this much (SLURM's own words in the template below). req_ngpus: GPUs per
# server; "" for a server without one, which then sees no GPU (the srun line below). A site sets its partition and
# memory (req_partition, req_memory) in its own file.
c.SlurmSpawner.req_runtime = "04:00:00"
c.SlurmSpawner.req_nprocs = "2"
c.SlurmSpawner.req_ngpus = "1"
# The job's script. batchspawner's own default, less --get-user-env (the Hub passes the server's environment with
# --export; a site that wants the learner's login environment adds it with req_options), plus --gpus from
# req_ngpus, and the server started by a line that keeps a job without GPUs CPU-only: SLURM removes
# CUDA_VISIBLE_DEVICES from such a job (on a node without ConstrainDevices it would then see every GPU), so the step
# sets it again, empty, where SLURM no longer touches it. A job with GPUs keeps SLURM's value.
c.SlurmSpawner.batch_script = """#!/bin/bash
#SBATCH --output={{homedir}}/jupyterhub_slurmspawner_%j.log
#SBATCH --job-name=gpulab-jupyterhub
#SBATCH --chdir={{homedir}}
#SBATCH --export={{keepvars}}
{% if partition  %}#SBATCH --partition={{partition}}
{% endif %}{% if runtime    %}#SBATCH --time={{runtime}}
{% endif %}{% if memory     %}#SBATCH --mem={{memory}}
{% endif %}{% if ngpus      %}#SBATCH --gpus={{ngpus}}
{% endif %}{% if gres       %}#SBATCH --gres={{gres}}
{% endif %}{% if nprocs     %}#SBATCH --cpus-per-task={{nprocs}}
{% endif %}{% if reservation%}#SBATCH --reservation={{reservation}}
{% endif %}{% if options    %}#SBATCH {{options}}{% endif %}

set -euo pipefail

trap 'echo SIGTERM received' TERM
{{prologue}}
srun env CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES-}" {{cmd}}
echo "jupyterhub-singleuser ended gracefully"
{{epilogue}}
"""
