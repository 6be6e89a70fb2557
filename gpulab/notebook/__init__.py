"""gpulab inside IPython: the ``%%gpu`` and ``%%ranks`` magics, short tracebacks, and the shell demo.

``magics`` is what ``%load_ext gpulab`` loads; ``tracebacks`` keeps a crash's learner lines and the line that
raised; ``shell`` runs a bash session for real, to show what a started program inherits (chapter 02). Used by every
chapter.
"""

from ..core.lazy import export_lazily

export_lazily(__name__, {"load_ipython_extension": "magics", "run_shell": "shell"})
