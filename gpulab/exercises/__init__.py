"""Exercises with self-checks for every chapter: ``gpulab.check("ch01-ex1", answer)``.

feedback.py         the verdict a checker gives (pure), and how a learner's function is called
check.py            ``check`` and the list of exercises; chapter modules are imported on first use
ch00_setup.py … ch08_resume.py    one module of checkers per chapter
"""

from ..core.lazy import export_lazily

export_lazily(
    __name__,
    {
        "described_sweep": "ch07_scaling",  # the sweep chapter 07's exercise reads
        "workshop_csv": "ch02_choosing",  # what nvidia-smi prints on workshop-8, for chapter 02's exercise 3
    },
)
