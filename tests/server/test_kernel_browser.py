"""gpulab's kernelspec in a real JupyterLab, in a real Chromium (marked ``browser`` and ``slow``; the pattern of
``tests/test_browser.py``, whose browser fixture and page helper it uses).

JupyterLab runs with the course's server settings and gpulab's 1-GPU kernelspec in a scratch ``JUPYTER_PATH`` on a
described server with 8 free GPUs. Two notebooks open with that kernel: a cell in each shows ``CUDA_VISIBLE_DEVICES``
and the reservation; the second kernel has a different GPU; shutting the first kernel down (as JupyterLab's menu does)
frees its GPU in ``python -m gpulab watch``. Screenshots go to ``build/browser-screenshots``.
"""

from __future__ import annotations

import json
import re
import sys
import time

import pytest

from tests.process_group import run
from tests.test_browser import CHROMIUM, SHOTS, _open, browser  # noqa: F401 - browser is a fixture

from .jupyter import jupyter

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,  # about 22 s here (JupyterLab and Chromium start): over the 25 s a make test addition may take
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium installed (Debian: apt-get install chromium; .ci/run installs it when it runs as root)",
    ),
]

CELL = """import os
from gpulab.reservations.holders import reservation_holders
visible = os.environ["CUDA_VISIBLE_DEVICES"]
reservation = reservation_holders([visible])[visible]
print("CUDA_VISIBLE_DEVICES =", visible)
print("reservation:", reservation, "·", reservation.details["notebook"], "· ports", reservation.details["ports"])"""

OUTPUT_JS = """() => { const p = window.jupyterapp.shell.currentWidget;
  const c = p.content.widgets[0]; return c.model.executionCount ? c.model.outputs.toJSON() : null; }"""


def _notebook(path, cell: str) -> None:
    path.write_text(
        json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "execution_count": None,
                        "id": "reservation",
                        "metadata": {},
                        "outputs": [],
                        "source": cell,
                    }
                ],
                "metadata": {
                    "kernelspec": {
                        "name": "gpulab-1-gpu",
                        "display_name": "Python 3 · 1 free GPU (gpulab)",
                        "language": "python",
                    }
                },
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )


def _run_cell(page) -> str:
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    outputs = None
    deadline = time.monotonic() + 120
    while outputs is None and time.monotonic() < deadline:
        outputs = page.evaluate(OUTPUT_JS)
        time.sleep(0.2)
    assert outputs is not None, "the cell did not run"
    return "".join("".join(o["text"]) if isinstance(o.get("text"), list) else o.get("text", "") for o in outputs)


def _watch(server) -> str:
    env = {
        "GPULAB_SIMULATE_GPUS": "idle-8",
        "GPULAB_RESERVATIONS_DIR": str(server.work / "locks"),
        "PATH": "/usr/bin:/bin",
        "HOME": str(server.work),
    }
    done = run(
        [sys.executable, "-m", "gpulab", "watch", "--frames", "1"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_two_notebooks_get_different_gpus_and_shutting_one_down_frees_its_gpu(tmp_path, browser):  # noqa: F811
    (tmp_path / "notebooks").mkdir()
    _notebook(tmp_path / "notebooks" / "first.ipynb", CELL)
    _notebook(tmp_path / "notebooks" / "second.ipynb", CELL)
    args = ("--LabApp.expose_app_in_browser=True", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate")
    with jupyter(tmp_path, "idle-8", lab=True, args=args) as server:
        lab = {"base": server.base, "token": server.token}
        first = _open(browser, lab, "first.ipynb")
        one = _run_cell(first)
        first.screenshot(path=str(SHOTS / "kernel-provisioner-first.png"))
        second = _open(browser, lab, "second.ipynb")
        two = _run_cell(second)
        second.screenshot(path=str(SHOTS / "kernel-provisioner-second.png"))
        visible = [re.search(r"CUDA_VISIBLE_DEVICES = (GPU-[0-9a-f-]+)", text).group(1) for text in (one, two)]
        assert visible[0] != visible[1], (one, two)
        assert "reservation: this notebook · " in one and "first.ipynb · ports 295" in one, one
        assert "reservation: this notebook · " in two and "second.ipynb · ports 295" in two, two
        before = _watch(server)
        assert "first.ipynb" in before and "second.ipynb" in before, before
        first.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
        deadline = time.monotonic() + 60
        while "first.ipynb" in _watch(server) and time.monotonic() < deadline:
            time.sleep(0.5)
        after = _watch(server)
        assert "first.ipynb" not in after and "second.ipynb" in after, after
        assert len(re.findall(r"^  GPU \d+: ", after, re.M)) == 1, after  # one reservation left: the second notebook's
        first.close()
        second.close()
