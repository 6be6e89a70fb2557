"""What happened to each Trainer flag the articles use, and what Lightning 2.6 accepts (pure data).

Every version below was read in Lightning's own sources at the release tags (the deprecation warnings the code
printed) and in ``src/lightning/pytorch/CHANGELOG.md``; the pull request that made the change is named. The lists of
what 2.6 accepts are compared with the installed Lightning by ``tests/lightning/test_with_lightning.py``, so a
Lightning upgrade that changes them fails a test instead of silently outdating the chapter.
Taught in ``notebooks/06_lightning.ipynb``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.tables import text_table

__all__ = [
    "FlagHistory",
    "FLAG_HISTORY",
    "TRAINER_PARAMETERS",
    "STRATEGIES",
    "ACCELERATORS",
    "PRECISIONS",
    "PRECISION_ALIASES",
    "MULTI_DEVICE_DEFAULT",
    "flag_history_table",
]


@dataclass(frozen=True)
class FlagHistory:
    """One old way of writing a Trainer flag: when it was deprecated and removed, and what replaced it."""

    old: str
    deprecated_in: str | None  # None: removed without a deprecation period
    removed_in: str
    today: str
    evidence: str  # where the versions were read

    def row(self) -> tuple[str, str, str, str]:
        """The old flag, the release that deprecated it, the one that removed it, and what replaces it."""
        return self.old, self.deprecated_in or "(none)", self.removed_in, self.today


FLAG_HISTORY: dict[str, FlagHistory] = {
    h.old.rstrip("="): h
    for h in (  # keyed "gpus", "strategy='dp'", ...
        FlagHistory(
            "gpus=",
            "1.7.0",
            "2.0.0",
            "accelerator='gpu', devices=...",
            "1.7.0 warns 'Setting `Trainer(gpus=...)` is deprecated in v1.7 and will be removed in v2.0' (#11040);"
            " 2.0.0 changelog: 'Removed the `Trainer(gpus=...)` argument'",
        ),
        FlagHistory(
            "auto_select_gpus=",
            "1.9.0",
            "2.0.0",
            "devices=find_usable_cuda_devices(n) (lightning.pytorch.accelerators)",
            "1.9.0 changelog: deprecated in favour of find_usable_cuda_devices (#16147); 2.0.0: removed",
        ),
        FlagHistory(
            "log_gpu_memory=",
            "1.5.0",
            "1.7.0",
            "callbacks=[DeviceStatsMonitor()]",
            "1.6.0 warns 'deprecated in v1.5 and will be removed in v1.7' (#9921); 1.7.0 changelog: removed (#12657)",
        ),
        FlagHistory(
            "strategy='dp'",
            None,
            "2.0.0",
            "strategy='ddp' (one process per GPU)",
            "2.0.0 changelog: 'Removed support for DataParallel (strategy='dp')' (#16748); 1.9.0 still "
            "registered it without a warning",
        ),
        FlagHistory(
            "accelerator='ddp'",
            "1.5.0",
            "1.7.0",
            "strategy='ddp'",
            "1.5.0 warns 'Passing `Trainer(accelerator='ddp')` has been deprecated in v1.5 and will be removed "
            "in v1.7'; 1.7.0 changelog: 'Removed support for passing strategy names ... to the accelerator "
            "Trainer argument' (#12696)",
        ),
        FlagHistory(
            "num_processes=",
            "1.7.0",
            "2.0.0",
            "accelerator='cpu', devices=n",
            "1.7.0 warns 'Setting `Trainer(num_processes=...)` is deprecated in v1.7'; 2.0.0 changelog: removed",
        ),
        FlagHistory(
            "distributed_backend=",
            "1.4.0",
            "1.5.0",
            "strategy=...",
            "1.4.0 changelog: deprecated (#8575); 1.5.0 changelog: removed (#10017)",
        ),
    )
}

# How many devices and no strategy: what Lightning chose (read in each release's accelerator connector).
MULTI_DEVICE_DEFAULT = {
    "1.x": "ddp_spawn",  # 1.0.0-1.9.x: 'You requested multiple GPUs but did not specify a backend ... ddp_spawn'
    "2.x script": "ddp",  # 2.0.0 changelog: 'the strategy now defaults to "ddp" instead of "ddp_spawn"' (#16780)
    "2.x notebook": "ddp_fork",  # the same as ddp_notebook: processes made by fork
}

# Lightning 2.6: Trainer.__init__'s keyword-only parameters, in order.
TRAINER_PARAMETERS: tuple[str, ...] = (
    "accelerator",
    "strategy",
    "devices",
    "num_nodes",
    "precision",
    "logger",
    "callbacks",
    "fast_dev_run",
    "max_epochs",
    "min_epochs",
    "max_steps",
    "min_steps",
    "max_time",
    "limit_train_batches",
    "limit_val_batches",
    "limit_test_batches",
    "limit_predict_batches",
    "overfit_batches",
    "val_check_interval",
    "check_val_every_n_epoch",
    "num_sanity_val_steps",
    "log_every_n_steps",
    "enable_checkpointing",
    "enable_progress_bar",
    "enable_model_summary",
    "accumulate_grad_batches",
    "gradient_clip_val",
    "gradient_clip_algorithm",
    "deterministic",
    "benchmark",
    "inference_mode",
    "use_distributed_sampler",
    "profiler",
    "detect_anomaly",
    "barebones",
    "plugins",
    "sync_batchnorm",
    "reload_dataloaders_every_n_epochs",
    "default_root_dir",
    "enable_autolog_hparams",
    "model_registry",
)

# Lightning 2.6: names StrategyRegistry knows, accelerator names (plus the alias "gpu" and "auto"), precision values.
STRATEGIES: frozenset[str] = frozenset(
    {
        "ddp",
        "ddp_find_unused_parameters_false",
        "ddp_find_unused_parameters_true",
        "ddp_fork",
        "ddp_fork_find_unused_parameters_false",
        "ddp_fork_find_unused_parameters_true",
        "ddp_notebook",
        "ddp_notebook_find_unused_parameters_false",
        "ddp_notebook_find_unused_parameters_true",
        "ddp_spawn",
        "ddp_spawn_find_unused_parameters_false",
        "ddp_spawn_find_unused_parameters_true",
        "deepspeed",
        "deepspeed_stage_1",
        "deepspeed_stage_2",
        "deepspeed_stage_2_offload",
        "deepspeed_stage_3",
        "deepspeed_stage_3_offload",
        "deepspeed_stage_3_offload_nvme",
        "fsdp",
        "fsdp_cpu_offload",
        "single_device",
        "single_tpu",
        "single_xla",
        "xla",
        "xla_debug",
    }
)
ACCELERATORS: frozenset[str] = frozenset({"cpu", "cuda", "mps", "tpu"})
PRECISIONS: tuple[object, ...] = (
    "transformer-engine",
    "transformer-engine-float16",
    "16-true",
    "16-mixed",
    "bf16-true",
    "bf16-mixed",
    "32-true",
    "64-true",
    64,
    32,
    16,
    "64",
    "32",
    "16",
    "bf16",
)
# The short spellings 2.0 kept for old code, and what each means (16 and "bf16" warn that the name is discouraged).
PRECISION_ALIASES: dict[object, str] = {
    64: "64-true",
    32: "32-true",
    16: "16-mixed",
    "64": "64-true",
    "32": "32-true",
    "16": "16-mixed",
    "bf16": "bf16-mixed",
}


def flag_history_table() -> str:
    """The old flags, when they were deprecated and removed, and what replaced them, as a text table."""
    return text_table(("old flag", "deprecated in", "removed in", "today"), [h.row() for h in FLAG_HISTORY.values()])
