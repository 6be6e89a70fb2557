"""Every Trainer call of the chapter's seed article (its flag rows and its full example), with today's arguments.

Shared by the pure translator tests and the tests that hand the translations to the real Lightning.
``devices`` values written ``"find_usable_cuda_devices(2)"`` are code the translator leaves for Lightning to run.
"""

from __future__ import annotations

ROWS: list[tuple[str, dict[str, object], set[str]]] = [
    # call as the article writes it, today's keyword arguments (script), releases that removed a flag it uses
    ("pl.Trainer(gpus=None)", {"accelerator": "cpu"}, {"2.0.0"}),
    ("pl.Trainer(gpus=0)", {"accelerator": "cpu"}, {"2.0.0"}),
    ("pl.Trainer(gpus=1)", {"accelerator": "gpu", "devices": 1}, {"2.0.0"}),
    ("pl.Trainer(gpus=[0, 1])", {"accelerator": "gpu", "devices": [0, 1], "strategy": "ddp"}, {"2.0.0"}),
    ("pl.Trainer(gpus=-1)", {"accelerator": "gpu", "devices": -1, "strategy": "ddp"}, {"2.0.0"}),
    ('pl.Trainer(gpus="0,1")', {"accelerator": "gpu", "devices": [0, 1], "strategy": "ddp"}, {"2.0.0"}),
    ("pl.Trainer(gpus=2)", {"accelerator": "gpu", "devices": 2, "strategy": "ddp"}, {"2.0.0"}),
    ("pl.Trainer(gpus=2, strategy='ddp')", {"accelerator": "gpu", "devices": 2, "strategy": "ddp"}, {"2.0.0"}),
    ("pl.Trainer(gpus=2, strategy='dp')", {"accelerator": "gpu", "devices": 2, "strategy": "ddp"}, {"2.0.0"}),
    ("Trainer(gpus=2, auto_select_gpus=False)", {"accelerator": "gpu", "devices": 2, "strategy": "ddp"}, {"2.0.0"}),
    (
        "Trainer(gpus=2, auto_select_gpus=True)",
        {"accelerator": "gpu", "devices": "find_usable_cuda_devices(2)", "strategy": "ddp"},
        {"2.0.0"},
    ),
    ("Trainer(gpus=-1, auto_select_gpus=False)", {"accelerator": "gpu", "devices": -1, "strategy": "ddp"}, {"2.0.0"}),
    (
        "Trainer(gpus=-1, auto_select_gpus=True)",
        {"accelerator": "gpu", "devices": "find_usable_cuda_devices(-1)", "strategy": "ddp"},
        {"2.0.0"},
    ),
    ("Trainer(log_gpu_memory=None)", {}, {"1.7.0"}),
    ("Trainer(log_gpu_memory='all')", {"callbacks": ["DeviceStatsMonitor()"]}, {"1.7.0"}),
    ("Trainer(log_gpu_memory='min_max')", {"callbacks": ["DeviceStatsMonitor()"]}, {"1.7.0"}),
    ("pl.Trainer(precision=16)", {"precision": "16-mixed"}, set()),
    ("pl.Trainer(precision=32)", {"precision": "32-true"}, set()),
    ("pl.Trainer(benchmark=True)", {"benchmark": True}, set()),
    ("pl.Trainer(accelerator='ddp')", {"strategy": "ddp"}, {"1.7.0"}),
    # the full example (t.py), laid out and commented as such calls are (comments in our words)
    (
        "pl.Trainer(\n    gpus=[2],\n    precision=32,          # the comment claims: mixed precision\n"
        "    max_epochs=2\n)",
        {"accelerator": "gpu", "devices": [2], "precision": "32-true", "max_epochs": 2},
        {"2.0.0"},
    ),
    (
        "pl.Trainer(\n    gpus=1,\n    precision = 16, \n    max_epochs=2\n    )",
        {"accelerator": "gpu", "devices": 1, "precision": "16-mixed", "max_epochs": 2},
        {"2.0.0"},
    ),
    (
        'trainer = pl.Trainer(\n    gpus=[0,2],            # a string "0,2" works too\n    accelerator="ddp",\n'
        "    precision=32,\n    max_epochs=5\n)",
        {"accelerator": "gpu", "devices": [0, 2], "strategy": "ddp", "precision": "32-true", "max_epochs": 5},
        {"2.0.0", "1.7.0"},
    ),
    (
        'pl.Trainer(gpus="0,2", accelerator="ddp", precision=32, max_epochs=5)',
        {"accelerator": "gpu", "devices": [0, 2], "strategy": "ddp", "precision": "32-true", "max_epochs": 5},
        {"2.0.0", "1.7.0"},
    ),
    (
        'pl.Trainer(gpus=[1], accelerator="ddp", precision=32, max_epochs=5)',
        {"accelerator": "gpu", "devices": [1], "strategy": "ddp", "precision": "32-true", "max_epochs": 5},
        {"2.0.0", "1.7.0"},
    ),
    (
        "pl.Trainer(gpus=[0,2], precision=32, max_epochs=2)",
        {"accelerator": "gpu", "devices": [0, 2], "strategy": "ddp", "precision": "32-true", "max_epochs": 2},
        {"2.0.0"},
    ),
]

IDS = [" ".join(call.split()) for call, _, _ in ROWS]


def comparable(kwargs: dict[str, object]) -> dict[str, object]:
    """Code values as their text (``find_usable_cuda_devices(2)``), everything else as is."""

    def one(v: object) -> object:
        if isinstance(v, list):
            return [one(x) for x in v]
        return v.text if hasattr(v, "target") else v

    return {k: one(v) for k, v in kwargs.items()}
