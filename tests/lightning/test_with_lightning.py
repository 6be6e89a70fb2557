"""The translations handed to the real Lightning: old calls fail as predicted, translated ones are accepted.

Every row of the article is built with ``lightning.Trainer`` in its CPU form (same number of processes); the GPU
forms are built where GPUs exist. The lists in ``flag_history.py`` are compared with the installed Lightning.
"""

from __future__ import annotations

import inspect
import re
import sys
import typing

import pytest

lightning = pytest.importorskip("lightning")

from lightning.fabric.plugins.precision.precision import _PRECISION_INPUT  # noqa: E402
from lightning.pytorch.accelerators import AcceleratorRegistry  # noqa: E402
from lightning.pytorch.callbacks import DeviceStatsMonitor  # noqa: E402
from lightning.pytorch.strategies import DDPStrategy, SingleDeviceStrategy, StrategyRegistry  # noqa: E402

from gpulab.lightning.call import Code, TranslationError  # noqa: E402
from gpulab.lightning.flag_history import ACCELERATORS, PRECISIONS, STRATEGIES, TRAINER_PARAMETERS  # noqa: E402
from gpulab.lightning.flags import translate_trainer  # noqa: E402
from gpulab.lightning.trainer_args import trainer_kwargs  # noqa: E402
from tests import process_group  # noqa: E402
from tests.lightning.rows import IDS, ROWS  # noqa: E402
from tests.seams import requires_gpus  # noqa: E402


@pytest.fixture(autouse=True)
def _keep_cudnn_benchmark():
    """Trainer(benchmark=...) sets torch.backends.cudnn.benchmark for the whole process: put it back."""
    import torch

    before = torch.backends.cudnn.benchmark
    yield
    torch.backends.cudnn.benchmark = before


QUIET = {"logger": False, "enable_progress_bar": False, "enable_model_summary": False, "enable_checkpointing": False}


def _flatten(args: tuple) -> list:
    out = []
    for a in args:
        out += _flatten(typing.get_args(a)) if typing.get_args(a) else [a]
    return out


def test_history_lists_match_the_installed_lightning():
    assert tuple(inspect.signature(lightning.Trainer.__init__).parameters)[1:] == TRAINER_PARAMETERS
    assert set(StrategyRegistry.available_strategies()) == STRATEGIES
    assert set(AcceleratorRegistry.available_accelerators()) == ACCELERATORS
    assert set(_flatten(typing.get_args(_PRECISION_INPUT))) == set(PRECISIONS)


@pytest.mark.parametrize("call, today, removed", ROWS, ids=IDS)
def test_the_old_call_fails_today_as_predicted(call, today, removed, tmp_path):
    t = translate_trainer(call)
    if t.error_today is None:
        lightning.Trainer(**t.old_kwargs, **QUIET, default_root_dir=tmp_path)
        return
    kind, message = t.error_today.split(": ", 1)
    with pytest.raises(Exception, match=re.escape(message)) as info:
        lightning.Trainer(**t.old_kwargs, **QUIET, default_root_dir=tmp_path)
    assert type(info.value).__name__ == kind


@pytest.mark.parametrize("call, today, removed", ROWS, ids=IDS)
def test_the_translation_is_accepted_by_lightning_on_cpu(call, today, removed, tmp_path):
    t = translate_trainer(call)
    asked = t.kwargs.get("devices")
    every = asked == -1 or (isinstance(asked, Code) and asked.target[2] == (-1,))
    cpu = t.for_cpu(devices=2 if every else None)
    trainer = lightning.Trainer(**trainer_kwargs(cpu, **QUIET, default_root_dir=tmp_path))
    assert trainer.num_devices == cpu.kwargs.get("devices", 1)
    strategy = cpu.kwargs.get("strategy")
    assert isinstance(trainer.strategy, DDPStrategy if strategy else SingleDeviceStrategy)
    assert trainer.precision == cpu.kwargs.get("precision", "32-true")
    if "callbacks" in cpu.kwargs:
        assert any(isinstance(c, DeviceStatsMonitor) for c in trainer.callbacks)
    if "benchmark" in cpu.kwargs:
        import torch

        assert torch.backends.cudnn.benchmark is cpu.kwargs["benchmark"]


def test_lightning_itself_turns_16_mixed_into_bf16_mixed_on_a_cpu(tmp_path):
    with pytest.warns(UserWarning, match="AMP with fp16 is not supported on CPU"):
        trainer = lightning.Trainer(accelerator="cpu", precision="16-mixed", **QUIET, default_root_dir=tmp_path)
    assert trainer.precision == "bf16-mixed"
    assert translate_trainer(precision=16).for_cpu().kwargs["precision"] == "bf16-mixed"


def test_the_gpu_form_fails_on_a_cpu_machine_the_way_lightning_says(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the gpu-marked test below builds the GPU form instead")
    with pytest.raises(Exception, match="No supported gpu backend found"):
        lightning.Trainer(**trainer_kwargs(translate_trainer(gpus=1)), **QUIET, default_root_dir=tmp_path)
    with pytest.raises(ValueError, match="no visible CUDA devices"):
        trainer_kwargs(translate_trainer(gpus=2, auto_select_gpus=True))


def _gpus_needed(t) -> int:
    asked = t.kwargs.get("devices", 1)
    if isinstance(asked, Code):
        asked = asked.target[2][0]
    return max(asked) + 1 if isinstance(asked, list) else max(asked, 1)


@pytest.mark.gpu
@requires_gpus(1)
@pytest.mark.parametrize("call, today, removed", ROWS, ids=IDS)
def test_the_gpu_form_is_accepted_where_gpus_exist(call, today, removed, tmp_path):
    import torch

    t = translate_trainer(call)
    if _gpus_needed(t) > torch.cuda.device_count():
        pytest.skip(f"this row needs {_gpus_needed(t)} GPUs; the machine has {torch.cuda.device_count()}")
    trainer = lightning.Trainer(**trainer_kwargs(t, **QUIET, default_root_dir=tmp_path))
    assert trainer.num_devices >= 1


def test_trainer_kwargs_builds_lightnings_objects_and_refuses_article_code():
    built = trainer_kwargs(translate_trainer(log_gpu_memory="all"), max_epochs=1)
    assert isinstance(built["callbacks"][0], DeviceStatsMonitor) and built["max_epochs"] == 1
    with pytest.raises(TranslationError, match="ModelCheckpoint\\(\\) is code from the article"):
        trainer_kwargs(translate_trainer("Trainer(callbacks=[ModelCheckpoint()], log_gpu_memory='all')"))
    with pytest.raises(TypeError, match="takes what translate_trainer"):
        trainer_kwargs({"gpus": 1})


NOTEBOOK_CHECK = """
import sys
sys.ps1 = ">>> "  # what an interactive interpreter has; Lightning reads it when imported
import lightning
from gpulab.lightning.flags import translate_trainer
from gpulab.lightning.trainer_args import trainer_kwargs
quiet = dict(logger=False, enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False)
for strategy in ("ddp", "ddp_spawn"):
    try:
        lightning.Trainer(accelerator="cpu", devices=2, strategy=strategy, **quiet)
    except Exception as exc:
        print(type(exc).__name__, "|", exc)
    t = translate_trainer(accelerator="cpu", devices=2, strategy=strategy, notebook=True)
    print(t.error_today)
    trainer = lightning.Trainer(**trainer_kwargs(t, **quiet))
    print(t.kwargs["strategy"], type(trainer.strategy.launcher).__name__, trainer.strategy.launcher._start_method)
"""


def test_in_an_interactive_interpreter_lightning_refuses_ddp_and_the_notebook_translation_runs():
    out = process_group.run([sys.executable, "-c", NOTEBOOK_CHECK], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    for strategy, (refused, predicted, accepted) in zip(("ddp", "ddp_spawn"), (lines[0:3], lines[3:6])):
        assert refused.startswith(
            f"MisconfigurationException | `Trainer(strategy={strategy!r})` is not compatible "
            "with an interactive environment"
        )
        assert predicted.startswith("MisconfigurationException: ") and predicted.split(": ", 1)[1] in refused
        assert accepted == "ddp_notebook _MultiProcessingLauncher fork"
