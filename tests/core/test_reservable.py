"""The devices a kernel can be given: whole GPUs and MIG slices, each named by the UUID that CUDA_VISIBLE_DEVICES
takes, slices under their card (``gpulab.core.reservable``), on the described machine ``two-gpus-mig``."""

from __future__ import annotations

import dataclasses
import json

import pytest

import gpulab
from gpulab.core.readings import mig_profile
from gpulab.core.reservable import reservable_devices
from gpulab.core.visible import visible_map
from gpulab.machine.simulated import PRESETS, SimulatedGpuReader

MIG_UUIDS = [m["uuid"] for m in PRESETS["two-gpus-mig"]["gpus"][0]["mig_devices"]]


def test_each_slice_of_a_mig_card_is_a_device_of_its_own_and_the_card_is_not():
    inv = gpulab.devices("two-gpus-mig")
    devices = inv.reservable
    assert [str(d) for d in devices] == [
        "MIG slice 0 of GPU 0 (3g.40gb, 39.2 GiB)",
        "MIG slice 1 of GPU 0 (3g.40gb, 39.2 GiB)",
        "GPU 1 (NVIDIA GeForce RTX 3090, 24.0 GiB)",
    ]
    assert [d.visible_devices for d in devices] == [*MIG_UUIDS, inv.gpus[1].uuid]
    assert [d.mig_index is not None for d in devices] == [True, True, False]
    assert devices[0].name == "NVIDIA A100 80GB PCIe MIG 3g.40gb"  # as CUDA names the device
    assert devices[2].memory_used_bytes == inv.gpus[1].memory_used_bytes


@pytest.mark.parametrize("k", [0, 1])
def test_a_slices_visible_devices_gives_a_process_that_slice_alone(k):
    inv = gpulab.devices("two-gpus-mig")
    device = inv.reservable[k]
    vmap = visible_map(inv.gpus, {"CUDA_VISIBLE_DEVICES": device.visible_devices})
    assert [(d.cuda_index, d.physical_index, d.mig_uuid) for d in vmap.devices] == [(0, 0, MIG_UUIDS[k])]
    assert not any("MIG mode" in n for n in vmap.notes)  # a slice is what CUDA runs work on


def test_a_mig_card_without_slices_gives_nothing_and_a_card_without_mig_gives_itself():
    card, other = gpulab.devices("two-gpus-mig").gpus
    empty = dataclasses.replace(card, mig_devices=())
    assert reservable_devices((empty, other)) == reservable_devices((other,))
    assert str(reservable_devices((empty, other))[0]).startswith("GPU 1 ")
    assert reservable_devices(()) == ()


def test_a_slice_whose_profile_was_not_read_still_says_what_it_is(tmp_path):
    data = json.loads(SimulatedGpuReader("two-gpus-mig").to_json())
    for m in data["gpus"][0]["mig_devices"]:
        del m["profile"]  # a description written before profiles were described
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    inv = gpulab.devices(SimulatedGpuReader(str(path)))
    assert str(inv.reservable[0]) == "MIG slice 0 of GPU 0 (39.2 GiB)"
    assert "  0/mig0  MIG slice " in str(inv)


def test_a_described_slice_profile_is_text():
    data = json.loads(SimulatedGpuReader("two-gpus-mig").to_json())
    data["gpus"][0]["mig_devices"][1]["profile"] = 3
    with pytest.raises(ValueError, match=r"GPU 0 of .*'mig_devices\[1\]' needs a 'uuid' .* a 'profile' as text"):
        SimulatedGpuReader(data)


@pytest.mark.parametrize(
    "name, profile",
    [
        ("MIG 3g.40gb", "3g.40gb"),
        ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "1g.5gb"),
        ("NVIDIA A100 80GB PCIe", ""),
        ("NVIDIA GeForce RTX 3090", ""),
    ],
)
def test_the_profile_is_read_from_either_name_nvml_or_cuda_gives_a_slice(name, profile):
    assert mig_profile(name) == profile


def test_the_inventory_and_the_report_show_slices_under_their_card_with_uuid_and_memory():
    inv = gpulab.devices("two-gpus-mig")
    for text in (str(inv), str(gpulab.environment_report("two-gpus-mig"))):
        lines = text.splitlines()
        card = next(i for i, line in enumerate(lines) if "NVIDIA A100 80GB PCIe" in line and "GPU-" in line)
        slices = lines[card + 1 : card + 3]
        assert [s.split()[:3] for s in slices] == [["0/mig0", "MIG", "3g.40gb"], ["0/mig1", "MIG", "3g.40gb"]]
        assert all(u in s and "0 B / 39.2 GiB" in s for u, s in zip(MIG_UUIDS, slices))
        assert "NVIDIA GeForce RTX 3090" in lines[card + 3]
    assert inv.html().count("MIG 3g.40gb") == 2
