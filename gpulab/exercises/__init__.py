"""Exercises with self-checks for every chapter: ``gpulab.check("ch01-ex1", answer)``.

    feedback.py         the verdict a checker gives (pure), and how a learner's function is called
    check.py            ``check`` and the list of exercises; chapter modules are imported on first use
    ch00_setup.py … ch07_scaling.py   one module of checkers per chapter
"""
