"""The GPU evidence file ``make test-gpu`` writes: ``evidence/<date>-<gpu-name>.json`` and a Markdown summary beside it.

A record holds the machine (GPUs, driver, CUDA, torch, Python), each GPU test's outcome, the explain-vs-CUDA corpus
result and the figures the chapters quote. ``check`` is the schema: a record that misses a part, or carries a figure
without its unit, is refused before anything is written. Chapters and the claims ledger cite a file by its name
(``evidence/2026-11-24-h100.json``); ``tests/test_evidence_citations.py`` keeps those citations in step.

Schema 2 (what the kit writes from now on) adds the mode the chapters ran in (``fast`` or ``full``: GPULAB_FAST), and
is private: ``redact`` rewrites paths as the run's log shows them (the checkout as ``<repo>``, a site-packages folder
as ``.../site-packages``, a home folder as ``~``) everywhere in the record, tracebacks in figures' notes included, and
``write`` refuses a file that still names a home folder, the user or the machine (``privacy_problems``). Schema 1 files
(the H100 run of 2026-11-26, committed as it was written) still pass ``check``; nothing writes them any more.
Schema 3 adds how long each part of the run took (``timings_s``: install, tests, figures, recording) and the name of
the GPU edition's bundle recorded beside the file (``bundle``: ``evidence/<date>-<gpu>/``, or null where none was;
``tools/gpukit/bundle.py``, whose manifest carries the same schema number). ``privacy_problems`` also finds tokens
(a Jupyter ``token=``, Hugging Face, GitHub, AWS and Slack keys).
"""

from __future__ import annotations

import getpass
import json
import re
import socket
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 3
SCHEMAS = (1, 2, SCHEMA_VERSION)  # what check accepts: files already committed keep the schema they were written with
MODES = ("fast", "full")
MACHINE_KEYS = {"gpus": list, "driver": str, "cuda": str, "torch": str, "python": str}
GPU_KEYS = {"name": str, "memory_bytes": int}
OUTCOMES = {"passed", "failed", "skipped", "error"}
# The figures the chapters quote; each is {"value": number, "unit": str} plus optional "peak"/"note", or
# {"not_measured": reason} where the machine cannot show it (NCCL with one GPU).
FIGURES = (
    "h2d_pageable_gbps",
    "h2d_pinned_gbps",
    "d2h_pageable_gbps",
    "d2h_pinned_gbps",
    "non_blocking_overlap",
    "matmul_tflops",
    "cuda_context_bytes",
    "dataparallel_samples_per_s",
    "ddp_samples_per_s",
    "nccl_allreduce_busbw_gbps",
)
NAME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})-([a-z0-9]+(?:-[a-z0-9]+)*)\.json$")


class EvidenceError(ValueError):
    """A record that does not follow the schema (what is wrong, and where)."""


def slug(gpu_name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'h100-80gb-hbm3': the GPU part of the file name."""
    words = re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-").split("-")
    return "-".join(w for w in words if w not in ("nvidia", "tesla", "geforce")) or "gpu"


def file_name(date: str, gpu_name: str) -> str:
    name = f"{date}-{slug(gpu_name)}.json"
    if not NAME_RE.match(name):
        raise EvidenceError(f"date {date!r} is not YYYY-MM-DD: the evidence file would be named {name!r}")
    return name


def _typed(where: str, obj: dict[str, Any], keys: dict[str, type]) -> None:
    for key, kind in keys.items():
        if not isinstance(obj.get(key), kind):
            raise EvidenceError(f"{where}.{key} must be a {kind.__name__}, got {obj.get(key)!r}")


def validate(record: dict[str, Any]) -> None:
    """Raise EvidenceError naming the first part of ``record`` that does not follow the schema."""
    if record.get("schema") not in SCHEMAS:
        raise EvidenceError(f"schema must be one of {SCHEMAS}, got {record.get('schema')!r}")
    if record["schema"] >= 2 and record.get("mode") not in MODES:
        raise EvidenceError(f"mode must be one of {MODES} (the chapters' GPULAB_FAST), got {record.get('mode')!r}")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(record.get("date"))):
        raise EvidenceError(f"date must be YYYY-MM-DD, got {record.get('date')!r}")
    if record["schema"] >= 3:
        timings = record.get("timings_s")
        if not isinstance(timings, dict) or not all(isinstance(v, (int, float)) for v in timings.values()):
            raise EvidenceError(f"timings_s must map each part of the run to its seconds, got {timings!r}")
        if record.get("bundle") is not None and not isinstance(record.get("bundle"), str):
            raise EvidenceError(f"bundle must name the recorded bundle's folder, or be null; got {record['bundle']!r}")
    _typed("machine", record.get("machine") or {}, MACHINE_KEYS)
    if not record["machine"]["gpus"]:
        raise EvidenceError("machine.gpus is empty: evidence is recorded only where a GPU ran the tests")
    for i, gpu in enumerate(record["machine"]["gpus"]):
        _typed(f"machine.gpus[{i}]", gpu, GPU_KEYS)
    tests = record.get("tests")
    if not isinstance(tests, dict) or not tests:
        raise EvidenceError("tests must map each GPU test's id to its outcome, and name at least one")
    for test_id, outcome in tests.items():
        if outcome not in OUTCOMES:
            raise EvidenceError(f"tests[{test_id!r}] is {outcome!r}, not one of {sorted(OUTCOMES)}")
    corpus = record.get("explain_corpus")
    if (
        not isinstance(corpus, dict)
        or not isinstance(corpus.get("snippets"), int)
        or not isinstance(corpus.get("disagreements"), list)
    ):
        raise EvidenceError("explain_corpus must give snippets (int) and disagreements (list)")
    figures = record.get("figures") or {}
    for name in FIGURES:
        fig = figures.get(name)
        if not isinstance(fig, dict):
            raise EvidenceError(f"figures.{name} is missing: give a value with its unit, or not_measured with why")
        if "not_measured" in fig:
            if not isinstance(fig["not_measured"], str) or not fig["not_measured"]:
                raise EvidenceError(f"figures.{name}.not_measured must say why")
        elif not isinstance(fig.get("value"), (int, float)) or not isinstance(fig.get("unit"), str):
            raise EvidenceError(f"figures.{name} needs a numeric value and a unit, got {fig!r}")


def markdown(record: dict[str, Any]) -> str:
    """The summary beside the JSON file: the machine, the tests' outcomes, the corpus and the figures."""
    m = record["machine"]
    gpus = ", ".join(f"{g['name']} ({g['memory_bytes'] / 2**30:.0f} GiB)" for g in m["gpus"])
    counts: dict[str, int] = {}
    for outcome in record["tests"].values():
        counts[outcome] = counts.get(outcome, 0) + 1
    lines = [
        f"# GPU evidence, {record['date']}",
        "",
        f"- GPUs: {gpus}",
        f"- driver {m['driver']}, CUDA {m['cuda']}, torch {m['torch']}, Python {m['python']}",
        *(
            [f"- chapters ran in {record['mode']} mode (GPULAB_FAST={int(record['mode'] == 'fast')})"]
            if "mode" in record
            else []
        ),
        f"- GPU tests: {', '.join(f'{n} {k}' for k, n in sorted(counts.items()))}",
        *([f"- time taken: {_timings(record['timings_s'])}"] if record.get("timings_s") else []),
        *([f"- the chapters as the GPU ran them: `evidence/{record['bundle']}/`"] if record.get("bundle") else []),
        _explain_line(record["explain_corpus"]),
        "",
        "| figure | measured | peak | note |",
        "|---|---|---|---|",
    ]
    for name in FIGURES:
        fig = record["figures"][name]
        if "not_measured" in fig:
            lines.append(f"| {name} | not measured | | {fig['not_measured']} |")
        else:
            peak = f"{fig['peak']:g} {fig['unit']}" if "peak" in fig else ""
            lines.append(f"| {name} | {fig['value']:g} {fig['unit']} | {peak} | {fig.get('note', '')} |")
    failed = [t for t, o in record["tests"].items() if o in ("failed", "error")]
    if failed:
        lines += ["", "Failed:", *(f"- `{t}`" for t in failed)]
    return "\n".join(lines) + "\n"


def _timings(timings: dict[str, float]) -> str:
    return ", ".join(f"{part} {seconds:.0f} s" for part, seconds in timings.items())


def _explain_line(corpus: dict[str, Any]) -> str:
    """explain() against CUDA, counted in snippets (each corpus test records its counts; a test that failed before
    counting is named, so that 0 snippets never reads as agreement)."""
    line = f"- explain vs CUDA: {corpus['snippets']} snippets run, {len(corpus['disagreements'])} disagreed"
    uncounted = corpus.get("uncounted") or []
    return line + (
        f"; {len(uncounted)} corpus test(s) failed before counting: {', '.join(uncounted)}" if uncounted else ""
    )


def write(record: dict[str, Any], folder: Path) -> tuple[Path, Path]:
    """Validate ``record`` and write it as JSON plus its Markdown summary into ``folder``; returns both paths.

    Only the current schema is written, and only when neither file names a home folder, the user or this machine
    (``redact`` first)."""
    validate(record)
    if record["schema"] != SCHEMA_VERSION:
        raise EvidenceError(
            f"schema {record['schema']} files are kept as they were written; the kit writes schema "
            f"{SCHEMA_VERSION} (with the mode, the time each part took, the bundle, and paths rewritten)"
        )
    texts = {".json": json.dumps(record, indent=2, sort_keys=True) + "\n", ".md": markdown(record)}
    found = [f"the {suffix} file: {p}" for suffix, text in texts.items() for p in privacy_problems(text)]
    if found:
        raise EvidenceError(
            "the evidence would not be private, so nothing was written (evidence.redact rewrites "
            "paths; name what else it must rewrite):\n" + "\n".join(found)
        )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(record["date"], record["machine"]["gpus"][0]["name"])
    path.write_text(texts[".json"])
    summary = path.with_suffix(".md")
    summary.write_text(texts[".md"])
    return path, summary


# A folder ending in site-packages (or Debian's dist-packages) given by its absolute path; the lookbehind leaves a
# rewritten ".../site-packages" alone, so that redact can run twice.
_SITE = re.compile(r"(?<![\w.])/[^\s\"'<>()\[\],;:]*?/((?:site|dist)-packages)(?=[/\s\"'),;:]|$)")
_HOME = re.compile(r"(?<![\w.])/(?:home|Users)/[^/\s\"'<>()\[\],;:]+|(?<![\w.~])/root(?=/|\b)")
# Accounts that name no person (a CI runner, a container's default): checking these would flag ordinary words.
_ACCOUNTS = {"root", "runner", "user", "admin", "ubuntu", "jovyan", "nobody", "ec2-user", "colab", "kaggle"}


# Secrets a run's output may carry: a Jupyter server's token in a URL, and the usual key shapes.
_TOKEN = re.compile(
    r"[?&]token=[0-9a-f]{16,}|\bhf_[A-Za-z0-9]{30,}|\bgh[pousr]_[A-Za-z0-9]{30,}|\bAKIA[0-9A-Z]{16}\b"
    r"|\bxox[abpr]-[A-Za-z0-9-]{10,}"
)


def _machine_facts() -> dict[str, str]:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container): nothing of it to find
        user = ""
    return {"home": str(Path.home()), "user": user, "host": socket.gethostname()}


def person_name(facts: dict[str, str] | None = None) -> str | None:
    """This user's account name where it names a person (not ``root``, ``runner``, ``jovyan``…), else None."""
    user = (facts or _machine_facts())["user"]
    return user if _names_someone(user) else None


def _names_someone(word: str, accounts: set[str] = _ACCOUNTS) -> bool:
    return len(word) >= 3 and word.lower() not in accounts


def _names_a_machine(host: str) -> bool:
    """A host name worth hiding: one with a digit, a dash or a dot, or a long one. A short plain word ("vm", "gpu")
    names no machine, and hiding it would rewrite that word wherever the record uses it."""
    return host not in ("", "localhost") and (bool(re.search(r"[\d.-]", host)) or len(host) >= 10)


def redact(obj: Any, repo: Path, facts: dict[str, str] | None = None) -> Any:
    """``obj`` with every string's paths rewritten as the run's log shows them: ``repo`` as ``<repo>``, a site-packages
    folder as ``.../site-packages``, a home folder as ``~``, this machine's name as ``<host>``. Keys too; a copy."""
    facts = facts or _machine_facts()
    if isinstance(obj, dict):
        return {redact(k, repo, facts): redact(v, repo, facts) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact(v, repo, facts) for v in obj]
    if not isinstance(obj, str):
        return obj
    text = _SITE.sub(r".../\1", obj)  # first: a venv inside the checkout is site-packages, not <repo>/...
    for form in sorted({str(repo), str(Path(repo).resolve())}, key=len, reverse=True):
        text = text.replace(form, "<repo>")
    if facts["home"] not in ("", "/"):
        text = re.sub(re.escape(facts["home"]) + r"(?=/|\b)", "~", text)
    text = _HOME.sub("~", text)
    if _names_a_machine(facts["host"]):
        text = re.sub(rf"\b{re.escape(facts['host'])}\b", "<host>", text)
    return text


def privacy_problems(text: str, facts: dict[str, str] | None = None) -> list[str]:
    """What in ``text`` names a person or a machine: a home folder, the user's name, the host's name, a
    site-packages path not rewritten (it holds the Python's folder, often under a home), or a token. One line each."""
    facts = facts or _machine_facts()
    out = [f"a home folder ({m.group(0)})" for m in _HOME.finditer(text)]
    if facts["home"] not in ("", "/") and facts["home"] in text:
        out.append(f"this user's home folder ({facts['home']})")
    out += [f"a site-packages path not rewritten ({m.group(0)})" for m in _SITE.finditer(text)]
    out += [f"a token or key ({m.group(0)[:12]}…)" for m in _TOKEN.finditer(text)]
    if _names_someone(facts["user"]) and re.search(rf"\b{re.escape(facts['user'])}\b", text):
        out.append(f"the user's name ({facts['user']})")
    if _names_a_machine(facts["host"]) and re.search(rf"\b{re.escape(facts['host'])}\b", text):
        out.append(f"this machine's name ({facts['host']})")
    return sorted(set(out))


CITATION_RE = re.compile(r"(?<![\w/])evidence/[\w.-]*\w")


def citation_problems(text: str, where: str, files: list[str]) -> list[str]:
    """What is wrong with the evidence citations in ``text``: each names ``evidence/<date>-<gpu>.json``, a file that
    exists (``files``: the names in evidence/), and the newest file for that GPU (a newer measurement replaces it)."""
    newest: dict[str, str] = {}
    for name in sorted(f for f in files if NAME_RE.match(f)):
        newest[NAME_RE.match(name).group(2)] = name
    out = []
    for cited in CITATION_RE.findall(text):
        name = cited.split("/", 1)[1]
        m = NAME_RE.match(name)
        if not m:
            out.append(f"{where}: {cited!r} is not evidence/<YYYY-MM-DD>-<gpu>.json")
        elif name not in files:
            out.append(f"{where}: {cited} does not exist (make test-gpu on a GPU machine writes it)")
        elif newest[m.group(2)] != name:
            out.append(f"{where}: {cited} is not the newest evidence for this GPU: cite {newest[m.group(2)]}")
    return out
