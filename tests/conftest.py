"""Fixtures shared by the test folders (the suite-wide set-up is the repository's conftest.py)."""
from __future__ import annotations

import pytest


@pytest.fixture
def shell():
    """A real IPython shell with ``%load_ext gpulab`` done, cleared afterwards."""
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "gpulab")
    yield sh
    InteractiveShell.clear_instance()
