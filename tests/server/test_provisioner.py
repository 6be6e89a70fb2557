"""The kernel provisioner with real kernels (jupyter_client's AsyncKernelManager) on described servers.

Start, reservation, shutdown, restart, kill -9; the message when no GPU is free; a kernel with no GPU; the workshop-8
scenario of the clarifications (three kernels take GPUs 1, 3, 5; after one shuts down a new kernel gets its GPU).
The 20-kernel storm is in ``test_kernel_storm.py`` (slow).
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from gpulab.server.provisioner import GpuKernelStartFailed

from .kernels import ProvisionedKernels


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    k = ProvisionedKernels(tmp_path, monkeypatch, "idle-8")
    yield k
    k.close()


@pytest.fixture
def workshop(tmp_path, monkeypatch):
    k = ProvisionedKernels(tmp_path, monkeypatch, "workshop-8")
    yield k
    k.close()


CELL = """
import json, os
from gpulab.reservations.holders import reservation_holders
uuids = os.environ["CUDA_VISIBLE_DEVICES"].split(",")
print(json.dumps({"visible": os.environ["CUDA_VISIBLE_DEVICES"], "master_port": os.environ["MASTER_PORT"],
                  "ports": os.environ["GPULAB_MASTER_PORTS"],
                  "held": {u: [str(h), h.mine, h.details] for u, h in reservation_holders(uuids).items()}}))
"""


async def _run(km, code: str) -> str:
    kc = km.client()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=60)
        out: list[str] = []
        reply = await kc.execute_interactive(
            code,
            timeout=60,
            output_hook=lambda m: out.append(m["content"].get("text", "")) if m["msg_type"] == "stream" else None,
        )
        assert reply["content"]["status"] == "ok", reply["content"]
        return "".join(out)
    finally:
        kc.stop_channels()


def test_a_kernel_starts_holding_a_free_gpu_and_its_reservation_ends_with_it(kernels):
    name = kernels.install(1)

    async def scenario():
        km = await kernels.start(name, notebook="week1/lesson.ipynb")
        reservation = km.provisioner.reservation
        held = kernels.holders()
        assert list(held) == reservation["physical"] and len(held) == 1
        h = held[reservation["physical"][0]]
        assert h.pid == km.provisioner.pid  # the kernel process itself holds the lock
        assert h.details == {
            "kernel": km.kernel_id,
            "user": h.user,
            "notebook": "week1/lesson.ipynb",
            "ports": reservation["ports"],
        }
        # inside the kernel: its GPU, its ports, and its own reservation seen as "this notebook"
        seen = json.loads(await _run(km, CELL))
        assert seen["visible"] == reservation["uuids"][0] and seen["ports"] == reservation["ports"]
        assert seen["master_port"] == reservation["ports"].split("-")[0]
        assert seen["held"][reservation["uuids"][0]][:2] == ["this notebook", True]
        picker = await _run(km, "from gpulab.placement.picker import GpuPicker; print(GpuPicker())")
        row = next(line for line in picker.splitlines() if line.strip().startswith(f"{reservation['physical'][0]} ["))
        assert "reserved by this notebook" in row, picker  # one truth: the picker reads the same reservation
        # restart: the kernel gets its GPU back (preferred when still free)
        old_pid = km.provisioner.pid
        await km.restart_kernel(now=True)
        kernels.pids.add(km.provisioner.pid)
        assert km.provisioner.pid != old_pid and km.provisioner.reservation["physical"] == reservation["physical"]
        assert kernels.holders()[reservation["physical"][0]].pid == km.provisioner.pid
        # kill -9: the reservation goes with the process, nobody releases it
        os.kill(km.provisioner.pid, 9)
        await kernels.gone(km)
        assert kernels.holders() == {}
        # a fresh kernel, then a clean shutdown
        km2 = await kernels.start(name)
        assert len(kernels.holders()) == 1
        await km2.shutdown_kernel(now=False)
        assert kernels.holders() == {}

    asyncio.run(scenario())


def test_the_workshop_server_three_kernels_take_its_three_free_gpus_and_a_fourth_is_told_why(workshop):
    name = workshop.install(1)

    async def scenario():
        kms = [await workshop.start(name, notebook=f"student{k}.ipynb") for k in range(3)]
        assert sorted(km.provisioner.reservation["physical"][0] for km in kms) == [1, 3, 5]
        with pytest.raises(GpuKernelStartFailed) as failed:
            await workshop.start(name, notebook="late.ipynb")
        text = str(failed.value)
        for k in (1, 3, 5):  # who holds what
            pid = next(km.provisioner.pid for km in kms if km.provisioner.reservation["physical"] == [k])
            assert f"GPU {k}: reserved by pid {pid} (" in text
        assert "GPU 0: 29.4 GiB of 40.0 GiB used (74% > 10%)" in text  # the busy ones, with why
        assert "wait a few minutes" in text and "no GPU (gpulab)" in text and "ask the instructor" in text
        freed = kms[1].provisioner.reservation["physical"]
        await kms[1].shutdown_kernel(now=True)
        late = await workshop.start(name, notebook="late.ipynb")
        assert late.provisioner.reservation["physical"] == freed
        for km in (kms[0], kms[2], late):
            await km.shutdown_kernel(now=True)
        assert workshop.holders() == {}

    asyncio.run(scenario())


@pytest.mark.slow  # seconds of waiting by design: make test-slow runs it
def test_a_start_waits_for_a_gpu_when_told_to(workshop):
    one = workshop.install(3, name="all-three")
    waiting = workshop.install(1, name="waits", wait_s=30)

    async def scenario():
        first = await workshop.start(one)
        assert first.provisioner.reservation["physical"] == [1, 3, 5]
        later = asyncio.ensure_future(workshop.start(waiting))
        await asyncio.sleep(1.5)
        assert not later.done()  # queued: no GPU yet
        await first.shutdown_kernel(now=True)
        km = await asyncio.wait_for(later, 30)
        assert km.provisioner.reservation["physical"][0] in (1, 3, 5)
        await km.shutdown_kernel(now=True)

    asyncio.run(scenario())


def test_a_kernel_with_no_gpu_sees_none_and_holds_nothing(kernels):
    name = kernels.install(0)

    async def scenario():
        km = await kernels.start(name)
        out = await _run(km, "import os; print(repr(os.environ['CUDA_VISIBLE_DEVICES']))")
        assert out.strip() == "''" and kernels.holders() == {}
        await km.shutdown_kernel(now=True)

    asyncio.run(scenario())


def test_a_reservation_that_cannot_be_taken_says_why(kernels):
    name = kernels.install(1)
    kernels.locks.parent.mkdir(exist_ok=True)
    kernels.locks.write_text("not a folder")

    async def scenario():
        with pytest.raises(GpuKernelStartFailed, match="is a file, not a directory"):
            await kernels.start(name)

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "config, message",
    [
        (
            {"policy": {"max_memory": 0.5}},
            r"policy \{'max_memory': 0.5\} is not one gpulab can use .*"
            "Reinstall it: python -m gpulab kernelspec install",
        ),
        ({"n_gpus": -1}, r"asks for n_gpus=-1; reinstall it with python -m gpulab kernelspec install --n-gpus 1"),
    ],
)
def test_a_kernelspec_edited_by_hand_into_nonsense_is_refused_with_how_to_reinstall(kernels, config, message):
    name = kernels.install(1)
    spec = kernels.tmp / "share" / "jupyter" / "kernels" / name / "kernel.json"
    data = json.loads(spec.read_text())
    data["metadata"]["kernel_provisioner"]["config"].update(config)
    spec.write_text(json.dumps(data))

    async def scenario():
        with pytest.raises(GpuKernelStartFailed, match=message):
            await kernels.start(name)
        assert kernels.holders() == {}

    asyncio.run(scenario())


@pytest.mark.slow  # the environment report imports torch in the kernel: seconds
def test_the_environment_report_in_a_provisioned_kernel_names_its_reservation_as_this_notebooks(kernels):
    name = kernels.install(1)

    async def scenario():
        km = await kernels.start(name)
        report = await _run(km, "import gpulab; print(gpulab.environment_report())")
        k = km.provisioner.reservation["physical"][0]
        # the one rule (selection.judge): the kernel's own GPU is "yours", neither free nor busy
        assert f"a free GPU to work on — GPU {k} yours (reserved by this notebook)" in report, report
        assert f"cuda:0      {k}  " in report  # and CUDA_VISIBLE_DEVICES maps cuda:0 to it
        await km.shutdown_kernel(now=True)

    asyncio.run(scenario())
