"""The chapters and the claims ledger cite GPU evidence files (evidence/<date>-<gpu>.json, written by make test-gpu)
only as files that exist, by the newest one for each GPU; once a file exists, the ledger cites the newest."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from gpukit.evidence import citation_problems  # noqa: E402

FILES = sorted(p.name for p in (ROOT / "evidence").glob("*.json")) if (ROOT / "evidence").is_dir() else []


def _texts() -> dict[str, str]:
    out = {"notebooks/claims_ledger.md": (ROOT / "notebooks" / "claims_ledger.md").read_text(),
           "README.md": (ROOT / "README.md").read_text()}
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        out[nb.name] = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return out


def test_every_evidence_citation_names_the_newest_existing_file():
    problems = [p for where, text in _texts().items() for p in citation_problems(text, where, FILES)]
    assert not problems, "\n".join(problems)


def test_the_ledger_cites_the_newest_evidence_once_there_is_any():
    """No evidence file exists yet (no GPU has run make test-gpu for this checkout): then there is nothing to cite."""
    if FILES:
        assert FILES[-1] in _texts()["notebooks/claims_ledger.md"], f"the claims ledger does not cite {FILES[-1]}"


def test_the_citation_check_finds_a_wrong_a_missing_and_a_stale_citation():
    files = ["2026-11-01-h100.json", "2026-11-24-h100.json", "2026-11-24-t4.json"]
    text = ("measured on an H100, 2026-11-24 (evidence/2026-11-24-h100.json); on a T4 (evidence/2026-11-24-t4.json); "
            "old: evidence/2026-11-01-h100.json; typo: evidence/h100.json; gone: evidence/2026-12-01-a100.json")
    found = citation_problems(text, "ch", files)
    assert len(found) == 3, found
    assert "not the newest evidence for this GPU: cite 2026-11-24-h100.json" in found[0]
    assert "'evidence/h100.json' is not evidence/<YYYY-MM-DD>-<gpu>.json" in found[1]
    assert "2026-12-01-a100.json does not exist" in found[2]
