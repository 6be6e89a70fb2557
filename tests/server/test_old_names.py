"""What users already have keeps working after gpulab's names changed ("lease" became "reservation", a count of GPUs
``gpus`` became ``n_gpus``).

A kernel manager that saved a provisioner's state kept the reservation under the old key; an installed kernel.json
holds its count under ``gpus``. Each still works.
"""

from __future__ import annotations

import asyncio

from gpulab.server.provisioner import GpuKernelProvisioner


def test_a_provisioner_state_saved_under_the_old_key_is_read_and_saved_under_the_new_one():
    held = {"uuids": ["GPU-1"], "physical": [1], "ports": "29520-29529", "pid": 4242, "env": {}}
    base = {"kernel_id": "k1", "connection_info": {}, "pid": 4242, "pgid": 4242, "ip": "127.0.0.1"}
    old = GpuKernelProvisioner(kernel_id="k1", kernel_spec=None)
    asyncio.run(old.load_provisioner_info({**base, "gpulab_lease": held}))
    assert old.reservation == held
    saved = asyncio.run(old.get_provisioner_info())
    assert saved["gpulab_reservation"] == held and "gpulab_lease" not in saved
    new = GpuKernelProvisioner(kernel_id="k1", kernel_spec=None)
    asyncio.run(new.load_provisioner_info({**base, "gpulab_reservation": held, "gpulab_lease": {"uuids": []}}))
    assert new.reservation == held


def test_a_kernelspec_an_older_gpulab_installed_keeps_its_gpu_count():
    """Older kernel.json files hold the count under ``gpus``; jupyter_client passes the config's keys to the
    provisioner as keyword arguments (``KernelProvisionerFactory.create_provisioner_instance``). Unread, that key would
    be dropped and a no-GPU kernel would start holding one GPU (the default)."""
    assert GpuKernelProvisioner(gpus=0).n_gpus == 0 and GpuKernelProvisioner(gpus=2).n_gpus == 2
    assert GpuKernelProvisioner(n_gpus=3).n_gpus == 3 and GpuKernelProvisioner().n_gpus == 1
