"""``watch`` with shared cards: one row per share held, naming its holder (with the privacy of whole GPUs' rows) and
the memory its process uses against its cap where NVML shows that process."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

from gpulab.core.readings import GpuProcess
from gpulab.core.shares import share_cap_bytes
from gpulab.core.units import format_bytes
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.placement.share_reservation import reserve_share
from gpulab.server.render import ServerView, render_text
from gpulab.server.reservation_list import reservation_rows
from gpulab.server.watch import read_server
from tests.process_group import kill_group

ROOT = Path(__file__).resolve().parents[2]


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


HOLDER = """
import sys
from gpulab.placement.share_reservation import reserve_share
held = [reserve_share(3, "kaggle-2xT4", reservations=sys.argv[1]) for _ in range(3)]
print(" ".join(str(r.share) for r in held), flush=True)
sys.stdin.read()
"""


def test_the_free_now_line_counts_the_free_shares_of_shared_cards(tmp_path):
    """Another user's kernels hold 3 shares of 3 on the two T4s (GPU 0 twice, GPU 1 once): no whole card is free, but
    3 shares are, and the line says which."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        held = holder.stdout.readline()
        assert "share 2 of 3 of GPU 0" in held and "share 1 of 3 of GPU 1" in held
        line = render_text(read_server("kaggle-2xT4", tmp_path)).splitlines()[-1]
        assert line == (
            "no whole GPU is free now, but 3 share(s) are: 1 of GPU 0's 3, 2 of GPU 1's 3 (a kernel installed with "
            "python -m gpulab kernelspec install --n-gpus 1 --shares 3 takes one); gpulab.reserve_gpus(1, "
            "wait_s=600) waits for a whole GPU"
        )
        assert "share" not in render_text(read_server("kaggle-2xT4", tmp_path / "none"))  # nothing held: no shares
    finally:
        kill_group(holder)
        holder.stdin.close()
        holder.stdout.close()


def test_beside_free_cards_the_free_now_line_counts_the_free_shares_too():
    gpus = tuple(SimulatedGpuReader("kaggle-2xT4").info(i) for i in range(2))
    view = ServerView(gpus, holders={gpus[0].uuid: "1 of 3 shares held"}, shares={gpus[0].uuid: (1, 3)})
    assert render_text(view).splitlines()[-1] == (
        "free now: GPU 1 — hold one with gpulab.reserve_gpus(1); and 2 share(s) of shared cards: 2 of GPU 0's 3 (a "
        "kernel installed with python -m gpulab kernelspec install --n-gpus 1 --shares 3 takes one)"
    )
