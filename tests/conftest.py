"""Fixtures shared by the test folders (the suite-wide set-up is the repository's conftest.py)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def shell():
    """A real IPython shell with ``%load_ext gpulab`` done, cleared afterwards."""
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "gpulab")
    yield sh
    InteractiveShell.clear_instance()


@pytest.fixture
def short_tmp():
    """An empty scratch folder with a short path, removed afterwards: for a test that points a kernel's ``TMPDIR`` at
    it. multiprocessing puts its fork server's socket at ``$TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX``, and a Unix
    socket's path may have at most 107 bytes; under pytest-xdist ``tmp_path`` is long enough (``…/popen-gw0/<test
    name>0/``) to pass that, and the kernel then fails with "AF_UNIX path too long"."""
    path = Path(tempfile.mkdtemp(prefix="gl-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
