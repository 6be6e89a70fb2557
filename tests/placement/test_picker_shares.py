"""The picker on a card held in shares: this kernel's share reads "share k of n of GPU i (… cap)" and the card is
yours; a card others share reads how many of its shares are held."""

from __future__ import annotations

from gpulab.core.shares import share_cap_bytes
from gpulab.core.units import format_bytes
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.placement.picker import GpuPicker
from gpulab.placement.share_reservation import reserve_share
from tests.placement.other_kernel import held_elsewhere


def test_the_picker_names_this_kernels_share_with_its_cap(tmp_path):
    reader = SimulatedGpuReader("idle-8")
    with held_elsewhere(7, "idle-8", tmp_path):  # every card whole but one
        first = reserve_share(3, reader, reservations=tmp_path)
        second = reserve_share(3, reader, reservations=tmp_path)
        card = first.gpus[0]
        assert second.gpus[0] == card
        second.release()
        picker = GpuPicker(reader, reservations=str(tmp_path))
        cap = format_bytes(share_cap_bytes(card.memory_total_bytes, 3))
        assert f"reserved by this notebook: share 1 of 3 of GPU {card.physical_index} ({cap} cap)" in str(picker)
        assert picker.state(card.physical_index) == "yours"
        first.release()
