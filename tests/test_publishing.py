"""The ready workflow that publishes the course's website (``.github/workflows/site.yml``, docs/publishing.md) cannot
run here: this reads it, and checks that it builds with the same command as ``make site`` (the program CI's site tests
run, ``tests/test_site.py``), publishes the folder
that command writes on the branch the Colab links name, and that its publishing step, run by bash against a local
repository, pushes the site as it is."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from tests.process_group import run

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "site.yml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _steps(workflow: dict) -> list[dict]:
    (job,) = workflow["jobs"].values()
    return job["steps"]


def _make_site_recipe() -> list[str]:
    text = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^site: .*\n((?:\t.*\n)+)", text, re.M)
    assert recipe, "the Makefile has no site target"
    return [line.strip() for line in recipe.group(1).splitlines()]


def test_the_workflow_runs_on_pushes_to_main_and_by_hand(workflow):
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads the key `on` as True
    assert triggers["push"]["branches"] == ["main"] and "workflow_dispatch" in triggers
    assert workflow["permissions"]["contents"] == "write"


def test_it_builds_with_the_same_command_as_make_site_and_ci(workflow):
    """The workflow runs make site; make site and CI's site tests run one program, tools/website.py."""
    builds = [s["run"] for s in _steps(workflow) if "make site" in s.get("run", "")]
    assert len(builds) == 1, builds
    words = shlex.split(builds[0].replace("${{ github.repository }}", "OWNER/REPO"))
    assert words[:2] == ["make", "site"] and words[2:] == ["REPO_URL=https://github.com/OWNER/REPO"]
    assert "$(PY) tools/website.py --size $(SITE_SIZE) $(if $(REPO_URL),--repo-url $(REPO_URL),)" in _make_site_recipe()
    assert 'str(ROOT / "tools" / "website.py")' in (ROOT / "tests" / "test_site.py").read_text()
    python = next(s["with"]["python-version"] for s in _steps(workflow) if "setup-python" in s.get("uses", ""))
    minor = int(str(python).split(".")[1])
    assert 10 <= minor <= 13, f"the workflow's Python {python} is outside the supported 3.10-3.13"


def test_it_publishes_the_folder_make_site_writes_on_the_branch_the_colab_links_name(workflow):
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import website

    publish = next(s for s in _steps(workflow) if "git push" in s.get("run", ""))
    assert f"cd {website.OUT.relative_to(ROOT)}" in publish["run"]
    assert website.parse_args([]).pages_branch in publish["run"].split()[-1]


def test_its_publishing_step_pushes_the_site_as_it_is(workflow, tmp_path):
    """The step's own script, run by bash as the runner would, against a bare repository standing for GitHub."""
    publish = next(s for s in _steps(workflow) if "git push" in s.get("run", ""))
    remote = tmp_path / "remote.git"
    run(["git", "init", "-q", "--bare", str(remote)], check=True, timeout=60)
    work = tmp_path / "checkout"
    (work / "_site" / "_static").mkdir(parents=True)
    (work / "_site" / "index.html").write_text("<html>home</html>")
    (work / "_site" / ".nojekyll").write_text("")
    (work / "_site" / "_static" / "site.css").write_text("body {}")
    env = {"REMOTE": str(remote), "SOURCE": "abc123", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for _ in range(2):  # the second build replaces the first (a forced push of a fresh history)
        done = run(["bash", "-e", "-c", publish["run"]], cwd=work, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        run(["rm", "-rf", str(work / "_site" / ".git")], check=True, timeout=60)
    files = run(
        ["git", "--git-dir", str(remote), "ls-tree", "-r", "--name-only", "gh-pages"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split()  # fmt: skip
    assert sorted(files) == [".nojekyll", "_static/site.css", "index.html"]
    log = run(["git", "--git-dir", str(remote), "log", "--format=%s", "gh-pages"], capture_output=True, text=True,
              timeout=60).stdout.splitlines()  # fmt: skip
    assert log == ["The course's website, built from abc123"]
