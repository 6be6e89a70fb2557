"""The README and the docs/ pages stay short and true: every file, command and link they name exists.

The README is what a newcomer reads in two minutes (at most 150 lines); the rest lives in docs/, one page per reader,
each linked from the README. No paragraph (or list item) of any of them runs past 8 lines. A relative link opens a file
of this checkout (and, with ``#anchor``, a heading of it); a path in backticks is a file or folder of the checkout,
unless it is one the course writes (a build folder, a run's evidence); ``make X`` is a Makefile target;
``python -m gpulab ...`` is a command (and its flags) the command line accepts.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
IDS = [p.relative_to(ROOT).as_posix() for p in PAGES]
# folders and files the course writes when it runs (git-ignored, or made by a command the page names)
WRITTEN = (
    ".venv",
    ".venv-compat",
    ".venv-kit",
    ".gpu-deps",
    "wheelhouse",
    "handouts",
    "build",
    "_site",  # make site
    "mywork",  # make lab: the learner's copy of the chapters (tools/learner_copy.py)
    "colab",  # the Colab editions, on the branch the site is published on
    "gpulab.egg-info",
    "...",
)
WRITTEN += ("student", "instructor")  # the handouts' folders (make handouts)
PATH = re.compile(r"`((?:\.{0,2}/)?[\w.-]+(?:/[\w.-]+)*/?)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _prose(text: str) -> list[str]:
    """The page's lines outside fenced code blocks."""
    out, fence = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            out.append(line)
    return out


def paragraphs(text: str) -> list[list[str]]:
    """Each paragraph or list item (a table, a heading and a code block are none)."""
    out: list[list[str]] = []
    cur: list[str] = []
    for line in _prose(text) + [""]:
        item = re.match(r"^\s*([*-]|\d+\.) ", line)
        if not line.strip() or line.startswith("#") or line.lstrip().startswith("|") or item:
            if cur:
                out.append(cur)
            cur = [line] if item else []
        else:
            cur.append(line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in _prose(_text(path)) if line.startswith("#")}


def _make_targets() -> set[str]:
    return set(re.findall(r"^([\w-]+):", _text(ROOT / "Makefile"), re.M))


def test_the_readme_is_short_and_links_every_docs_page():
    readme = _text(ROOT / "README.md")
    assert len(readme.splitlines()) <= 150
    for page in PAGES[1:]:
        assert f"docs/{page.name}" in readme, f"the README does not link docs/{page.name}"


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_no_paragraph_is_longer_than_8_lines(path):
    long = [p[0][:60] for p in paragraphs(_text(path)) if len(p) > 8]
    assert long == [], f"split these paragraphs (or lists of them) into shorter ones: {long}"


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_every_relative_link_opens_a_file_and_its_heading(path):
    bad = []
    for target in LINK.findall(_text(path)):
        if re.match(r"^[a-z]+:", target):  # http(s), mailto: not this checkout's
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target}: no such heading")
    assert bad == []


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_every_path_named_exists(path):
    missing = []
    for name in PATH.findall(_text(path)):
        if "/" not in name or name.startswith("/") or name.split("/")[0] in WRITTEN or "." not in name and "/" == name:
            continue
        if name.startswith("evidence/") and not (ROOT / name).exists() and re.search(r"\d{4}-\d\d-\d\d", name) is None:
            continue
        if not any((base / name).exists() for base in (ROOT, ROOT / "notebooks", path.parent)):
            missing.append(name)
    assert missing == []


def _commands(text: str) -> list[str]:
    found = re.findall(r"`([^`\n]*\b(?:make [\w-]+|python3? -m gpulab [^`\n]*))`", text)
    in_block = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_block = not in_block
        elif in_block and re.search(r"\bmake [\w-]+|python3? -m gpulab ", line):
            found.append(line)
    return found


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_every_make_target_and_gpulab_command_exists(path, capsys):
    from gpulab.__main__ import main

    targets = _make_targets()
    bad = []
    for command in _commands(_text(path)):
        for target in re.findall(r"\bmake ([\w-]+)", command):
            if target not in targets:
                bad.append(f"{command}: no make target {target}")
        found = re.search(r"python3? -m gpulab ([^#|;&]*)", command)
        if found:
            words = [w for w in shlex.split(found.group(1)) if w not in ("…", "...")]
            words = ["0" if re.fullmatch(r"[A-Z]+", w) else w for w in words]  # N, K, NAME: a placeholder
            if not words or words[0] in ("watch", "env", "devices", "visible", "release"):
                words = [*words[:1], "--help"] if words else ["--help"]
            elif words[:2] in (["kernelspec", "list"], ["kernelspec", "remove"]):
                words = words[:2] + ["--help"]
            else:
                words = [*words, "--help"]
            try:
                main(words)
            except SystemExit as stop:
                if stop.code not in (0, None):
                    bad.append(f"{command}: python -m gpulab {' '.join(words)} is refused")
    capsys.readouterr()
    assert bad == []


def test_the_paragraph_rule_catches_a_long_paragraph_and_a_long_list_item():
    long = "\n".join(["word"] * 9)
    assert [len(p) for p in paragraphs(long)] == [9]
    assert [len(p) for p in paragraphs("- a\n- " + long)] == [1, 9]
    assert paragraphs("| a |\n| b |\n# h\n```\n" + long + "\n```") == []


def test_the_link_check_knows_githubs_anchors():
    assert (
        slug(" A workshop server: every student gets a free GPU") == "a-workshop-server-every-student-gets-a-free-gpu"
    )
    assert slug("A PyTorch build that matches an older driver") == "a-pytorch-build-that-matches-an-older-driver"


# A sentence ends with one of these, maybe inside a closing quote, bracket, emphasis or code span.
SENTENCE_END = re.compile(r"[.!?:][)\]*_\"'`]*$")
LIST_ITEM_END = re.compile(r"[.!?:;][)\]*_\"'`]*$")  # an item of a list may end with the ; that joins it to the next
CODE_SPAN = re.compile(r"`[^`]*`")


def cut_paragraphs(text: str) -> list[str]:
    """Paragraphs that a heading, a blank line or the page's end cut in two: one left with a parenthesis open, one
    that stops without ending its sentence, and one that starts in the middle of a sentence (a lower-case word)."""
    found = []
    for para in paragraphs(text):
        joined = " ".join(line.strip() for line in para)
        is_item = re.match(r"^\s*([*-]|\d+\.) ", para[0]) is not None
        plain = CODE_SPAN.sub("code", joined)
        start = re.sub(r"^([*-]|\d+\.) ", "", joined)
        if plain.count("(") > plain.count(")"):
            found.append(f"a parenthesis left open: ...{joined[-70:]}")
        elif not (LIST_ITEM_END if is_item else SENTENCE_END).search(plain):
            found.append(f"stops mid-sentence: ...{joined[-70:]}")
        if not is_item and re.match(r"^[a-z]", start):
            found.append(f"starts mid-sentence: {joined[:70]}...")
    return found


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_every_paragraph_is_whole(path):
    assert cut_paragraphs(_text(path)) == []


def test_the_whole_paragraph_rule_catches_each_way_a_paragraph_is_cut():
    assert cut_paragraphs("Whole (with a parenthesis) and `code (`.\n\n- An item.\n") == []
    assert cut_paragraphs("Ends with a path: `a/b`.\n\nA list follows:\n\n- one.\n") == []
    cut_by_heading = (
        "A hygiene test checks that every chapter a notebook or\n\n## Heading\n\nthis README mentions exists."
    )
    assert cut_paragraphs(cut_by_heading) == [
        "stops mid-sentence: ...A hygiene test checks that every chapter a notebook or",
        "starts mid-sentence: this README mentions exists....",
    ]
    assert cut_paragraphs("Read it (from the system;\n\nnot the file).") == [
        "a parenthesis left open: ...Read it (from the system;",
        "starts mid-sentence: not the file)....",
    ]
    assert cut_paragraphs("Normalised: no execution") == ["stops mid-sentence: ...Normalised: no execution"]
