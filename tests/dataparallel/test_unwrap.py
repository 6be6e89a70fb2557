"""The `module.` prefix: the real error a plain model raises, and the helpers that peel wrappers and prefixes off
(DataParallel, a real single-process DDP over gloo, torch.compile, and wrappers inside wrappers)."""

from __future__ import annotations

from collections import OrderedDict

import pytest
import torch
import torch.distributed as dist

from gpulab.dataparallel.wrappers import load_unwrapped, strip_wrapper_prefixes, unwrap
from gpulab.workload import mlp
from gpulab.workload.models import cnn


def test_a_plain_model_refuses_a_dataparallel_state_dict_with_pytorchs_message():
    plain = mlp(4, 3)
    with pytest.raises(
        RuntimeError,
        match=r'Missing key\(s\) in state_dict: "0.weight", "0.bias", .*\n.*'
        r'Unexpected key\(s\) in state_dict: "module.0.weight", "module.0.bias"',
    ):
        plain.load_state_dict(torch.nn.DataParallel(mlp(4, 3, seed=1)).state_dict())


def test_the_prefix_is_stripped_on_a_copy_and_the_weights_load():
    wrapped = torch.nn.DataParallel(cnn((2, 4), 8, seed=1))
    saved = wrapped.state_dict()
    stripped = strip_wrapper_prefixes(saved)
    assert list(stripped)[0] == "conv1.0.weight" and list(saved)[0] == "module.conv1.0.weight"  # original kept
    assert "module" in saved._metadata and "module" not in stripped._metadata
    plain = cnn((2, 4), 8)
    assert not plain.conv1[0].weight.equal(wrapped.module.conv1[0].weight)
    plain.load_state_dict(stripped)
    assert plain.conv1[0].weight.equal(wrapped.module.conv1[0].weight)


def test_compiled_and_nested_wrappers_are_peeled_and_load_every_way_round():
    inner = mlp(4, 3, seed=1)
    compiled_dp = torch.compile(torch.nn.DataParallel(inner))  # not run: wrapping alone does not compile
    assert unwrap(compiled_dp) is inner and unwrap(inner) is inner
    keys = list(compiled_dp.state_dict())
    assert keys[0] == "_orig_mod.module.0.weight"
    assert list(strip_wrapper_prefixes(compiled_dp.state_dict()))[0] == "0.weight"
    for target in (mlp(4, 3), torch.nn.DataParallel(mlp(4, 3)), torch.compile(mlp(4, 3))):
        result = load_unwrapped(target, compiled_dp.state_dict())
        assert not result.missing_keys and not result.unexpected_keys
        assert unwrap(target)[0].weight.equal(inner[0].weight)


def test_ddp_is_unwrapped_too(tmp_path):
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        inner = mlp(4, 3)
        ddp = torch.nn.parallel.DistributedDataParallel(inner)
        assert unwrap(ddp) is inner
        assert list(strip_wrapper_prefixes(ddp.state_dict())) == list(inner.state_dict())
    finally:
        dist.destroy_process_group()


def test_a_mix_of_prefixed_and_plain_keys_is_refused_not_half_stripped():
    mixed = OrderedDict([("module.0.weight", torch.zeros(1)), ("0.bias", torch.zeros(1))])
    with pytest.raises(
        ValueError,
        match=r"1 of the 2 keys start with 'module.' \(e.g. 'module.0.weight'\) and the "
        r"others do not \(e.g. '0.bias'\): this is not the state_dict of one wrapped model",
    ):
        strip_wrapper_prefixes(mixed)


def test_wrong_things_handed_to_the_helpers_are_named():
    with pytest.raises(
        TypeError,
        match=r"unwrap\(\) takes a model .* got OrderedDict. To remove the 'module.' "
        r"prefix from a state_dict, use strip_wrapper_prefixes",
    ):
        unwrap(mlp(4, 3).state_dict())
    with pytest.raises(TypeError, match=r"takes a state_dict .* got Sequential"):
        strip_wrapper_prefixes(mlp(4, 3))
    checkpoint = {"epoch": 3, "model_state_dict": torch.nn.DataParallel(mlp(4, 3)).state_dict()}
    with pytest.raises(
        TypeError,
        match=r"a checkpoint that holds state_dicts .* "
        r"strip_wrapper_prefixes\(checkpoint\['model_state_dict'\]\)",
    ):
        strip_wrapper_prefixes(checkpoint)
    assert strip_wrapper_prefixes({}) == OrderedDict()
