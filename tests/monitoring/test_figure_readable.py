"""The monitor's figure reads at a glance: checked on the rendered figure (real Agg), not on its settings.

Scenarios from a workshop: 40 epochs on the CPU, chapter 01's float32 → float16 step with no step reported, eight
described GPUs. Every written text (titles, legends, tick labels, mark labels, notes) must sit inside the figure and
overlap no other; no panel is empty; the change being taught fills its panel.
"""

from __future__ import annotations

import itertools
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import RendererAgg

from gpulab.monitoring.panels import (
    change_since_start,
    column_maxima,
    mark_labels,
    panels_with_data,
    smoothed_rate,
    smoothing_window,
    text_width_px,
)
from gpulab.monitoring.sampler import GPU_FIELDS, HOST_COLUMNS, SPEED_COLUMNS
from gpulab.monitoring.view import MonitorFigure

GiB, MiB = 2**30, 2**20
COLUMNS = list(HOST_COLUMNS) + list(SPEED_COLUMNS)


def host(t: np.ndarray, extra: np.ndarray | float = 0.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = np.empty((len(t), len(HOST_COLUMNS)))
    v[:, 0] = 2.9 * GiB + rng.normal(0, 4 * MiB, len(t)) + extra
    v[:, 1] = 23.5 * GiB
    v[:, 2] = np.clip(rng.normal(90, 5, len(t)), 0, 100)
    v[:, 3] = 912 * MiB + extra
    v[:, 4] = np.clip(rng.normal(60, 10, len(t)), 0, 100)
    return v


def speed(t: np.ndarray, start_s: float, step_s: float, batch: int) -> np.ndarray:
    done = np.clip(np.floor((t - start_s) / step_s), 0, None)
    samples = done * batch
    rate = np.r_[np.nan, np.diff(samples) / np.diff(t)]
    return np.column_stack([samples, done, rate, np.where(done > 0, step_s, np.nan)])


def forty_epochs() -> tuple[np.ndarray, np.ndarray, list[tuple[float, str]]]:
    t = np.arange(0, 16.0, 0.2)
    marks = [(0.0, "epoch 0"), (6.07, "epoch 1")] + [(6.07 + 0.245 * (k - 1), f"epoch {k}") for k in range(2, 40)]
    return t, np.hstack([host(t), speed(t, 1.7, 0.0155, 32)]), marks


def eight_gpus() -> tuple[list[str], np.ndarray, np.ndarray]:
    t = np.arange(0, 8.0, 0.2)
    columns = COLUMNS + [f"gpu{k}_{f}" for k in range(8) for f in GPU_FIELDS]
    gpus = []
    for k, (used_mib, util) in enumerate(
        [(30110, 97), (4, 0), (12290, 45), (4, 0), (39800, 100), (4, 0), (2050, 3), (20480, 61)]
    ):
        u, m = np.full(len(t), float(util)), np.full(len(t), used_mib * MiB)
        if k == 3:  # the GPU a job starts on
            u, m = np.minimum(95.0, 5.0 * np.arange(len(t))), (4 + 300 * np.minimum(np.arange(len(t)), 20)) * MiB
        gpus.append(np.column_stack([m, np.full(len(t), 40960 * MiB), u, np.ones(len(t))]))
    return columns, t, np.hstack([host(t), speed(t, 0.5, 0.0155, 32)] + gpus)


def drawn_texts(fig: MonitorFigure) -> list[tuple[str, object]]:
    """Every text Agg really draws for the static picture, with its box in pixels (watched, not replaced)."""
    drawn = []
    real = RendererAgg.draw_text

    def watch(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if mtext is not None and s.strip():
            drawn.append(mtext)
        return real(self, gc, x, y, s, prop, angle, ismath, mtext)

    with mock.patch.object(RendererAgg, "draw_text", watch):
        fig.png()
    renderer = fig._canvas.get_renderer()
    return [(t.get_text(), t.get_window_extent(renderer)) for t in drawn]


def assert_readable(fig: MonitorFigure) -> list[str]:
    texts = drawn_texts(fig)
    whole = fig.figure.bbox
    for label, box in texts:
        assert (
            whole.x0 - 0.5 <= box.x0
            and box.x1 <= whole.x1 + 0.5
            and whole.y0 - 0.5 <= box.y0
            and box.y1 <= whole.y1 + 0.5
        ), f"{label!r} is cut off at the figure's edge"
    for (a, box_a), (b, box_b) in itertools.combinations(texts, 2):
        overlap_x = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        overlap_y = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        assert overlap_x <= 1 or overlap_y <= 1, f"{a!r} overlaps {b!r}"
    for name, ax in fig.axes.items():  # no empty panel
        drawn = [line for line in ax.lines if np.isfinite(np.asarray(line.get_ydata(), float)).sum() >= 2]
        assert drawn or ax.images, f"the {name} panel shows nothing"
    return [label for label, _ in texts]


def test_forty_epochs_give_a_readable_row_of_labels_and_the_first_is_not_cut_off():
    t, v, marks = forty_epochs()
    fig = MonitorFigure(COLUMNS, title="digits MLP on the CPU")
    fig.update(t, v, marks)
    labels = assert_readable(fig)
    top = fig.axes["memory"]
    written = [a for a in top.texts if a.get_text()]
    assert written[0].get_text() == "epoch 0"  # the first mark, at t = 0, is labelled in full …
    renderer = fig._canvas.get_renderer()
    assert written[0].get_window_extent(renderer).x0 >= top.bbox.x0  # … inside the panel
    assert 5 <= len(written) <= 21 and all(w.get_text().isdigit() for w in written[1:])  # every 2nd at most
    assert "digits MLP on the CPU" in labels and "speed (samples/s)" in labels


def test_eight_fast_epochs_keep_epoch_2_by_writing_epoch_1_left_of_its_line():
    """Chapter 05 in fast mode: set-up, then eight epochs 0.34 s apart; "epoch 1" written right of its line would
    cover "2", which then disappeared."""
    t = np.arange(0, 4.6, 0.2)
    v = np.hstack([host(t), speed(t, 0.2, 0.02, 8)])
    marks = [(2.0 + 0.34 * k, f"epoch {k + 1}") for k in range(8)]
    fig = MonitorFigure(COLUMNS, title="digits MLP on the CPU")
    fig.update(t, v, marks)
    assert_readable(fig)
    written = [a.get_text() for a in fig.axes["memory"].texts if a.get_text()]
    assert written[:2] == ["epoch 1", "2"], written


def test_the_speed_average_is_sized_to_a_short_run_and_draws_no_ramp_over_the_set_up():
    t = np.arange(0, 1.6, 0.2)  # a 1.5 s run: nothing for 0.6 s (set-up), then a steady 100 samples/s
    total = np.array([0, 0, 0, 0, 20, 40, 60, 80], float)
    assert smoothing_window(1.5) == 0.4 and smoothing_window(4.5) == 0.6 and smoothing_window(60) == 1.0
    rate = smoothed_rate(t, total, smoothing_window(1.5))
    assert np.allclose(rate[t > 0.7], 100.0)  # full speed from the first reading with work, not a ramp up to it
    fig = MonitorFigure(COLUMNS)
    fig.update(t, np.hstack([host(t), speed(t, 0.2, 0.02, 1)]))
    assert fig.lines["smoothed"].get_label() == "0.4 s average"


def test_a_missed_reading_leaves_no_white_slice_in_a_map_but_a_long_silence_does():
    t = np.array([0.0, 0.2, 0.4, 0.8, 1.0, 1.2, 3.0])  # one reading missed at 0.6; nothing between 1.2 and 3.0
    block = np.arange(len(t), dtype=float)[:, None]
    binned = column_maxima(t, block, 3.2, 16)  # 0.2 s slices
    assert binned[3, 0] == 3.0  # the missed slice holds the next reading, which covers it
    assert np.isnan(binned[8:15, 0]).all()


def test_a_256_mib_step_fills_the_memory_panel():
    t = np.arange(0, 3.2, 0.2)
    extra = np.where((t >= 0.3) & (t < 1.3), 256 * MiB, 0.0) + np.where((t >= 1.8) & (t < 2.8), 128 * MiB, 0.0)
    no_steps = np.column_stack([np.zeros(len(t)), np.zeros(len(t)), np.zeros(len(t)), np.full(len(t), np.nan)])
    fig = MonitorFigure(
        COLUMNS,
        title="64 Mi numbers on cpu: float32, then float16",
        notes=["not shown: GPU panels: N/A (no NVIDIA driver library (libnvidia-ml.so) was found)"],
    )
    fig.update(t, np.hstack([host(t, extra), no_steps]), [(0.3, "float32"), (1.8, "float16")])
    labels = assert_readable(fig)
    assert fig.panels == ("memory", "utilisation")  # no step reported: no empty speed panel
    low, high = fig.axes["memory"].get_ylim()
    assert 256 * MiB / (high - low) > 0.5
    assert "float32" in labels and "float16" in labels


def test_eight_gpus_are_two_maps_not_sixteen_lines():
    columns, t, v = eight_gpus()
    fig = MonitorFigure(columns, title="8 described GPUs [SIMULATED GPUs]", gpus=range(8))
    fig.update(t, v, [(0.5 + 0.7 * k, f"epoch {k + 1}") for k in range(10)])
    labels = assert_readable(fig)
    assert fig.panels == ("memory", "utilisation", "GPU busy map", "GPU memory map", "speed")
    assert not [key for key in fig.lines if key.startswith("gpu")]
    busy = fig.axes["GPU busy map"].images[0].get_array()
    assert busy.shape[0] == 8 and busy[3, -1] > busy[3, 0]  # the GPU the job started on darkens along its row
    assert [f"GPU {k}" for k in range(8)] == [x for x in labels if x.startswith("GPU ")][:8]


def test_a_few_gpus_keep_a_line_each():
    columns = COLUMNS + [f"gpu{k}_{f}" for k in range(2) for f in GPU_FIELDS]
    t = np.arange(0, 4.0, 0.2)
    gpu = np.column_stack([np.full(len(t), 3 * GiB), np.full(len(t), 15 * GiB), np.full(len(t), 50.0), np.ones(len(t))])
    fig = MonitorFigure(columns, title="kaggle", gpus=[0, 1])
    fig.update(t, np.hstack([host(t), speed(t, 0.3, 0.02, 64), gpu, gpu]), [(0.3, "epoch 1")])
    assert_readable(fig)
    assert {"gpu0_utilization_percent", "gpu1_memory_used_bytes"} <= set(fig.lines)
    assert "GPU memory" in fig.panels and not [p for p in fig.panels if p.endswith("map")]


def test_speed_is_smoothed_with_the_raw_readings_faint():
    t, v, marks = forty_epochs()
    rng = np.random.default_rng(3)
    v[:, COLUMNS.index("samples_per_s")] *= rng.choice([0.0, 2.0], len(t))  # readings jumping between 0 and 2×
    fig = MonitorFigure(COLUMNS)
    fig.update(t, v, marks)
    raw, smooth = fig.lines["samples_per_s"], fig.lines["smoothed"]
    assert raw.get_alpha() < 0.5 and smooth.get_linewidth() > 2 * raw.get_linewidth()
    late = t > 8
    assert np.nanstd(np.asarray(smooth.get_ydata())[late]) < 0.1 * np.nanstd(np.asarray(raw.get_ydata())[late])


def test_live_frames_of_eight_gpus_blit_like_a_full_draw():
    columns, t, v = eight_gpus()
    fig = MonitorFigure(columns, title="live", gpus=range(8))
    fig.update(t[:20], v[:20], stepped=True)
    fig.live_png()
    fig.update(t[:30], v[:30], stepped=True)
    fig.draw_live()
    blitted = np.asarray(fig._canvas.buffer_rgba()).astype(int)
    full = np.asarray(fig._canvas.buffer_rgba()).astype(int) if fig.draw_live() else None
    assert fig.full_draws == 1 and full is None  # the second and third frames were blitted
    fig.png(relayout=False)
    again = np.asarray(fig._canvas.buffer_rgba()).astype(int)
    assert (np.abs(blitted - again).max(axis=2) > 0).mean() < 0.002


# -- the pure helpers ----------------------------------------------------------------------------------------------
@given(st.lists(st.floats(min_value=0, max_value=600), min_size=1, max_size=80), st.integers(300, 900))
def test_chosen_mark_labels_never_overlap_and_stay_inside(xs, width):
    """Any marks on a panel of a real figure's width (at least 300 px: the figure is 800 px wide; on a 100 px axis a
    mark in the middle has room for a label on neither side)."""
    xs = sorted(xs)
    labels = [f"epoch {k}" for k in range(len(xs))]
    chosen = mark_labels([x * width / 600 for x in xs], labels, width, 9.5, 80)
    assert chosen[0][:2] == (0, "epoch 0")  # the first mark keeps its label, in full
    spans = []
    for i, text, ha in chosen:
        w = text_width_px(text, 9.5, 80)
        x = xs[i] * width / 600
        spans.append((x + 3, x + 3 + w) if ha == "left" else (x - 3 - w, x - 3))
    for (_, a1), (b0, _) in zip(spans, spans[1:]):
        assert b0 >= a1 + 8
    assert all(lo >= 0 and hi <= width for lo, hi in spans)


def test_labels_that_are_not_a_numbered_series_are_written_in_full():
    chosen = mark_labels([10, 300], ["float32", "float16"], 500, 9.5, 80)
    assert [text for _, text, _ in chosen] == ["float32", "float16"]
    assert mark_labels([495], ["late"], 500, 9.5, 80) == [(0, "late", "right")]  # near the right edge: turned left


def test_smoothed_rate_of_a_steady_count_is_that_rate():
    t = np.arange(0, 10, 0.2)
    rate = smoothed_rate(t, 100.0 * t, 1.0)
    assert np.isnan(rate[0]) and np.allclose(rate[1:], 100.0)


def test_change_since_start_and_column_maxima():
    delta, first = change_since_start(np.array([np.nan, 5.0, 7.0, 4.0]))
    assert first == 5.0 and np.allclose(delta[1:], [0, 2, -1]) and np.isnan(delta[0])
    assert np.isnan(change_since_start(np.array([np.nan]))[1])
    t = np.array([0.0, 0.5, 1.0, 3.5])
    block = np.array([[1, 10], [3, np.nan], [2, 20], [5, 5]], float)
    binned = column_maxima(t, block, 4.0, 4)  # slices [0,1) [1,2) [2,3) [3,4]
    assert np.allclose(binned[0], [3, 10]) and np.allclose(binned[1], [2, 20]) and np.isnan(binned[2]).all()


@pytest.mark.parametrize(
    "gpus, expected",
    [
        ((), ("memory", "utilisation", "speed")),
        ((0, 1), ("memory", "utilisation", "GPU memory", "speed")),
        (tuple(range(8)), ("memory", "utilisation", "GPU busy map", "GPU memory map", "speed")),
    ],
)
def test_panels_with_data(gpus, expected):
    columns = COLUMNS + [f"gpu{k}_{f}" for k in gpus for f in GPU_FIELDS]
    t = np.arange(0, 2, 0.2)
    v = np.hstack([host(t), speed(t, 0.2, 0.02, 8), np.ones((len(t), 4 * len(gpus)))])
    assert panels_with_data(columns, v, gpus) == expected
    v[:, COLUMNS.index("samples_total")] = 0
    assert "speed" not in panels_with_data(columns, v, gpus)


def test_a_long_note_is_wrapped_in_full_below_the_axis_label_without_backticks():
    t = np.arange(0, 2.4, 0.2)
    note = (
        "not shown: GPU panels: N/A (no NVIDIA driver library (libnvidia-ml.so) was found: this machine has no "
        "NVIDIA GPU driver, or this container was started without GPU access. On a laptop without an NVIDIA GPU "
        "that is expected: the lessons run on the CPU. In a container, start it with GPU access (e.g. "
        "`docker run --gpus all`).)"
    )
    fig = MonitorFigure(COLUMNS, title="live", notes=[note])
    fig.update(t, np.hstack([host(t), speed(t, 10, 0.0125, 32)]), stepped=True)
    fig.live_png()
    text = fig._notes.get_text()
    assert "[...]" not in text and "…" not in text and "`" not in text and "docker run --gpus all" in text
    assert text.count("\n") >= 1  # wrapped, at spaces
    renderer = fig._canvas.get_renderer()
    label = fig.axes[fig.panels[-1]].xaxis.label.get_window_extent(renderer)
    notes = fig._notes.get_window_extent(renderer)
    assert notes.y1 <= label.y0 and notes.x1 <= fig.figure.bbox.width
