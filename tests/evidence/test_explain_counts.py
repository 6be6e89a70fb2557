"""make test-gpu's evidence counts explain's corpus in snippets, not in tests (tools/gpu_run.py::explain_corpus).

The H100 run's summary said "2 snippets, 1 disagreement": it counted the corpus test ids, where the test had run 123
snippets and 54 disagreed (evidence/2026-11-26-h100-80gb-hbm3.md). Here a real pytest writes real JUnit XML from
tests that record their counts as the corpus test does, and the kit reads them back.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gpu_run  # noqa: E402

from gpukit import evidence  # noqa: E402
from tests import process_group  # noqa: E402

# two corpus tests that counted (one with 2 disagreeing snippets of 120, one of 3 that all agreed), one that failed
# before counting, and a test of another file whose failure is not the corpus's
CORPUS = """
from tests.placement.explain_evidence import COUNTS_PROPERTY, corpus_counts

def test_one_gpu(record_property):
    record_property(COUNTS_PROPERTY, corpus_counts(120, ["[] y = x.cuda(1): predicted A, PyTorch raised B",
                                                         "[] model.cuda(1): predicted A, PyTorch raised B"]))
    assert False, "2 of 120 snippets disagree"

def test_several_gpus(record_property):
    record_property(COUNTS_PROPERTY, corpus_counts(3, []))

def test_runner_crashed():
    raise RuntimeError("the runner failed")
"""


def _junit(tmp_path: Path) -> Path:
    pkg = tmp_path / "tests" / "placement"
    pkg.mkdir(parents=True)
    (pkg / "test_explain_on_gpus.py").write_text(textwrap.dedent(CORPUS))
    (tmp_path / "tests" / "test_other.py").write_text("def test_x():\n    assert False\n")
    junit = tmp_path / "junit.xml"
    process_group.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={junit}",
            f"--rootdir={tmp_path}",
            str(pkg / "test_explain_on_gpus.py"),
            str(tmp_path / "tests"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return junit


def test_the_kit_adds_up_the_snippets_the_corpus_tests_recorded(tmp_path):
    corpus = gpu_run.explain_corpus(_junit(tmp_path))
    assert corpus["snippets"] == 123 and len(corpus["disagreements"]) == 2
    assert corpus["disagreements"][0].startswith("[] y = x.cuda(1): predicted A")
    assert [u.rsplit("::", 1)[1] for u in corpus["uncounted"]] == ["test_runner_crashed"]


def test_no_junit_means_nothing_counted(tmp_path):
    assert gpu_run.explain_corpus(tmp_path / "missing.xml") == {"snippets": 0, "disagreements": [], "uncounted": []}


def test_the_summary_says_snippets_and_names_a_test_that_did_not_count():
    line = evidence._explain_line({"snippets": 123, "disagreements": ["a"] * 54, "uncounted": []})
    assert line == "- explain vs CUDA: 123 snippets run, 54 disagreed"
    line = evidence._explain_line({"snippets": 0, "disagreements": [], "uncounted": ["t::crashed"]})
    assert line.endswith("0 snippets run, 0 disagreed; 1 corpus test(s) failed before counting: t::crashed")
