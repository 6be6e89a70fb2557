"""The GPU edition's bundle: every chapter as ``make test-gpu`` executed it, with the machine's facts, and one archive.

    evidence/<date>-<gpu>/NN_*.ipynb        each chapter as the GPU run executed it (the nbval pass that tested it,
                                            kept by tests/cell_recorder.py), normalised, without widget state and
                                            without images over IMAGE_LIMIT_BYTES (their text form stays)
    evidence/<date>-<gpu>/manifest.json     schema 3: the machine (GPU name and count, driver, CUDA, torch, Python,
                                            described or real), the date, the mode (fast/full, and the GPU cells'
                                            sizes), and for each %%gpu cell: id, position, GPUs needed, the hash of
                                            its code (gpulab.checkup.recorded_cells.source_hash), whether it ran there
    evidence/<date>-<gpu>.tar.gz            the bundle, the evidence file and its summary, and chapter 05's monitor
                                            run: one file to carry home from an offline node (not committed)

``write`` refuses to write a bundle that names a person, a machine or a token (``evidence.privacy_problems``), and
``problems`` checks a bundle already written (the test of committed bundles runs it), so that what a learner sends
from a GPU machine can be committed as it is.
"""

from __future__ import annotations

import json
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

from gpukit import evidence
from gpulab.checkup.recorded_cells import BUNDLE_KIND, MANIFEST, cell_body, magic_line, skipped_here, source_hash

SCHEMA_VERSION = evidence.SCHEMA_VERSION  # one number for what the kit writes from now on
IMAGE_LIMIT_BYTES = 48 * 1024  # an image's base64 text; larger ones are left out (their text/plain stays)
CHAPTER = re.compile(r"^\d{2}_[\w-]+\.ipynb$")
MACHINE_KEYS = {"gpus": list, "driver": str, "cuda": str, "torch": str, "python": str}


class BundleError(ValueError):
    """A bundle that does not follow the schema, or would not be private (what is wrong, and where)."""


def folder_name(date: str, gpu_name: str) -> str:
    """The bundle's folder: the evidence file's name without ``.json``."""
    return evidence.file_name(date, gpu_name)[: -len(".json")]


def _ran(outputs: list[dict[str, Any]]) -> bool:
    """Did the cell run here? Not when nbval never ran it (no output, no error) or the magic printed its skip."""
    text = "".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
    return bool(outputs) and not skipped_here(text)


def trim(nb: dict[str, Any], limit: int = IMAGE_LIMIT_BYTES) -> int:
    """Leave out widget state and every image larger than ``limit`` (its text form stays); how many were left out."""
    nb.get("metadata", {}).pop("widgets", None)
    dropped = 0
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            for kind in [k for k in data if k.startswith("image/") or "widget" in k]:
                size = len("".join(data[kind]) if isinstance(data[kind], list) else str(data[kind]))
                if "widget" in kind or size > limit:
                    del data[kind]
                    dropped += 1
            if "data" in out and not data:
                data["text/plain"] = "(an image, left out of the recording)"
    return dropped


def gpu_cells(nb: dict[str, Any]) -> list[dict[str, Any]]:
    """The manifest's lines for one executed chapter: each ``%%gpu`` cell's id, position, need, hash and whether
    it ran."""
    out = []
    for index, cell in enumerate(nb["cells"]):
        source = "".join(cell.get("source", ""))
        needs = magic_line(source) if cell.get("cell_type") == "code" else None
        if needs is None:
            continue
        out.append(
            {
                "id": cell.get("id"),
                "index": index,
                "needs": needs,
                "source_sha256": source_hash(cell_body(source)),
                "ran": _ran(cell.get("outputs", [])),
            }
        )
    return out


def manifest_of(
    machine_facts: dict[str, Any],
    date: str,
    mode: str,
    gpu_cells_mode: str,
    chapters: dict[str, list],
    *,
    simulated: bool,
) -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
        "kind": BUNDLE_KIND,
        "date": date,
        "mode": mode,
        "gpu_cells": gpu_cells_mode,
        "machine": {**machine_facts, "gpu_count": len(machine_facts["gpus"]), "simulated": simulated},
        "chapters": chapters,
    }


def validate(manifest: dict[str, Any]) -> None:
    """Raise BundleError naming the first part of ``manifest`` off the schema."""
    if manifest.get("kind") != BUNDLE_KIND:
        raise BundleError(f"kind must be {BUNDLE_KIND!r}, got {manifest.get('kind')!r}")
    if manifest.get("schema") != SCHEMA_VERSION:
        raise BundleError(f"schema must be {SCHEMA_VERSION} (bundles began with it), got {manifest.get('schema')!r}")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(manifest.get("date"))):
        raise BundleError(f"date must be YYYY-MM-DD, got {manifest.get('date')!r}")
    for key in ("mode", "gpu_cells"):
        if manifest.get(key) not in evidence.MODES:
            raise BundleError(f"{key} must be one of {evidence.MODES}, got {manifest.get(key)!r}")
    machine = manifest.get("machine") or {}
    for key, kind in MACHINE_KEYS.items():
        if not isinstance(machine.get(key), kind):
            raise BundleError(f"machine.{key} must be a {kind.__name__}, got {machine.get(key)!r}")
    if not machine["gpus"] or machine.get("gpu_count") != len(machine["gpus"]):
        raise BundleError("machine.gpus must name each GPU, and machine.gpu_count must count them")
    if not isinstance(machine.get("simulated"), bool):
        raise BundleError("machine.simulated must say whether the GPUs were described (true) or real (false)")
    chapters = manifest.get("chapters")
    if not isinstance(chapters, dict) or not chapters:
        raise BundleError("chapters must name at least one recorded chapter")
    for name, cells in chapters.items():
        if not CHAPTER.match(name):
            raise BundleError(f"chapters.{name} is not a chapter's file name (NN_name.ipynb)")
        for cell in cells:
            if set(cell) != {"id", "index", "needs", "source_sha256", "ran"}:
                raise BundleError(f"chapters.{name}: a cell must give id, index, needs, source_sha256, ran: {cell}")


def _without_user(obj: Any, facts: dict[str, str] | None) -> Any:
    """``obj`` with this user's account name written as ``<user>`` in every string: a chapter's outputs may show it
    (the owner of a GPU process, a reservation's holder), which the evidence file never does."""
    user = evidence.person_name(facts)
    if user is None:
        return obj
    word = re.compile(rf"\b{re.escape(user)}\b")

    def walk(o: Any) -> Any:
        if isinstance(o, dict):
            return {k: walk(v) for k, v in o.items()}
        if isinstance(o, list):
            return [walk(v) for v in o]
        return word.sub("<user>", o) if isinstance(o, str) else o

    return walk(obj)


def _private(name: str, text: str, facts: dict[str, str] | None) -> list[str]:
    return [f"{name}: {p}" for p in evidence.privacy_problems(text, facts)]


def write(
    executed: Path,
    out: Path,
    machine_facts: dict[str, Any],
    *,
    date: str,
    mode: str,
    gpu_cells_mode: str,
    repo: Path,
    simulated: bool = False,
    facts: dict[str, str] | None = None,
) -> Path:
    """Make the bundle ``out/<date>-<gpu>/`` from the chapters the run wrote into ``executed`` (normalised, trimmed,
    redacted: paths as ``evidence.redact`` writes them and this user's name as ``<user>``; with the manifest); returns
    its folder. Nothing is written when a file would still not be private (a token, say)."""
    import nbformat
    from normalise_notebook import normalise

    chapters = sorted(p for p in executed.glob("*.ipynb") if CHAPTER.match(p.name)) if executed.is_dir() else []
    if not chapters:
        raise BundleError(f"no executed chapter in {executed}: the run recorded nothing (was nbval run?)")
    texts: dict[str, str] = {}
    cells: dict[str, list] = {}
    for path in chapters:
        nb = normalise(nbformat.read(path, as_version=4), repo)
        raw = json.loads(nbformat.writes(nb))
        trim(raw)
        raw = _without_user(evidence.redact(raw, repo, facts), facts)
        cells[path.name] = gpu_cells(raw)
        texts[path.name] = json.dumps(raw, indent=1, ensure_ascii=False) + "\n"
    manifest = evidence.redact(
        manifest_of(machine_facts, date, mode, gpu_cells_mode, cells, simulated=simulated), repo, facts
    )
    validate(manifest)
    texts[MANIFEST] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    found = [p for name, text in texts.items() for p in _private(name, text, facts)]
    if found:
        raise BundleError("the bundle would not be private, so nothing was written:\n" + "\n".join(found))
    folder = out / folder_name(date, machine_facts["gpus"][0]["name"])
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def archive(folder: Path, extra: list[Path] = ()) -> Path:
    """``<folder>.tar.gz`` beside it: the bundle and the ``extra`` files (the evidence file, its summary, the monitor
    run), under ``evidence/``, so that unpacking it in a checkout puts each where it belongs."""
    path = folder.with_name(folder.name + ".tar.gz")
    with tarfile.open(path, "w:gz") as tar:
        for f in [*sorted(folder.iterdir()), *[e for e in extra if e.is_file()]]:
            arcname = f"evidence/{folder.name}/{f.name}" if f.parent == folder else f"evidence/{f.name}"
            info = tar.gettarinfo(str(f), arcname)
            info.uid = info.gid = 0
            info.uname = info.gname = ""  # the archive names no account
            with f.open("rb") as fh:
                tar.addfile(info, fh)
    return path


def problems(folder: Path, facts: dict[str, str] | None = None) -> list[str]:
    """What is wrong with the bundle ``folder`` as written: its manifest off the schema, a chapter missing or its
    cells not as the manifest says (hash, position, need), or anything private. Empty when nothing is."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        validate(manifest)
    except (OSError, ValueError) as exc:
        return [f"{folder.name}/{MANIFEST}: {exc}"]
    found = _private(MANIFEST, (folder / MANIFEST).read_text(encoding="utf-8"), facts)
    for name, listed in manifest["chapters"].items():
        path = folder / name
        if not path.is_file():
            found.append(f"{folder.name}/{name} is named in the manifest but missing")
            continue
        text = path.read_text(encoding="utf-8")
        found += _private(f"{folder.name}/{name}", text, facts)
        if gpu_cells(json.loads(text)) != listed:
            found.append(f"{folder.name}/{name}: its %%gpu cells are not as the manifest lists them")
    extra = sorted(p.name for p in folder.iterdir() if p.name != MANIFEST and p.name not in manifest["chapters"])
    if extra:
        found.append(f"{folder.name}: files the manifest does not name: {', '.join(extra)}")
    return found


def summary(folder: Path) -> str:
    """One paragraph for the run's end: how many GPU cells ran and were recorded, and how many could not run here."""
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    cells = [c for listed in manifest["chapters"].values() for c in listed]
    ran = sum(c["ran"] for c in cells)
    return (
        f"GPU edition: {len(manifest['chapters'])} chapters recorded in {folder.parent.name}/{folder.name}/, {ran} of "
        f"{len(cells)} GPU cells ran here (the rest need more GPUs than this machine has)."
    )
