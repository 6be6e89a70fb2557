"""The old name of ``reservation_start`` (deprecated), kept so that kernels keep starting across an upgrade.

A Jupyter server that imported an older gpulab's provisioner still starts each kernel as
``python -m gpulab.server.lease_start ...`` until it restarts; this runs ``reservation_start`` with the same arguments.
"""

from __future__ import annotations

import sys

from .reservation_start import START_MODULE, main

__all__ = ["main"]

if __name__ == "__main__":
    print(
        f"gpulab: python -m gpulab.server.lease_start is deprecated, and is now python -m {START_MODULE}; restart "
        "the Jupyter server to use the new name.",
        file=sys.stderr,
    )
    sys.exit(main())
