"""The flag translator, pure: every row of the seed article, the notebook and CPU variants, and the calls that never
worked. (tests/lightning/test_with_lightning.py hands the same translations to the real Lightning.)"""

from __future__ import annotations

import ast

import pytest

from gpulab.lightning.call import Code, TranslationError, parse_trainer_call, render_call
from gpulab.lightning.flag_history import FLAG_HISTORY, flag_history_table
from gpulab.lightning.flags import error_today, translate_trainer
from tests.lightning.rows import IDS, ROWS, comparable


@pytest.mark.parametrize("call, today, removed", ROWS, ids=IDS)
def test_every_row_of_the_article(call, today, removed):
    t = translate_trainer(call)
    assert comparable(t.kwargs) == today
    assert {c.removed_in for c in t.changes if c.removed_in} == removed
    assert all(c.reason and "\n" not in c.reason for c in t.changes)
    ast.parse(t.code)  # the translated call is Python that parses
    if removed:  # a removed flag: the old call cannot run today
        assert t.error_today is not None
    assert t.old_call in str(t) or "Translating" in str(t)


@pytest.mark.parametrize("call, today, removed", ROWS, ids=IDS)
def test_keyword_arguments_translate_like_the_call_as_text(call, today, removed):
    kwargs = parse_trainer_call(call).kwargs
    assert comparable(translate_trainer(**kwargs).kwargs) == today


def test_the_articles_precision_comment_is_corrected():
    change = translate_trainer("pl.Trainer(precision=32)").changes[0]
    assert change.new == "precision='32-true'" and "not mixed precision" in change.reason
    sixteen = translate_trainer(precision=16).changes[0]
    assert sixteen.new == "precision='16-mixed'" and sixteen.status == "respelled"


def test_old_calls_fail_with_the_first_unknown_keyword_in_call_order():
    t = translate_trainer('pl.Trainer(max_epochs=5, accelerator="ddp", gpus=[0, 2])')
    assert t.error_today == "TypeError: Trainer.__init__() got an unexpected keyword argument 'gpus'"
    assert error_today({"strategy": "DP"}).startswith(
        "ValueError: You selected an invalid strategy name: `strategy='dp'`"
    )
    assert error_today({"accelerator": "ddp"}).startswith("ValueError: You selected an invalid accelerator name")
    assert error_today({"precision": 16, "benchmark": True}) is None
    assert error_today({"strategy": "ddp_spawn"}, notebook=True).startswith("MisconfigurationException")


@pytest.mark.parametrize(
    "call, strategy, status",
    [
        ("Trainer(gpus=2)", "ddp_notebook", "default changed"),
        ("Trainer(gpus=2, strategy='ddp')", "ddp_notebook", "in a notebook"),
        ("Trainer(gpus=2, strategy='ddp_spawn')", "ddp_notebook", "in a notebook"),
        (
            "Trainer(gpus=2, strategy='ddp_find_unused_parameters_true')",
            "ddp_notebook_find_unused_parameters_true",
            "in a notebook",
        ),
        ("Trainer(gpus=2, strategy='dp')", "ddp_notebook", "removed"),
        ("Trainer(gpus=[0, 2], accelerator='ddp')", "ddp_notebook", "removed"),
        ("Trainer(gpus=2, strategy='ddp_notebook')", "ddp_notebook", None),
    ],
)
def test_in_a_notebook_the_fork_strategy_replaces_the_ones_lightning_refuses(call, strategy, status):
    t = translate_trainer(call, notebook=True)
    assert t.kwargs["strategy"] == strategy
    assert [c.status for c in t.changes if "strateg" in c.new or "strategy" in c.old][:1] == (
        [status] if status else []
    )


def test_single_device_ddp_is_kept_with_a_note_and_dp_on_one_device_is_dropped():
    t = translate_trainer('pl.Trainer(gpus=[1], accelerator="ddp")')
    assert t.kwargs["strategy"] == "ddp" and any("single device" in n for n in t.notes)
    dp = translate_trainer(gpus=1, strategy="dp")
    assert "strategy" not in dp.kwargs and dp.changes[-1].new == "(dropped)"


def test_a_call_in_todays_style_gets_no_old_default_added():
    t = translate_trainer(accelerator="gpu", devices=2, max_epochs=1)
    assert t.kwargs == {"accelerator": "gpu", "devices": 2, "max_epochs": 1} and t.changes == ()
    assert t.error_today is None


def test_no_device_flag_gets_a_note_about_todays_default():
    t = translate_trainer(max_epochs=3)
    assert t.kwargs == {"max_epochs": 3} and t.changes == () and "accelerator='auto'" in t.notes[0]


def test_strings_of_gpus_are_read_as_lightning_1_5_read_them():
    assert translate_trainer(gpus="2").kwargs["devices"] == 2
    assert "GPU with that index" in translate_trainer(gpus="2").changes[0].reason
    assert translate_trainer(gpus="0,").kwargs["devices"] == [0]
    assert translate_trainer(gpus="-1").kwargs["devices"] == -1
    assert translate_trainer(gpus="0").kwargs == {"accelerator": "cpu"}
    assert translate_trainer(gpus=[]).kwargs == {"accelerator": "cpu"}


def test_auto_select_only_applied_to_an_int_count():
    for gpus in ([0, 1], "2", None):
        t = translate_trainer(gpus=gpus, auto_select_gpus=True)
        assert not isinstance(t.kwargs.get("devices"), Code)
        assert t.changes[-1].new == "(dropped)" and "ignored" in t.changes[-1].reason


def test_log_gpu_memory_joins_existing_callbacks_and_keeps_article_code():
    t = translate_trainer("pl.Trainer(logger=wandb_logger, callbacks=[ModelCheckpoint(), es], log_gpu_memory='all')")
    assert render_call(t.kwargs) == (
        "Trainer(logger=wandb_logger, callbacks=[ModelCheckpoint(), es, DeviceStatsMonitor()])"
    )
    single = translate_trainer("Trainer(callbacks=early_stop, log_gpu_memory='min_max')")
    assert repr(single.kwargs["callbacks"]) == "[early_stop, DeviceStatsMonitor()]"
    assert "from lightning.pytorch.callbacks import DeviceStatsMonitor" in single.code
    muted = translate_trainer(logger=False, log_gpu_memory="all")
    assert "callbacks" not in muted.kwargs and "logger=False" in muted.changes[0].reason


def test_devices_given_beside_gpus_is_dropped_as_1_9_did():
    t = translate_trainer(gpus=2, devices=4)
    assert t.kwargs["devices"] == 2 and any(c.old == "devices=4" and c.new == "(dropped)" for c in t.changes)


def test_num_processes_and_distributed_backend():
    t = translate_trainer(num_processes=2, distributed_backend="ddp")
    assert t.kwargs == {"accelerator": "cpu", "devices": 2, "strategy": "ddp"}
    assert {c.removed_in for c in t.changes} == {"2.0.0", "1.5.0"}


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"gpus": -2}, "never valid"),
        ({"gpus": True}, "a bool never meant anything"),
        ({"gpus": 1.5}, "float never worked"),
        ({"gpus": 0.0}, "float never worked"),
        ({"gpus": "first"}, "a string must be a count"),
        ({"gpus": [0, 0]}, "names a GPU twice"),
        ({"gpus": [0, -1]}, "negative index"),
        ({"gpus": ["0"]}, "must hold GPU indices"),
        ({"gpus": 2, "accelerator": "cpu"}, "Say which device you mean"),
        ({"gpus": 0, "devices": 2}, "means the CPU but devices=2"),
        ({"gpus": 2, "num_processes": 2}, "both set the device count"),
        ({"devices": 0}, "refused by Lightning 2"),
        ({"num_processes": 0}, "an int ≥ 1"),
        ({"gpus": 2, "accelerator": "ddp", "strategy": "ddp"}, "name the strategy twice"),
        ({"distributed_backend": "ddp", "strategy": "ddp_spawn"}, "name the strategy twice"),
        ({"accelerator": "banana"}, "not a device type"),
        ({"gpus": 2, "strategy": "horovod"}, "no 'horovod' strategy"),
        ({"gpus": 2, "auto_select_gpus": True, "strategy": "ddp2"}, "no 'ddp2' strategy"),
        ({"gpus": 0, "auto_select_gpus": True}, "gpus=0 never worked"),
        ({"gpus": 2, "auto_select_gpus": "yes"}, "took True or False"),
        ({"precision": 8}, "precision=8 never worked"),
        ({"precision": "fp16"}, "never worked"),
        ({"precision": True}, "never worked"),
        ({"log_gpu_memory": True}, "took None, 'all' or 'min_max'"),
        ({"resume_from_checkpoint": "last.ckpt", "gpus": 1}, "resume_from_checkpoint: not a Trainer argument"),
    ],
)
def test_calls_that_never_worked_are_refused_with_the_reason(kwargs, match):
    with pytest.raises(TranslationError, match=match):
        translate_trainer(**kwargs)


@pytest.mark.parametrize(
    "text, match",
    [
        ("pl.Trainer(2, gpus=1)", "keyword arguments only"),
        ("pl.Trainer(**cfg)", r"\*\*cfg hides which flags"),
        ("a = Trainer(gpus=1)\nb = Trainer(gpus=2)", "found 2 Trainer"),
        ("CUDA_VISIBLE_DEVICES=1 python t.py", "could not read"),
        ("pl.Trainer(gpus=[0,", "could not read"),
    ],
)
def test_calls_that_cannot_be_read_say_why(text, match):
    with pytest.raises(TranslationError, match=match):
        translate_trainer(text)


def test_a_bare_argument_list_and_wrong_arguments():
    assert translate_trainer("gpus=2, strategy='dp'").kwargs["strategy"] == "ddp"
    with pytest.raises(TypeError, match="not both"):
        translate_trainer("Trainer(gpus=1)", gpus=1)
    with pytest.raises(TypeError, match="as a string of code"):
        parse_trainer_call({"gpus": 1})


@pytest.mark.parametrize("call, today, removed", ROWS, ids=IDS)
def test_for_cpu_runs_the_same_number_of_processes_on_cores(call, today, removed):
    t = translate_trainer(call)
    asked = t.kwargs.get("devices")
    if isinstance(asked, Code):
        asked = asked.target[2][0]
    if asked == -1:
        with pytest.raises(ValueError, match="asks for every GPU"):
            t.for_cpu()
        cpu, expected = t.for_cpu(devices=2), 2
    else:
        cpu, expected = t.for_cpu(), len(asked) if isinstance(asked, list) else asked
    assert cpu.kwargs["accelerator"] == "cpu" and cpu.on_cpu
    assert cpu.kwargs.get("devices") == expected
    assert cpu.kwargs.get("precision") != "16-mixed"
    others = ("accelerator", "devices", "precision")
    assert {k: v for k, v in cpu.kwargs.items() if k not in others} == {
        k: v for k, v in t.kwargs.items() if k not in others
    }


def test_for_cpu_refuses_a_bad_count():
    with pytest.raises(
        ValueError,
        match=r"devices=0: devices \(on a CPU, the number of processes\) must be a whole "
        r"number ≥ 1 \(e.g. .for_cpu\(devices=2\)\)",
    ):
        translate_trainer(gpus=2).for_cpu(devices=0)
    with pytest.raises(TypeError, match="devices='2' is a str"):
        translate_trainer(gpus=2).for_cpu(devices="2")


def test_rendering_text_html_and_code():
    t = translate_trainer('pl.Trainer(gpus=[0, 2], accelerator="ddp", precision=32, max_epochs=5)')
    text = str(t)
    assert "Lightning 2.6 refuses the old call: TypeError" in text
    assert "gpus=[0, 2]  →  accelerator='gpu', devices=[0, 2]  [removed in 2.0.0]" in text
    assert t.code.endswith(
        "Trainer(accelerator='gpu', devices=[0, 2], strategy='ddp', precision='32-true', max_epochs=5)"
    )
    page = t._repr_html_()
    assert "<table" in page and "accelerator=&#x27;ddp&#x27;" in page and "<pre>" in page
    long = translate_trainer(
        gpus=[0, 1, 2, 3],
        strategy="ddp",
        precision=16,
        max_epochs=100,
        benchmark=True,
        log_every_n_steps=10,
        gradient_clip_val=0.5,
    )
    assert long.call.startswith("Trainer(\n    accelerator='gpu',\n")
    ast.parse(long.code)
    assert "Lightning 2.6 accepts the old call as written." in str(translate_trainer(benchmark=False))


def test_history_table_matches_the_releases_read_in_lightnings_sources():
    versions = {k: (h.deprecated_in, h.removed_in) for k, h in FLAG_HISTORY.items()}
    assert versions == {
        "gpus": ("1.7.0", "2.0.0"),
        "auto_select_gpus": ("1.9.0", "2.0.0"),
        "log_gpu_memory": ("1.5.0", "1.7.0"),
        "strategy='dp'": (None, "2.0.0"),
        "accelerator='ddp'": ("1.5.0", "1.7.0"),
        "num_processes": ("1.7.0", "2.0.0"),
        "distributed_backend": ("1.4.0", "1.5.0"),
    }
    assert "auto_select_gpus=" in flag_history_table()


def test_a_translation_says_it_is_gpulabs_reading_not_a_run_of_lightning():
    from gpulab.lightning.translation import PREDICTED

    t = translate_trainer(gpus=[0, 2], accelerator="ddp")
    assert str(t).startswith(PREDICTED + "\nTranslating Trainer(gpus=[0, 2], accelerator='ddp')")
    assert "not a call Lightning ran" in t._repr_html_() and t.label == PREDICTED
