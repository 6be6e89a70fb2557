"""Kernels that share GPUs, started through the kernel provisioner from a ``--shares 3`` kernelspec (real kernels).

Each kernel holds one share of one GPU: its environment has the card (``CUDA_VISIBLE_DEVICES``) and the share's cap
(``GPULAB_MEMORY_CAP``, from ``core.shares``), gpulab is imported at its start (the kernelspec's ``exec_lines``) so
the cap is enforced at CUDA's start, and its share ends with it. The 20-kernel storm is in ``test_share_storm.py``."""

from __future__ import annotations

import asyncio
import json

import pytest

from gpulab.core.shares import share_cap_bytes
from gpulab.server.kernelspec import EXEC_LINES, install_kernelspec
from gpulab.server.provisioner import GpuKernelStartFailed

from .kernels import ProvisionedKernels
from .test_provisioner import _run


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    k = ProvisionedKernels(tmp_path, monkeypatch, "idle-8")
    yield k
    k.close()


CELL = """
import json, os, sys
print(json.dumps({"visible": os.environ["CUDA_VISIBLE_DEVICES"], "cap": os.environ.get("GPULAB_MEMORY_CAP"),
                  "gpulab imported": "gpulab" in sys.modules, "torch imported": "torch" in sys.modules}))
"""


def test_a_shared_kernelspec_names_its_shares_and_imports_gpulab_at_the_kernels_start(tmp_path):
    where, spec = install_kernelspec(1, shares=3, prefix=str(tmp_path))
    assert where.endswith("gpulab-gpu-share-3")
    assert spec["metadata"]["kernel_provisioner"]["config"] == {"n_gpus": 1, "shares": 3}
    assert spec["argv"][-1] == EXEC_LINES == "--IPKernelApp.exec_lines=import gpulab"
    assert spec["display_name"] == "Python 3 · 1 of 3 shares of a GPU (gpulab)"
    _, whole = install_kernelspec(1, prefix=str(tmp_path))
    assert EXEC_LINES not in whole["argv"] and "shares" not in whole["metadata"]["kernel_provisioner"]["config"]


@pytest.mark.parametrize(
    ("n_gpus", "shares", "message"),
    [(2, 3, r"--n-gpus 2 with --shares 3: a kernel holds one share of one GPU"), (1, 0, "shares=0")],
)
def test_shares_with_several_gpus_or_none_are_refused_saying_what_to_install(tmp_path, n_gpus, shares, message):
    with pytest.raises(ValueError, match=message):
        install_kernelspec(n_gpus, shares=shares, prefix=str(tmp_path))


def test_three_kernels_share_one_card_each_with_its_cap_in_its_environment_spread_over_the_cards(kernels):
    name = kernels.install(1, shares=3)

    async def scenario():
        started = [await kernels.start(name, notebook=f"s{k}.ipynb") for k in range(9)]
        seen = [json.loads(await _run(km, CELL)) for km in started[:2]]
        reservations = [km.provisioner.reservation for km in started]
        slots = {(r["physical"][0], tuple(r["share"])) for r in reservations}
        assert len(slots) == 9 and {s for _, s in slots} == {(1, 3), (2, 3)}  # 8 cards, then the 9th doubles up
        by_uuid = {g.uuid: g for g in kernels.gpus}
        for view, r in zip(seen, reservations, strict=False):
            card = by_uuid[view["visible"]]
            assert view["cap"] == str(share_cap_bytes(card.memory_total_bytes, 3)) == r["env"]["GPULAB_MEMORY_CAP"]
            assert view["gpulab imported"] and not view["torch imported"]
        holders = kernels.holders()
        card = reservations[8]["physical"][0]
        assert sorted(h.pid for _, _, h in holders[card].shares) == sorted(
            km.provisioner.pid for km, r in zip(started, reservations, strict=True) if r["physical"][0] == card
        )
        for km in started:
            await km.shutdown_kernel(now=True)
        assert kernels.holders() == {}

    asyncio.run(scenario())


def test_a_kernelspec_edited_into_shares_of_two_gpus_is_refused_with_how_to_reinstall(kernels):
    name = kernels.install(2)
    spec = kernels.tmp / "share" / "jupyter" / "kernels" / name / "kernel.json"
    data = json.loads(spec.read_text())
    data["metadata"]["kernel_provisioner"]["config"]["shares"] = 3
    spec.write_text(json.dumps(data))

    async def scenario():
        with pytest.raises(GpuKernelStartFailed, match=r"--n-gpus 1 --shares 3"):
            await kernels.start(name)
        assert kernels.holders() == {}

    asyncio.run(scenario())
