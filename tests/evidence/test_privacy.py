"""Schema 2 evidence is private: paths rewritten as the run's log shows them, and nothing naming a person or a machine.

The H100 file of 2026-11-26 (schema 1, kept as written) shows what a run puts in a record: its ddp figure's note holds a
traceback with ``/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/utils.py``; its log shows that
checkout's paths as ``<repo>`` and the machine's site-packages as ``.../site-packages``.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from gpukit import evidence  # noqa: E402

FIXTURE = json.loads((Path(__file__).with_name("fixture_h100.json")).read_text())
FACTS = {"home": "/home/ada", "user": "ada", "host": "gpu-node-17.example.org"}
TRACEBACK = (
    "RankFailed: rank 0 of 1 raised RuntimeError: No backend type associated with device type cpu\n"
    '  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/utils.py", line 286, in _verify\n'
    '  File "/home/ada/gpulab/gpulab/ranks/launcher.py", line 147, in launch\n'
    '  File "/home/ada/.local/lib/python3.12/site-packages/jupyter_client/manager.py", line 9\n'
    "on gpu-node-17.example.org, see err.root.traceback"
)


def _a_record_with_paths() -> dict:
    record = copy.deepcopy(FIXTURE)
    record["figures"]["ddp_samples_per_s"] = {"not_measured": TRACEBACK}
    record["tests"]["notebooks/02_choosing_gpus.ipynb::/home/ada/gpulab/notebooks/x"] = "failed"
    return record


def test_redact_rewrites_the_checkout_site_packages_homes_and_the_host_everywhere():
    record = evidence.redact(_a_record_with_paths(), Path("/home/ada/gpulab"), FACTS)
    note = record["figures"]["ddp_samples_per_s"]["not_measured"]
    assert '"/opt/torch' not in note and '".../site-packages/torch/distributed/utils.py", line 286' in note
    assert '"<repo>/gpulab/ranks/launcher.py", line 147' in note
    assert '".../site-packages/jupyter_client/manager.py"' in note  # a user site under the home: no home left
    assert "on <host>, see err.root.traceback" in note
    assert "notebooks/02_choosing_gpus.ipynb::<repo>/notebooks/x" in record["tests"]
    assert evidence.redact(record, Path("/home/ada/gpulab"), FACTS) == record  # twice changes nothing
    text = json.dumps(record)
    assert evidence.privacy_problems(text, FACTS) == []


def test_a_record_that_is_not_redacted_is_not_written_and_says_what_it_found(tmp_path, monkeypatch):
    monkeypatch.setattr(evidence, "_machine_facts", lambda: FACTS)
    with pytest.raises(evidence.EvidenceError, match=r"would not be private.*\n.*a home folder \(/home/ada\)"):
        evidence.write(_a_record_with_paths(), tmp_path)
    assert list(tmp_path.iterdir()) == []
    found = evidence.privacy_problems(TRACEBACK, FACTS)
    assert "the user's name (ada)" in found and "this machine's name (gpu-node-17.example.org)" in found
    assert any(
        p.startswith("a site-packages path not rewritten (/opt/torch/.venv/lib/python3.12/site-packages") for p in found
    )
    path, summary = evidence.write(evidence.redact(_a_record_with_paths(), Path("/home/ada/gpulab"), FACTS), tmp_path)
    assert evidence.privacy_problems(path.read_text() + summary.read_text(), FACTS) == []


@pytest.mark.parametrize(
    "facts, text",
    [
        ({"home": "/root", "user": "root", "host": "vm"}, "err.root.traceback on the vm's gpu"),
        ({"home": "/home/runner", "user": "runner", "host": "localhost"}, "a runner ran it on localhost"),
    ],
)
def test_account_and_host_names_that_are_ordinary_words_are_not_flagged(facts, text):
    assert evidence.privacy_problems(text, facts) == []
    assert evidence.redact(text, Path("/work/gpulab"), facts) == text


def test_root_s_home_is_a_home_folder():
    facts = {"home": "/root", "user": "root", "host": "vm"}
    assert (
        evidence.redact("/root/gpulab/x.py and /root/.cache", Path("/srv/gpulab"), facts)
        == "~/gpulab/x.py and ~/.cache"
    )
    assert evidence.privacy_problems("see /root/.cache", facts) == [
        "a home folder (/root)",
        "this user's home folder (/root)",
    ]


def test_a_schema_1_file_as_committed_still_passes_the_schema_but_is_never_written_again(tmp_path):
    old = copy.deepcopy(FIXTURE)
    old["schema"] = 1
    del old["mode"]
    evidence.validate(old)
    assert "chapters ran in" not in evidence.markdown(old)
    with pytest.raises(evidence.EvidenceError, match="schema 1 files are kept as they were written"):
        evidence.write(old, tmp_path)


def test_the_kit_s_record_of_a_run_is_schema_3_with_its_mode_timings_and_this_machine_s_paths_rewritten(tmp_path):
    """What gpu_run writes after a GPU run, from this checkout and this Python's real site-packages folder."""
    import sysconfig

    import gpu_run

    site = sysconfig.get_paths()["purelib"]
    note = (
        f'Traceback:\n  File "{site}/torch/distributed/utils.py", line 286\n'
        f'  File "{ROOT}/gpulab/ranks/launcher.py", line 147, in launch\nRuntimeError: No backend type'
    )
    figures = {**FIXTURE["figures"], "ddp_samples_per_s": {"not_measured": note}}
    tests = {"tests.machine.test_cuda::test_context": "passed", "tests.evidence.test_privacy::x": "passed"}
    record = gpu_run.record_of(
        FIXTURE["machine"], "full", tests, figures, 0, timings={"figures": 40.04}, bundle="2026-11-24-h100-80gb-hbm3"
    )
    assert (record["schema"], record["mode"]) == (3, "full") and list(record["tests"]) == [next(iter(tests))]
    assert record["timings_s"] == {"figures": 40.0}
    path, summary = evidence.write(record, tmp_path)
    text = path.read_text() + summary.read_text()
    assert str(ROOT) not in text and site not in text
    written = json.loads(path.read_text())["figures"]["ddp_samples_per_s"]["not_measured"]
    assert '".../site-packages/torch/distributed/utils.py"' in written
    assert '"<repo>/gpulab/ranks/launcher.py", line 147' in written
    assert "- chapters ran in full mode (GPULAB_FAST=0)" in summary.read_text()
    assert "- time taken: figures 40 s" in summary.read_text()
    assert "- the chapters as the GPU ran them: `evidence/2026-11-24-h100-80gb-hbm3/`" in summary.read_text()
