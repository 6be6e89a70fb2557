"""``watch`` with shared cards: one row per share held, naming its holder (with the privacy of whole GPUs' rows) and
the memory its process uses against its cap where NVML shows that process."""

from __future__ import annotations

import dataclasses
import os

from gpulab.core.readings import GpuProcess
from gpulab.core.shares import share_cap_bytes
from gpulab.core.units import format_bytes
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.placement.share_reservation import reserve_share
from gpulab.server.reservation_list import reservation_rows


def test_each_share_of_a_card_is_a_row_with_its_holder_and_its_use_against_its_cap(tmp_path):
    reader = SimulatedGpuReader("idle-8")
    gpus = [reader.info(i) for i in range(reader.count())]
    with (
        reserve_share(2, reader, reservations=tmp_path, details={"kernel": "k-one", "notebook": "a.ipynb"}) as a,
        reserve_share(2, reader, reservations=tmp_path, details={"kernel": "k-two"}),
    ):
        card = a.gpus[0]
        used = dataclasses.replace(card, processes=(GpuProcess(os.getpid(), 3 * 2**30, "python"),))
        rows = reservation_rows([used if g.uuid == card.uuid else g for g in gpus], tmp_path)
    cap = format_bytes(share_cap_bytes(card.memory_total_bytes, 2))
    mine = [r for r in rows if r.physical_index == card.physical_index]
    assert [r.share for r in mine] == [f"share 1 of 2 · uses 3.0 GiB of its {cap} cap"]
    assert str(mine[0]).startswith(f"GPU {card.physical_index} share 1 of 2 · uses 3.0 GiB of its {cap} cap: ")
    assert "kernel k-one" in str(mine[0]) and "a.ipynb" in str(mine[0])
    other = [r for r in rows if r.physical_index != card.physical_index]
    assert [r.share for r in other] == [f"share 1 of 2 ({cap} cap)"]  # no process of it on the card: the cap alone
