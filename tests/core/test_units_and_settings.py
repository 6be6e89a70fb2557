"""Units and course settings (pure)."""

from __future__ import annotations

import math

import pytest

from gpulab.core import settings, units


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "1.5 KiB"),
        (3 * 2**30, "3.0 GiB"),
        (-2048, "-2.0 KiB"),
        (math.nan, "N/A"),
        (None, "N/A"),
    ],
)
def test_format_bytes(n, text):
    assert units.format_bytes(n) == text


@pytest.mark.parametrize(
    "s, text",
    [
        (0, "0 s"),
        (0.00042, "420 µs"),
        (1.5e-9, "1.50 ns"),
        (0.0123, "12.3 ms"),
        (2.0, "2.00 s"),
        (90, "1.5 min"),
        (7200, "2.0 h"),
        (-0.5, "-500 ms"),
    ],
)
def test_format_seconds(s, text):
    assert units.format_seconds(s) == text


def test_format_rate_and_percent():
    assert units.format_rate(12345.6) == "12.3 k samples/s"
    assert units.format_rate(12.0, "steps") == "12.0 steps/s"
    assert units.format_percent(0.371, is_fraction=True) == "37 %"


@pytest.mark.parametrize("raw, fast", [("1", True), ("yes", True), ("0", False), ("", False)])
def test_fast_mode(monkeypatch, raw, fast):
    monkeypatch.setenv("GPULAB_FAST", raw)
    assert settings.fast_mode() is fast
    assert settings.full_or_fast(full=100, fast=3) == (3 if fast else 100)


def test_fast_mode_rejects_nonsense(monkeypatch):
    monkeypatch.setenv("GPULAB_FAST", "quick")
    with pytest.raises(ValueError, match="GPULAB_FAST='quick' is not understood: use 1"):
        settings.fast_mode()


@pytest.mark.parametrize(
    "raw, value", [("1", True), ("TRUE", True), (" on ", True), ("0", False), ("No", False), ("", None)]
)
def test_env_flag_reads_yes_and_no_in_one_way(monkeypatch, raw, value):
    monkeypatch.setenv("GPULAB_SOME_FLAG", raw)
    assert settings.env_flag("GPULAB_SOME_FLAG", None) is value
    monkeypatch.delenv("GPULAB_SOME_FLAG")
    assert settings.env_flag("GPULAB_SOME_FLAG", True) is True


def test_env_flag_refuses_a_typo_naming_the_variable(monkeypatch):
    monkeypatch.setenv("GPULAB_MONITOR_LIVE", "ture")
    with pytest.raises(ValueError, match=r"GPULAB_MONITOR_LIVE='ture' is not understood: use 1 or 0 \(to draw"):
        settings.env_flag("GPULAB_MONITOR_LIVE", None, meaning="to draw the live figure")
