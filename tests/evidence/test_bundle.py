"""The GPU edition end to end, from a bundle recorded here on a described machine (no GPU needed).

A small chapter of our own (``01_tiny.ipynb``) runs under pytest and nbval, as ``make test-gpu`` runs the chapters,
with the recorder plugin (``tests/cell_recorder.py``) and ``GPULAB_SIMULATE_GPUS=kaggle-2xT4``. Its first cell tells
``%%gpu`` how many GPUs the described machine has (``gpu_cell``'s ``shortfall`` seam: the one fact a CPU lacks), so
its GPU cells run: their code is device-free, and they print the sizes they ran at. The executed chapter becomes a
bundle (``tools/gpukit/bundle.py``, labelled SIMULATED), and the tests then read it back as a learner on a laptop
would: shown under the skip when the code is the same (by hash, by chapter, by cell id), refused when the code changed
or the recording had fewer GPUs than the cell needs, labelled, in the handouts' GPU edition, and checked for privacy.
On a real GPU machine the same path runs with the GPUs' own facts (``gpu_run._machine``), unlabelled as simulated.
"""

from __future__ import annotations

import json
import os
import sys
import tarfile
import time
from pathlib import Path

import nbformat
import pytest

from tests.process_group import run

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gpu_run  # noqa: E402

from gpukit import bundle, evidence  # noqa: E402
from gpulab.checkup import recorded_cells as rc  # noqa: E402
from handoutkit import editions  # noqa: E402

CHAPTER = "01_tiny.ipynb"
SEAM = """%load_ext gpulab
import gpulab
from gpulab.machine.simulated import SimulatedGpuReader
from gpulab.notebook.magics import gpu_cell
import os
HAVE = SimulatedGpuReader(os.environ["GPULAB_SIMULATE_GPUS"]).count()  # the described machine's GPUs
ip = get_ipython()
ip.register_magic_function(
    lambda line, cell: gpu_cell(line, cell, ip, shortfall=lambda n: None if n <= HAVE else
                                f"needs {n} CUDA GPU(s), but this process sees only {HAVE} CUDA GPU(s)"),
    magic_kind="cell", magic_name="gpu")
print("fast mode:", gpulab.fast_mode())"""
ONE = '%%gpu\nprint("one GPU cell ran at size", gpulab.full_or_fast(1000, 10))'
TWO = '%%gpu 2\nprint("two GPU cell ran")\nfrom IPython.display import Image, display\n' + (
    'display(Image(data=b"\\x89PNG\\r\\n\\x1a\\n" + bytes(200), format="png"))\n'
    'display(Image(data=b"\\x89PNG\\r\\n\\x1a\\n" + bytes(200_000), format="png"))'
)
FOUR = '%%gpu 4\nprint("four GPU cell ran")'
FAST_CPU = 'print("CPU cell size", gpulab.full_or_fast(1000, 10))'


def _tiny_chapter(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for source, tag in [(SEAM, None), (ONE, "gpu"), (FAST_CPU, None), (TWO, "multigpu"), (FOUR, "multigpu")]:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = [tag] if tag else []
        nb.cells.append(cell)
    path = folder / CHAPTER
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The tiny chapter run once by nbval with the recorder, and its bundle written into ``evidence/``."""
    tmp = tmp_path_factory.mktemp("edition")
    chapter = _tiny_chapter(tmp)
    executed = tmp / "executed"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GPULAB_SIMULATE_GPUS": "kaggle-2xT4",
        "GPULAB_FAST": "1",
        "GPULAB_FULL_GPU_CELLS": "1",
        "GPULAB_RECORD_CHAPTERS": str(executed),
        "GPULAB_RECORDINGS": str(tmp / "none"),
    }
    done = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.cell_recorder", "-o",
         "addopts=", "--nbval-lax", "--rootdir", str(tmp), str(chapter)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    machine = gpu_run.described_machine("kaggle-2xT4")
    folder = bundle.write(
        executed, tmp / "evidence", machine, date="2026-11-27", mode="fast", gpu_cells_mode="full", repo=ROOT,
        simulated=True,
    )  # fmt: skip
    return folder


def _manifest(folder: Path) -> dict:
    return json.loads((folder / rc.MANIFEST).read_text())


def test_the_run_that_tested_the_chapter_is_recorded_with_the_machine_and_each_gpu_cell(recorded):
    manifest = _manifest(recorded)
    assert recorded.name == "2026-11-27-t4" and bundle.problems(recorded) == []
    assert manifest["machine"]["gpu_count"] == 2 and manifest["machine"]["simulated"] is True
    assert (manifest["mode"], manifest["gpu_cells"], manifest["schema"]) == ("fast", "full", 3)
    cells = manifest["chapters"][CHAPTER]
    assert [(c["index"], c["needs"], c["ran"]) for c in cells] == [(1, 1, True), (3, 2, True), (4, 4, False)]
    assert cells[0]["source_sha256"] == rc.source_hash(rc.cell_body(ONE))
    nb = json.loads((recorded / CHAPTER).read_text())
    outputs = ["".join(o.get("text", "")) for o in nb["cells"][1]["outputs"]]
    assert outputs == ["one GPU cell ran at size 1000\n"], "GPU cells run at the full size"
    assert "CPU cell size 10" in "".join(nb["cells"][2]["outputs"][0]["text"]), "CPU cells keep the fast size"
    images = [o["data"] for o in nb["cells"][3]["outputs"] if o["output_type"] == "display_data"]
    assert ["image/png" in d for d in images] == [True, False], "the small image stays, the large one is left out"


def test_a_skipped_cell_shows_its_recording_labelled_matched_by_chapter_and_hash(recorded, shell, capsys):
    from gpulab.notebook.magics import gpu_cell

    cells = rc.read_bundles(recorded.parent)
    found = rc.find(cells, source=rc.cell_body(ONE), needs=1, chapter=CHAPTER)
    label = (
        f"recorded on 2× Tesla T4 (SIMULATED: described GPUs, the code ran on a CPU), torch {found.cell.bundle.torch}"
    )
    assert found.note == f"{label}, 2026-11-27; not run here"
    os.environ["GPULAB_RECORDINGS"] = str(recorded.parent)
    try:
        gpu_cell("", rc.cell_body(ONE), shell, shortfall=lambda n: "needs 1 CUDA GPU(s), but none here", chapter=None)
        gpu_cell("2", rc.cell_body(TWO), shell, shortfall=lambda n: "needs 2 CUDA GPU(s), but none here")
    finally:
        del os.environ["GPULAB_RECORDINGS"]
    out = capsys.readouterr().out
    assert out.startswith("Not run here: needs 1 GPU, and none here.\n")
    assert f"── {label}, 2026-11-27; not run here ──\none GPU cell ran at size 1000\n" in out
    assert "two GPU cell ran\n" in out and "<IPython.core.display.Image object>" in out  # the image, displayed


def test_the_cell_id_finds_the_cell_without_the_chapter_and_a_changed_cell_is_refused(recorded):
    cells = rc.read_bundles(recorded.parent)
    one_id = _manifest(recorded)["chapters"][CHAPTER][0]["id"]
    assert rc.find(cells, source=rc.cell_body(ONE), needs=1, cell_id=one_id).cell.index == 1
    changed = rc.cell_body(ONE).replace("1000", "2000")
    by_id = rc.find(cells, source=changed, needs=1, chapter=CHAPTER, cell_id=one_id)
    assert by_id.cell is None and by_id.note == (
        "This cell's code changed since its recording (2026-11-27): the old output is not shown."
    )
    no_id = rc.find(cells, source=changed, needs=1, chapter=CHAPTER)
    assert no_id.cell is None and no_id.note == "No recorded GPU output yet."
    other_chapter = rc.find(cells, source=rc.cell_body(ONE), needs=1, chapter="02_other.ipynb")
    assert other_chapter.cell is None


def test_a_recording_of_fewer_gpus_than_the_cell_needs_is_not_shown(recorded):
    cells = rc.read_bundles(recorded.parent)
    skipped_there = rc.find(cells, source=rc.cell_body(FOUR), needs=4, chapter=CHAPTER)
    assert skipped_there.cell is None
    assert skipped_there.note == (
        "Recorded only on 2 GPU(s) (Tesla T4, 2026-11-27), where it could not run: this cell needs 4, so no "
        "recording is shown."
    )
    # the same code, now asking for more GPUs than the recording had: its 2-GPU output is not passed off as enough
    more = rc.find(cells, source=rc.cell_body(TWO), needs=4, chapter=CHAPTER)
    assert more.cell is None and more.note.startswith("Recorded only on 2 GPU(s)")


def test_a_front_end_that_sends_the_cell_id_is_matched_by_it_in_a_real_kernel(recorded, tmp_path):
    """JupyterLab sends ``cellId`` in the execute request's metadata; the kernel's %%gpu reads it there."""
    from jupyter_client.manager import KernelManager

    one_id = _manifest(recorded)["chapters"][CHAPTER][0]["id"]
    km = KernelManager(kernel_name="python3")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPULAB_RECORDINGS": str(recorded.parent)}
    env.pop("JPY_SESSION_NAME", None)
    km.start_kernel(env=env, cwd=str(tmp_path))
    kc = km.client()
    try:
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        kc.execute_interactive("%load_ext gpulab", timeout=120)
        texts = []
        for source in (rc.cell_body(ONE), rc.cell_body(ONE).replace("1000", "3")):
            msg = kc.session.msg(
                "execute_request",
                {"code": "%%gpu\n" + source, "silent": False, "store_history": False, "allow_stdin": False},
                metadata={"cellId": one_id},
            )
            kc.shell_channel.send(msg)
            out = []
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                m = kc.get_iopub_msg(timeout=120)
                if m["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
                    continue
                if m["msg_type"] == "stream":
                    out.append(m["content"]["text"])
                if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                    break
            texts.append("".join(out))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    if not rc.skipped_here(texts[0]):
        pytest.skip("this machine has a GPU: the cell ran instead of showing its recording")
    assert "not run here ──\none GPU cell ran at size 1000" in texts[0]
    assert "This cell's code changed since its recording" in texts[1] and "size 1000" not in texts[1]


def test_the_handouts_gpu_edition_puts_the_recording_in_place_of_the_skip(recorded):
    nb = nbformat.read(recorded / CHAPTER, as_version=4)
    laptop = nbformat.v4.new_notebook(cells=[nbformat.from_dict(c) for c in nb.cells])
    skip = nbformat.v4.new_output("stream", name="stdout", text="Not run here: needs 1 GPU, and …\n")
    for cell in laptop.cells[1:]:
        if rc.magic_line(cell.source):
            cell.outputs = [skip]
    laptop.cells[1].source = ONE.replace("%%gpu", "%%gpu 1")  # the same code, the count written out
    edition, shown = editions.recorded_edition(laptop, CHAPTER, rc.read_bundles(recorded.parent))
    assert shown == 2
    one, two, four = (edition.cells[i].outputs for i in (1, 3, 4))
    assert one[0].text.startswith("── recorded on 2× Tesla T4 (SIMULATED") and one[1].text.startswith("one GPU")
    assert any("image/png" in o.get("data", {}) for o in two), "the recorded image is in the handout"
    assert four[0].text.startswith("Not run here") and four[1].text.startswith("Recorded only on 2 GPU(s)")
    assert laptop.cells[1].outputs == [skip], "the executed notebook itself is not changed"


def test_the_archive_holds_the_bundle_and_the_evidence_under_evidence(recorded, tmp_path):
    extra = tmp_path / "2026-11-27-t4.json"
    extra.write_text("{}")
    path = bundle.archive(recorded, [extra, tmp_path / "absent.json"])
    with tarfile.open(path) as tar:
        names = sorted(tar.getnames())
        assert {m.uname for m in tar.getmembers()} == {""}
    assert names == sorted(
        [f"evidence/{recorded.name}/{n}" for n in (CHAPTER, rc.MANIFEST)] + ["evidence/2026-11-27-t4.json"]
    )
    line = gpu_run.what_to_send(path, [])
    assert "none found. To share this run, send" in line and f"tar -xzf {path.name}" in line


PRIVATE = {"home": "/home/alice", "user": "alice", "host": "gpu-node-17"}


def _chapter_printing(recorded: Path, folder: Path, printed: str) -> Path:
    folder.mkdir()
    nb = nbformat.read(recorded / CHAPTER, as_version=4)
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed + "\n")]
    nbformat.write(nb, folder / CHAPTER)
    return folder


@pytest.mark.parametrize(
    "printed, found",
    [
        ("http://127.0.0.1:8888/lab?token=0123456789abcdef0123", "a token or key (?token=01234"),
        ("key hf_" + "A" * 34, "a token or key (hf_AAAAAAAAA"),
        ("push with ghp_" + "b" * 36, "a token or key (ghp_bbbbbbbb"),
    ],
)
def test_a_bundle_that_would_hold_a_token_is_not_written(recorded, tmp_path, printed, found):
    executed = _chapter_printing(recorded, tmp_path / "executed", printed)
    with pytest.raises(bundle.BundleError, match="would not be private") as err:
        bundle.write(
            executed, tmp_path / "out", gpu_run.described_machine("colab-T4"), date="2026-11-27", mode="full",
            gpu_cells_mode="full", repo=ROOT, facts=PRIVATE,
        )  # fmt: skip
    assert f"{CHAPTER}: {found}" in str(err.value)
    assert not (tmp_path / "out").exists()


def test_paths_homes_the_host_and_the_user_are_rewritten_in_the_bundle(recorded, tmp_path):
    printed = f"saved to /home/alice/runs/x.pt and {ROOT}/gpulab/x.py on gpu-node-17; /home/bob/y; GPU 0 held by alice"
    executed = _chapter_printing(recorded, tmp_path / "executed", printed)
    folder = bundle.write(
        executed, tmp_path / "out", gpu_run.described_machine("colab-T4"), date="2026-11-27", mode="full",
        gpu_cells_mode="full", repo=ROOT, facts=PRIVATE,
    )  # fmt: skip
    text = "".join(json.loads((folder / CHAPTER).read_text())["cells"][1]["outputs"][0]["text"])
    assert text == "saved to ~/runs/x.pt and <repo>/gpulab/x.py on <host>; ~/y; GPU 0 held by <user>\n"
    assert bundle.problems(folder, PRIVATE) == []


def test_a_bundle_edited_after_it_was_written_is_found_out(recorded, tmp_path):
    import shutil

    copy = tmp_path / recorded.name
    shutil.copytree(recorded, copy)
    nb = json.loads((copy / CHAPTER).read_text())
    nb["cells"][1]["source"] = "%%gpu\nprint('other code')"
    (copy / CHAPTER).write_text(json.dumps(nb))
    (copy / "notes.txt").write_text("x")
    found = bundle.problems(copy)
    assert f"{copy.name}/{CHAPTER}: its %%gpu cells are not as the manifest lists them" in found
    assert f"{copy.name}: files the manifest does not name: notes.txt" in found


def test_the_environment_report_lists_the_recordings(recorded):
    from gpulab.checkup.report import recording_rows

    rows = recording_rows(rc.read_bundles(recorded.parent))
    assert rows == [
        [
            "evidence/2026-11-27-t4/",
            rows[0][1],
            "1 chapters, 2 of 3 GPU cells ran there",
        ]
    ]
    assert rows[0][1].startswith("2× Tesla T4 (SIMULATED") and rows[0][1].endswith(", 2026-11-27")
    assert recording_rows([])[0][0] == "(none)"


COMMITTED = sorted(p.parent for p in (ROOT / "evidence").glob(f"*/{rc.MANIFEST}"))


NONE_YET = pytest.param(
    None, marks=pytest.mark.skip(reason="no bundle committed yet: make test-gpu on a GPU records one")
)


@pytest.mark.parametrize("folder", COMMITTED or [NONE_YET], ids=[p.name for p in COMMITTED] or ["none-yet"])
def test_each_committed_bundle_follows_the_schema_and_names_nothing_private(folder):
    assert bundle.problems(folder) == []
    assert _manifest(folder)["machine"]["simulated"] is False, "a bundle from described GPUs is never committed"


def test_the_committed_evidence_files_follow_their_schema():
    files = sorted((ROOT / "evidence").glob("[0-9]*.json"))
    assert files, "the H100 run of 2026-11-26 is committed"
    for path in files:
        record = json.loads(path.read_text())
        evidence.validate(record)
        if record["schema"] >= 3 and record.get("bundle"):
            assert (ROOT / "evidence" / record["bundle"] / rc.MANIFEST).is_file(), f"{path.name} names no bundle"


def test_the_kit_s_simulated_bundle_step_says_what_it_lacks_and_refuses_other_arguments(tmp_path, capsys):
    assert gpu_run.simulated_bundle("kaggle-2xT4", target=tmp_path) == 1
    assert "no executed chapter in" in capsys.readouterr().out
    assert gpu_run.main(["--record-twice"]) == 2
    assert (
        "gpu_run.py takes no arguments, or --simulated-bundle PRESET; got '--record-twice'" in capsys.readouterr().out
    )


def test_the_kit_s_simulated_bundle_step_writes_a_private_bundle_outside_evidence(recorded, tmp_path, capsys):
    import shutil

    shutil.copytree(recorded.parent.parent / "executed", tmp_path / "executed")
    assert gpu_run.simulated_bundle("kaggle-2xT4", target=tmp_path) == 0
    out = capsys.readouterr().out
    assert "GPU edition: 1 chapters recorded in simulated-evidence/" in out and "nothing private found" in out
    assert (tmp_path / "simulated-evidence").is_dir()


def test_make_handouts_gpu_edition_prints_the_recordings_in_place_of_the_skips(recorded, tmp_path, monkeypatch):
    """``tools/handouts.py --gpu-edition`` on a laptop: the chapter runs here (its GPU cells skip: the real magic, no
    seam), and the page shows each recorded output under its label instead."""
    import handouts

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(s) for s in ("%load_ext gpulab\nimport gpulab", ONE, FAST_CPU, TWO, FOUR)]
    (tmp_path / "ch").mkdir()
    nbformat.write(nb, tmp_path / "ch" / CHAPTER)
    monkeypatch.setenv("GPULAB_RECORDINGS", str(recorded.parent))
    args = ["--gpu-edition", "--no-pdf", "--no-cheatsheet", "--no-ledger", "--edition", "student"]
    assert handouts.main([str(tmp_path / "ch" / CHAPTER), *args, "--out", str(tmp_path / "out")]) == 0
    page = (tmp_path / "out" / "student" / "01_tiny.html").read_text()
    if "not run here" not in page:
        pytest.skip("this machine has the GPUs: the cells ran, nothing was put in their place")
    assert page.count("recorded on 2× Tesla T4 (SIMULATED: described GPUs, the code ran on a CPU)") == 2
    assert "one GPU cell ran at size 1000" in page and "two GPU cell ran" in page and "data:image/png" in page
    assert "Recorded only on 2 GPU(s) (Tesla T4, 2026-11-27)" in page  # the 4-GPU cell keeps its skip, says why
    assert "Not run here: needs 4 GPUs, and " in page
    assert "GPU cells that could not run here show what a recorded GPU run printed" in page
