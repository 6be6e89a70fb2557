"""Every chapter run in a real JupyterLab, in a real Chromium, as an instructor rehearses it on the workshop server
(marked ``browser``).

A JupyterLab server starts headless on 127.0.0.1 with a token, on a copy of notebooks/ (autosave never touches the
committed files); Playwright drives Debian's Chromium (``/usr/bin/chromium``: Playwright's own browser download
fails offline). Every chapter's kernel describes a workshop server (``GPULAB_SIMULATE_GPUS=workshop-8``: eight A100s,
some busy, that NVML answers for while PyTorch still sees no GPU; ``GPULAB_TEST_PRESET`` names another preset, e.g.
``kaggle-2xT4``). This is CI's one run of each chapter on a described machine. Each chapter: open it, Run All, wait
for the kernel, then assert
- no error output outside cells tagged ``raises-exception``, each of which raised, and every code cell ran;
- every cell tagged ``nbval-check-output`` gives its committed output, compared as nbval compares them;
- once its kernel has shut down, nothing is left in the kernel's temporary folder;
- chapter 02: the picker, in a notebook of its own on that server, is a rendered widget, and ticking a GPU changes the
  ``cuda:k → physical`` mapping it shows;
- chapters with a monitor: the live image changed while the cell ran, and at the end the cell holds the static
  figure and the summary, with no widget left.
The claims ledger (notebooks/claims_ledger.md), in the Markdown preview: a link opens its chapter at the cell.
Pages are 1400×1000, a projector's screen. The picker is checked as the room sees it: a header row, a free/busy badge
per row agreeing with the bar's colour and with ``choose_gpus``'s rule, this kernel's own reservation shown as "reserved
by this notebook"; chapter 02 under simulation never gives a machine's GPU count without SIMULATED; JupyterLab's news
popup (off in the course's settings, ``tools/lab_settings``) never appears, and printed text wraps at spaces
(``tools/lab_custom/custom.css``). Screenshots, among them the picker and
chapter 05's figure, go to ``GPULAB_SCREENSHOTS`` (default ``build/browser-screenshots``, git-ignored).
The server, its kernels, the browser and Playwright's driver are stopped at the end, and the test fails if any
process it started is left.
"""

from __future__ import annotations

import copy
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from handoutkit.printing import find_chromium  # noqa: E402
from tests.checked_outputs import checked_differences  # noqa: E402
from tests.process_group import kill_group  # noqa: E402

CHROMIUM = find_chromium()
SHOTS = Path(os.environ.get("GPULAB_SCREENSHOTS", ROOT / "build" / "browser-screenshots"))
CHAPTER_TIMEOUT_S = 420
QUIET_S = 5.0  # idle, no cell running, this long: the chapter has finished
PRESET = os.environ.get("GPULAB_TEST_PRESET", "workshop-8")  # the described machine every chapter's kernel runs on
WORKSHOP_KERNEL = "gpulab-described"
# torch's own compile cache, made in $TMPDIR by the first optimiser step of any program: not the chapter's doing
NOT_OURS = ("torchinductor_",)
VIEWPORT = {"width": 1400, "height": 1000}  # a projector's screen, as the room sees it
NEWS_POPUP = "Would you like to get notified about official Jupyter news?"
# The picker's header row: the cells of the first row of text cells only (no checkbox), as shown.
PICKER_HEADER_JS = """(out) => { const row = Array.from(out.querySelectorAll('.widget-hbox')).find(
  (r) => !r.querySelector('.widget-checkbox') && r.querySelector(':scope > .widget-html b'));
  return row ? Array.from(row.children).map((c) => c.innerText.trim()) : null; }"""
# Each row of the picker in the page: its badge, whether its bar is green, and the row's text.
PICKER_ROWS_JS = """(out) => Array.from(out.querySelectorAll('.widget-hbox')).filter(
  (r) => r.querySelector(':scope > .widget-checkbox')).map((r) => ({
    text: r.innerText, badge: (r.querySelector('.widget-html span') || {}).innerText || '',
    green: !!r.querySelector('.progress-bar-success, .jupyter-widgets .progress-bar-success')}))"""

pytestmark = [
    pytest.mark.browser,
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium installed (Debian: apt-get install chromium; .ci/run installs it when it runs as root)",
    ),
]
CHAPTERS = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9]*.ipynb")) + ["workshop_guide.ipynb"]

# In the page: the open notebook's cells (JupyterLab's own model, exposed by --LabApp.expose_app_in_browser).
CELLS_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.sessionContext) return null;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return {status: kernel ? kernel.status : 'none', cells: panel.content.widgets.map((c, i) => ({
    i, type: c.model.type, source: c.model.sharedModel.getSource(), tags: c.model.getMetadata('tags') || [],
    count: c.model.type === 'code' ? c.model.executionCount : null,
    running: c.model.type === 'code' && (c.promptNode ? c.promptNode.textContent.includes('*') : false),
    outputs: c.model.type === 'code' ? c.model.outputs.toJSON() : []}))};
}"""
# Every source the live monitor's <img> (a widget view) in each watched cell takes, recorded in the page as it changes
# (a MutationObserver), so that a frame shown between two of the test's polls still counts: on a loaded machine a poll
# can take longer than a frame.
WATCH_FRAMES_JS = """(watched) => {
  window.gpulabFrames = {};
  for (const i of watched) {
    const node = window.jupyterapp.shell.currentWidget.content.widgets[i].node;
    const seen = window.gpulabFrames[i] = [];
    const note = () => {
      const img = node.querySelector('.jp-OutputArea .jupyter-widgets img, .jp-OutputArea .widget-image');
      if (img && img.src && !seen.includes(img.src)) seen.push(img.src);
    };
    new MutationObserver(note).observe(node, {subtree: true, childList: true, attributes: true,
                                              attributeFilter: ['src']});
  }
}"""
FRAMES_JS = "() => window.gpulabFrames"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kernelspec(folder: Path, tmp: Path) -> None:
    """A kernel like python3 whose environment describes the workshop server (chapter 02's picker needs GPUs), with a
    temporary folder of its own (``tmp``), so that what a chapter leaves there can be seen."""
    spec = folder / "kernels" / WORKSHOP_KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": f"Python 3 ({PRESET}, described GPUs)",
                "language": "python",
                "env": {"GPULAB_SIMULATE_GPUS": PRESET, "TMPDIR": str(tmp)},
            }
        )
    )


def _lightnings_empty_folder(path: Path) -> bool:
    """Lightning's fork and spawn launchers save rank 0's weights as ``tempfile.mkdtemp()/.temp.ckpt`` for the parent
    and remove the file but not its folder (lightning/pytorch/strategies/launchers/multiprocessing.py): one empty
    ``tmp*`` folder per such fit, made by Lightning in the rank, not by the chapter."""
    return path.is_dir() and path.name.startswith("tmp") and not any(path.iterdir())


def _left_in(tmp: Path) -> list[str]:
    """What a chapter's kernel left in its temporary folder, less what torch and Lightning leave there themselves."""
    return sorted(p.name for p in tmp.iterdir() if not p.name.startswith(NOT_OURS) and not _lightnings_empty_folder(p))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    work = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "notebooks", work / "notebooks")
    for described in CHAPTERS:  # every chapter's kernel describes the workshop server
        nb = work / "notebooks" / described
        data = json.loads(nb.read_text())
        data["metadata"]["kernelspec"] = {"name": WORKSHOP_KERNEL, "display_name": PRESET, "language": "python"}
        nb.write_text(json.dumps(data))
    (work / "kernel-tmp").mkdir()
    _kernelspec(work / "share", work / "kernel-tmp")
    (work / "settings").mkdir()  # a learner's own settings: none yet, so the news popup is off by the course's config
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "GPULAB_FAST": "1",
        "JUPYTER_PATH": str(work / "share"),
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "GPULAB_RESERVATIONS_DIR": str(work / "locks"),
        "JUPYTERLAB_SETTINGS_DIR": str(work / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(work / "workspaces"),
        "JUPYTER_CONFIG_DIR": str(work / "config"),
        "JUPYTER_DATA_DIR": str(work / "data"),
        "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
    }
    env.pop("GPULAB_MONITOR_LIVE", None)
    env.pop("GPULAB_SIMULATE_GPUS", None)
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={work / 'notebooks'}",
        "--LabApp.expose_app_in_browser=True",
        "--ServerApp.port_retries=0",
        # A chapter's clean-up (its TemporaryDirectory, the fork server's folder) runs as its kernel exits, which with
        # torch loaded can take longer than the default 5 s on a loaded machine; killed before it ends, the kernel
        # would leave them behind through no fault of the chapter's.
        "--KernelManager.shutdown_wait_time=60",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--config={ROOT / 'tools' / 'jupyter_server_config.py'}",
    ]  # the server settings make lab uses
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(work / "jupyterlab.log", "w")
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    server = subprocess.Popen(
        cmd,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=work,
        preexec_fn=_stop_with_parent,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for_server(base, token, server, work / "jupyterlab.log")
        yield {"base": base, "token": token, "work": work}
    finally:
        _stop(server, base, token)
        kill_group(server)  # whatever the server started in its own group (kernels lead groups of their own)
        log.close()
        time.sleep(0.5)
        left = [
            p
            for p in psutil.Process().children(recursive=True)
            if p.pid not in before and p.is_running() and p.status() != psutil.STATUS_ZOMBIE
        ]
        for p in left:
            p.kill()
        assert not left, f"processes left behind: {[(p.pid, ' '.join(p.cmdline()[:3])) for p in left]}"


def _stop_with_parent() -> None:
    """Linux: the server gets SIGTERM (and stops its kernels) if pytest itself is killed, e.g. by a timeout."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the fixture's own teardown still stops it


def _api(base: str, token: str, path: str, method: str = "GET", timeout_s: float = 10) -> object:
    req = urllib.request.Request(f"{base}{path}", method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=timeout_s) as r:
        body = r.read()
    return json.loads(body) if body else None


def _wait_for_server(base: str, token: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"JupyterLab exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            _api(base, token, "/api/status")
            return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"JupyterLab did not answer in 120 s:\n{log.read_text()[-3000:]}")


def _stop(server: subprocess.Popen, base: str, token: str) -> None:
    """Shut down every kernel, then the server (its own /api/shutdown), then make sure it is gone."""
    try:
        for k in _api(base, token, "/api/kernels") or []:
            _api(base, token, f"/api/kernels/{k['id']}", "DELETE")
        _api(base, token, "/api/shutdown", "POST")
        server.wait(30)
    except (OSError, subprocess.TimeoutExpired):
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )
        try:
            yield b
        finally:
            b.close()


def _open(browser, lab, name: str):
    page = browser.new_page(viewport=VIEWPORT)
    # A workspace per chapter, reset: JupyterLab would otherwise reopen the earlier chapters' tabs (and kernels).
    page.goto(f"{lab['base']}/lab/workspaces/{Path(name).stem}/tree/{name}?reset&token={lab['token']}")
    page.wait_for_function(
        "(name) => window.jupyterapp && window.jupyterapp.shell.currentWidget && "
        "window.jupyterapp.shell.currentWidget.context && "
        "window.jupyterapp.shell.currentWidget.context.path === name && "
        "window.jupyterapp.shell.currentWidget.sessionContext && "
        "window.jupyterapp.shell.currentWidget.sessionContext.session && "
        "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel && "
        "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
        arg=name,
        timeout=120_000,
    )
    return page


def _monitor_cells(state: dict) -> list[int]:
    return [
        c["i"]
        for c in state["cells"]
        if c["type"] == "code"
        and "gpulab.monitor(" in c["source"]
        and "show=False" not in c["source"]
        and not c["source"].startswith("%%gpu")
    ]


def _run_all(page, name: str) -> tuple[dict, dict[int, set[str]]]:
    """Run All, and while it runs record each monitor cell's live image sources; return the end state."""
    watched = _monitor_cells(page.evaluate(CELLS_JS))
    page.evaluate(WATCH_FRAMES_JS, watched)
    # Not awaited: the command's promise waits for every cell, and never settles when an error stops the run.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    deadline, started, shot, quiet_since = time.monotonic() + CHAPTER_TIMEOUT_S, False, False, None
    while time.monotonic() < deadline:
        state = page.evaluate(CELLS_JS)
        frames = {int(i): set(sources) for i, sources in page.evaluate(FRAMES_JS).items()}
        for i in frames:
            if len(frames[i]) >= 2 and not shot:
                page.evaluate(
                    "(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].node.scrollIntoView()", i
                )
                page.screenshot(path=str(SHOTS / f"{Path(name).stem}-monitor-live.png"))
                shot = True
        code = [c for c in state["cells"] if c["type"] == "code"]
        started = started or any(c["running"] for c in code)
        # JupyterLab sends the cells one after another, so the kernel is idle for a moment between two of them:
        # done means idle with no cell running for QUIET_S on end (or stopped by an error: later cells have no count).
        if started and state["status"] == "idle" and not any(c["running"] for c in code):
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= QUIET_S:
                return state, frames
        else:
            quiet_since = None
        time.sleep(0.25)
    pytest.fail(f"{name}: still running after {CHAPTER_TIMEOUT_S} s")


def _errors_outside_raises(state: dict) -> list[str]:
    bad = []
    for c in state["cells"]:
        for o in c["outputs"]:
            if o.get("output_type") == "error" and "raises-exception" not in c["tags"]:
                bad.append(f"cell {c['i']}: {o.get('ename')}: {o.get('evalue')}")
    return bad


def _check_picker(page, name: str) -> None:
    picker = page.locator(".jp-OutputArea-output .widget-checkbox").first.locator(
        "xpath=ancestor::div[contains(@class,'jp-OutputArea-output')][1]"
    )
    picker.scroll_into_view_if_needed()
    assert picker.locator(".widget-checkbox").count() == 8, "one checkbox per GPU of the described server"
    before = picker.inner_text()
    picker.screenshot(path=str(SHOTS / f"{Path(name).stem}-picker-before.png"))
    header = page.evaluate(PICKER_HEADER_JS, picker.element_handle())
    assert header == ["GPU", "model", "memory", "utilisation", "in use by"], header
    rows = page.evaluate(PICKER_ROWS_JS, picker.element_handle())
    assert len(rows) == 8 and all(r["badge"] in ("free", "yours", "busy") for r in rows), rows
    # the bar is green exactly where the badge says free, and free is the one rule of choose_gpus (selection.judge):
    # GPUs 3 and 5 here; GPU 1, which this notebook reserved, is "yours" (blue), never free nor busy
    assert [r["green"] for r in rows] == [r["badge"] == "free" for r in rows], rows
    assert [i for i, r in enumerate(rows) if r["badge"] == "free"] == [3, 5], rows
    assert [i for i, r in enumerate(rows) if r["badge"] == "yours"] == [1], rows
    assert "reserved by this notebook" in rows[1]["text"] and "reserved by pid" not in before, rows[1]
    assert "Pick 2 free" in before
    box = picker.locator(".widget-checkbox", has_text="GPU 6").locator("input")
    assert not box.is_checked()
    box.click()
    page.wait_for_function("(el) => el.innerText.includes('cuda:2')", arg=picker.element_handle(), timeout=10_000)
    after = picker.inner_text()
    picker.screenshot(path=str(SHOTS / f"{Path(name).stem}-picker-after.png"))
    assert "cuda:2" not in before and "CUDA_VISIBLE_DEVICES='5,1,6'" in after, after
    row = next(line for line in after.splitlines() if line.startswith("cuda:2"))
    assert row.split("\t")[1].strip() == "6", f"cuda:2 must be physical GPU 6, the one just ticked: {row!r}"


def _text(output: dict) -> str:
    text = output.get("text") or output.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else str(text)


def _screenshot_output(page, state: dict, source: str, path: Path) -> None:
    """A screenshot of the output of the first code cell whose source contains ``source``: its image if it has one
    (a figure), else the whole output."""
    i = next(c["i"] for c in state["cells"] if c["type"] == "code" and source in c["source"])
    out = page.evaluate_handle(
        "(i) => { const n = window.jupyterapp.shell.currentWidget.content.widgets[i].node;"
        " n.scrollIntoView(); return n.querySelector('.jp-OutputArea img') || "
        "n.querySelector('.jp-OutputArea'); }",
        i,
    ).as_element()
    out.scroll_into_view_if_needed()
    out.screenshot(path=str(path))


def _check_monitor(state: dict, frames: dict[int, set[str]], name: str) -> None:
    for i in frames:
        outputs = state["cells"][i]["outputs"]
        kinds = [set(o.get("data", {})) for o in outputs]
        assert any("image/png" in k for k in kinds), f"{name} cell {i}: no static figure at the end"
        assert any("Monitor summary" in str(o.get("data", {}).get("text/plain", "")) for o in outputs), (
            f"{name} cell {i}: no summary at the end"
        )
        assert not any("application/vnd.jupyter.widget-view+json" in k for k in kinds), (
            f"{name} cell {i}: the live widget was left in the output"
        )
    if name.startswith("05_"):
        main = next(i for i in frames if "digits MLP on the CPU" in state["cells"][i]["source"])
        assert len(frames[main]) >= 2, f"the live image changed {len(frames[main])} time(s) while training ran"


def test_ticking_a_gpu_in_the_picker_changes_the_mapping(lab, browser):
    """The picker as chapter 02 shows it (the described workshop server, GPUs 5 and 1 ticked), clicked for real, in a
    notebook of its own: after Run All, chapter 02's later cells have already changed its picker."""
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "id": "picker",
                "source": "import gpulab\nmine = gpulab.reserve_gpus(1, gpulab.SimulatedGpuReader('workshop-8'))"
                "  # GPU 1\npicker = gpulab.GpuPicker(gpulab.SimulatedGpuReader('workshop-8'), "
                "selected=[5, 1])\npicker.count.value = 2\npicker",
            }
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (lab["work"] / "notebooks" / "picker.ipynb").write_text(json.dumps(nb))
    page = _open(browser, lab, "picker.ipynb")
    try:
        state, _ = _run_all(page, "picker.ipynb")
        assert _errors_outside_raises(state) == []
        _check_picker(page, "picker.ipynb")
        assert page.get_by_text(NEWS_POPUP).count() == 0, "the news popup covers the page"
    finally:
        page.close()
        for session in _api(lab["base"], lab["token"], "/api/sessions") or []:
            _api(lab["base"], lab["token"], f"/api/sessions/{session['id']}", "DELETE")


# make test runs in JupyterLab the chapters whose widgets and figures these tests check (02, 05), and the workshop
# guide (the kernelspec, provisioner and Hub cells chapter 02 had); nbval has already run every chapter in a kernel, so
# the others' Run All in the browser is left to make test-slow (CI runs both).
CHECKED_IN_BROWSER = ("02_", "05_", "workshop_guide")


def _end_sessions(lab) -> None:
    """Shut down every notebook's kernel, waiting for each to exit (its clean-up included)."""
    for session in _api(lab["base"], lab["token"], "/api/sessions") or []:
        _api(lab["base"], lab["token"], f"/api/sessions/{session['id']}", "DELETE", timeout_s=120)


def _empty_kernel_tmp(lab) -> None:
    _end_sessions(lab)
    for p in (lab["work"] / "kernel-tmp").iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def _as_notebook(committed: nbformat.NotebookNode, state: dict) -> nbformat.NotebookNode:
    """A copy of the committed chapter with the outputs this run gave each cell (the page's cells, in its order)."""
    nb = copy.deepcopy(committed)
    assert len(nb.cells) == len(state["cells"]), f"the page shows {len(state['cells'])} of {len(nb.cells)} cells"
    for cell, shown in zip(nb.cells, state["cells"]):
        if cell.cell_type == "code":
            cell.outputs = [nbformat.from_dict(o) for o in shown["outputs"]]
    return nb


@pytest.mark.parametrize(
    "name", [n if n.startswith(CHECKED_IN_BROWSER) else pytest.param(n, marks=pytest.mark.slow) for n in CHAPTERS]
)
def test_chapter_runs_in_jupyterlab(lab, browser, name):
    _empty_kernel_tmp(lab)
    page = _open(browser, lab, name)
    try:
        state, frames = _run_all(page, name)
        page.screenshot(path=str(SHOTS / f"{Path(name).stem}-end.png"))
        assert _errors_outside_raises(state) == []
        not_run = [c["i"] for c in state["cells"] if c["type"] == "code" and c["count"] is None]
        assert not_run == [], f"cells that never ran: {not_run}"
        silent = [
            c["i"]
            for c in state["cells"]
            if "raises-exception" in c["tags"] and not any(o.get("output_type") == "error" for o in c["outputs"])
        ]
        assert silent == [], f"cells tagged raises-exception that did not raise under {PRESET}: {silent}"
        committed = nbformat.read(ROOT / "notebooks" / name, as_version=4)
        changed = checked_differences(committed, _as_notebook(committed, state))
        assert changed == [], f"{name} under {PRESET}: checked outputs differ from the committed ones:\n" + "\n".join(
            changed
        )
        _check_monitor(state, frames, name)
        assert page.get_by_text(NEWS_POPUP).count() == 0, "the news popup covers the page"
        if name.startswith("02_"):  # its kernel describes workshop-8: a machine's GPU count must say SIMULATED
            counts = [
                line
                for c in state["cells"]
                for o in c["outputs"]
                for line in _text(o).splitlines()
                if re.search(r"machine[^.]*?: \d+ GPU\(s\)", line)
            ]  # "this machine: 8 GPU(s)"
            assert counts and all("SIMULATED" in line for line in counts), counts
            # printed text wraps at spaces (the course's custom.css), not mid-word as JupyterLab's own style does
            assert (
                page.evaluate("() => getComputedStyle(document.querySelector('.jp-OutputArea-output pre')).wordBreak")
                == "normal"
            )
            _screenshot_output(page, state, "gpulab.GpuPicker(workshop", SHOTS / "02-picker.png")
            _screenshot_output(page, state, "gpulab.devices(workshop, processes=True)", SHOTS / "02-devices.png")
        if name.startswith("05_"):
            assert frames, "chapter 05 has a monitor cell to watch"
            _screenshot_output(page, state, "digits MLP on the CPU", SHOTS / "05-figure.png")
        page.close()
        _end_sessions(lab)  # its kernel has exited: what it left in its temporary folder is what stays
        left = _left_in(lab["work"] / "kernel-tmp")
        assert left == [], f"{name} left these in its temporary folder under {PRESET}: {left}"
    finally:
        if not page.is_closed():
            page.close()
        _empty_kernel_tmp(lab)  # one chapter's kernel at a time, and the next starts with an empty folder


def test_a_claims_ledger_link_opens_its_chapter_at_the_cell(lab, browser):
    """The ledger (notebooks/claims_ledger.md), read in JupyterLab's Markdown preview: a link to
    ``04_ddp.ipynb#cell-id=…`` opens chapter 04 and makes that cell the active one."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(f"{lab['base']}/lab/workspaces/ledger?reset&token={lab['token']}")
        page.wait_for_function(
            "() => window.jupyterapp && window.jupyterapp.commands.hasCommand('docmanager:open')", timeout=120_000
        )
        page.evaluate(
            "() => window.jupyterapp.commands.execute('docmanager:open', "
            "{path: 'claims_ledger.md', factory: 'Markdown Preview'})"
        )
        # JupyterLab resolves the href to the server's /files/ URL and opens a click on it in the Lab itself
        link = page.locator(".jp-RenderedMarkdown a[href*='/04_ddp.ipynb'][href$='#cell-id=458e15b6']").first
        link.wait_for(timeout=60_000)
        link.click()
        page.wait_for_function(
            "() => { const w = window.jupyterapp.shell.currentWidget; return w && w.context && "
            "w.context.path === '04_ddp.ipynb' && w.content && w.content.activeCell && "
            "w.content.activeCell.model.id === '458e15b6'; }",
            timeout=60_000,
        )
        page.screenshot(path=str(SHOTS / "claims-ledger-link.png"))
    finally:
        page.close()
        for session in _api(lab["base"], lab["token"], "/api/sessions") or []:
            _api(lab["base"], lab["token"], f"/api/sessions/{session['id']}", "DELETE")
