"""``watch`` on a card in MIG mode (the described machine ``two-gpus-mig``: an A100 split into two 3g.40gb slices):
one row per slice under its card, with its profile and who holds it, and the free-now line names the free slices."""

from __future__ import annotations

import os
import pwd
import re
import subprocess
import sys
from pathlib import Path

from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.server.render import render_html, render_text
from gpulab.server.watch import read_server
from tests.process_group import kill_group

ROOT = Path(__file__).resolve().parents[2]
HOLDER = """
import sys
from gpulab.placement.reservation import reserve_gpus
held = reserve_gpus(1, "two-gpus-mig", reservations=sys.argv[1], details={"kernel": "k1e2r3n4el"})
print(held.visible_devices, flush=True)
sys.stdin.read()
"""


def test_each_mig_slice_is_a_row_under_its_card_with_its_profile_and_its_holder(tmp_path):
    slices = SimulatedGpuReader("two-gpus-mig").info(0).mig_devices
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        env={**env, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert holder.stdout.readline().strip() == slices[0].uuid  # the other process holds slice 0 of GPU 0
        view = read_server("two-gpus-mig", tmp_path)
        lines = render_text(view).splitlines()
    finally:
        kill_group(holder)
        holder.stdin.close()
        holder.stdout.close()
    me = pwd.getpwuid(os.geteuid()).pw_name
    card = next(i for i, line in enumerate(lines) if line.startswith("  0  A100 80GB PCIe"))
    first, second = lines[card + 1], lines[card + 2]
    assert first.split()[:2] == ["0/mig0", "3g.40gb"] and second.split()[:2] == ["0/mig1", "3g.40gb"]
    assert "0 B / 39.2 GiB" in first and first.endswith(f"reserved by {me}: python (pid {holder.pid})"), first
    assert second.endswith("nobody")
    assert lines[-1].startswith("free now: GPU 0/mig1 — hold one with gpulab.reserve_gpus(1)")
    assert any(line.startswith(f"  GPU 0 MIG slice 0 (3g.40gb): {me} · kernel k1e2r3n4") for line in lines)
    cells = [re.sub("<[^>]+>", "|", row) for row in render_html(view).split("<tr>")]
    assert [c.split("|")[1] for c in cells[2:]] == ["0", "0/mig0", "0/mig1", "1"]  # the notebook cell's too
    assert "3g.40gb" in cells[3] and f"reserved by {me}: python (pid {holder.pid})" in cells[3] and "nobody" in cells[4]
