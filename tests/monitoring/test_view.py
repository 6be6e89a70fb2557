"""The live figure's cheap frames: limits that grow in round steps, blitted frames that match a full draw (real Agg),
a PNG writer that PIL reads back, and a static figure that live frames leave unchanged."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from gpulab.monitoring.decimate import envelope
from gpulab.monitoring.limits import grow_limit, nice_ceil
from gpulab.monitoring.png import encode_png
from gpulab.monitoring.sampler import HOST_COLUMNS, SPEED_COLUMNS
from gpulab.monitoring.view import MonitorFigure

COLUMNS = list(HOST_COLUMNS) + list(SPEED_COLUMNS)
SCALE = np.array([3e9, 8e9, 100, 1e9, 100, 1e4, 100, 500, 0.1])  # bytes, bytes, %, bytes, %, counts, samples/s, s


def readings(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = rng.uniform(0.1, 0.9, (n, len(COLUMNS))) * SCALE
    values[:, COLUMNS.index("host_memory_limit_bytes")] = 8e9  # a fixed limit, as the title shows it
    return np.arange(n) * 0.2, values


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA")).astype(int)


def test_round_numbers():
    assert [nice_ceil(x) for x in (0.7, 1.0, 1.2, 2.5, 3.0, 7.0, 9.1, 12.0)] == [
        0.8,
        1.0,
        1.5,
        3.0,
        3.0,
        8.0,
        10.0,
        15.0,
    ]
    assert nice_ceil(2.9e9) == 3e9 and nice_ceil(0.29) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="positive finite number"):
        nice_ceil(0.0)


@given(st.floats(min_value=1e-9, max_value=1e15))
def test_a_round_number_is_at_least_x_and_at_most_half_again_more(x):
    assert x * (1 - 1e-9) <= nice_ceil(x) <= 1.5 * x * (1 + 1e-9)


def test_a_limit_holds_until_outgrown_then_jumps_to_a_round_number_with_room():
    assert grow_limit(0.0, 7.0) == 10.0  # first frame: 7 × 1.25 = 8.75 → 10
    assert grow_limit(10.0, 9.9) == 10.0 and grow_limit(10.0, 2.0) == 10.0  # never shrinks
    assert grow_limit(10.0, 10.5) == 15.0
    assert grow_limit(0.0, math.nan) == 1.0 and grow_limit(4.0, math.nan) == 4.0  # nothing readable yet
    assert grow_limit(0.0, 0.0, default=10.0) == 10.0
    with pytest.raises(ValueError, match="headroom=0.5 would put the highest point above the axis"):
        grow_limit(1.0, 2.0, headroom=0.5)


@given(st.lists(st.just(0.0) | st.floats(min_value=1e-9, max_value=1e12), min_size=1, max_size=200))
def test_growing_limits_always_hold_the_data_and_change_rarely(values):
    limit, changes = 0.0, 0
    for v in values:
        new = grow_limit(limit, v)
        changes += new != limit
        assert new >= limit and (v <= 0 or new >= v)
        limit = new
    positive = [v for v in values if v > 0]
    if positive:  # each change multiplies the limit by 1.25 or more: a handful of steps, not one per frame
        assert changes <= 2 + math.log(max(positive) / min(positive)) / math.log(1.25)


@pytest.mark.parametrize("shape", [(5, 7, 4), (5, 7, 3), (5, 7)])
def test_the_png_writer_round_trips_through_pil(shape):
    image = np.random.default_rng(1).integers(0, 256, shape, dtype=np.uint8)
    back = np.asarray(Image.open(io.BytesIO(encode_png(image))))
    assert back.shape == shape and (back == image).all()


def test_the_png_writer_explains_what_it_takes():
    with pytest.raises(ValueError, match="uint8 array .* got dtype float64, shape \\(2, 2, 3\\)"):
        encode_png(np.zeros((2, 2, 3)))


def test_a_blitted_frame_matches_a_full_draw_of_the_same_data():
    fig = MonitorFigure(COLUMNS, title="blit", notes=["not shown: GPU panels"])
    t, v = readings(40)
    fig.update(t[:20], v[:20], [(1.0, "epoch 1")], stepped=True)
    fig.live_png()
    limits = [ax.get_ylim() for ax in fig.figure.axes]
    fig.update(t, v, [(1.0, "epoch 1")], stepped=True)  # same ranges (uniform noise): the limits hold
    blitted = pixels(fig.live_png())
    assert fig.full_draws == 1 and [ax.get_ylim() for ax in fig.figure.axes] == limits
    full = pixels(fig.png(relayout=False))  # everything drawn in one pass, same limits and layout
    differ = np.abs(blitted - full).max(axis=2) > 0
    assert differ.mean() < 0.001  # only where a line's end covers an axis spine that a full draw puts on top


def test_new_marks_notes_or_limits_redraw_in_full():
    fig = MonitorFigure(COLUMNS, title="redraws")
    t, v = readings(40)
    fig.update(t[:20], v[:20], stepped=True)
    fig.live_png()
    fig.update(t[:21], v[:21], [(2.0, "epoch 2")], stepped=True)
    fig.live_png()
    fig.set_notes(["not shown: GPU 0 utilisation"])
    fig.live_png()
    assert fig.full_draws == 3
    fig.update(np.r_[t, 60.0], np.vstack([v, v[-1] * 3]), [(2.0, "epoch 2")], stepped=True)
    fig.live_png()
    assert fig.full_draws == 4 and fig.axes["speed"].get_xlim()[1] == 80.0  # 60 s × 1.25 = 75 → 80


def test_wider_tick_labels_after_a_limit_change_get_a_new_layout():
    fig = MonitorFigure(COLUMNS, title="layout")
    t, v = readings(40)
    speed = COLUMNS.index("samples_per_s")
    fig.update(t[:20], v[:20], stepped=True)  # samples/s in the hundreds: narrow tick labels
    fig.live_png()
    v[20:, speed] *= 1000  # hundreds of thousands: labels three digits wider, the panels must move right
    fig.update(t, v, stepped=True)
    live = pixels(fig.live_png())
    fresh = pixels(fig.png(relayout=True))  # the same limits, laid out from scratch
    assert (np.abs(live - fresh).max(axis=2) > 0).mean() < 0.001


def test_live_frames_leave_the_static_figure_as_it_would_have_been():
    t, v = readings(50, seed=2)
    marks = [(3.0, "epoch 1")]
    untouched = MonitorFigure(COLUMNS, title="same")
    untouched.update(t, v, marks)
    live = MonitorFigure(COLUMNS, title="same")
    for n in (10, 30, 50):
        live.update(t[:n], v[:n], marks, stepped=True)
        live.live_png()
    live.update(t, v, marks)
    assert [ax.get_ylim() for ax in live.figure.axes] == [ax.get_ylim() for ax in untouched.figure.axes]
    assert (pixels(live.png()) == pixels(untouched.png())).all()


def test_the_render_thread_skips_a_frame_when_nothing_new_was_sampled():
    import time

    from gpulab.monitoring.ring_buffer import History
    from gpulab.monitoring.view import LiveImage

    history = History(COLUMNS)
    t, v = readings(2)
    history.append(t[0], v[0])
    live = LiveImage(MonitorFigure(COLUMNS), history, [], interval_s=0.5)
    live.show()  # outside a notebook, display() prints the widget's repr
    try:
        end = time.monotonic() + 60
        while live.draws < 1 and time.monotonic() < end:  # bounded waits, not timing checks
            time.sleep(0.02)
        assert live.draws == 1
        first = live.wakeups
        while live.wakeups < first + 2 and time.monotonic() < end:  # two more turns with the same data
            time.sleep(0.02)
        assert live.wakeups >= first + 2, "the render thread stopped taking turns"
        assert live.draws == 1  # both turns skipped: nothing new was sampled
        history.append(t[1], v[1])
        while live.draws < 2 and time.monotonic() < end:
            time.sleep(0.02)
        assert live.draws == 2 and live.widget.value[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        live.stop()
    assert not live._thread.is_alive()


def test_an_envelope_keeps_each_slices_lowest_and_highest_value_and_its_gaps():
    t = np.arange(10_000) * 0.1
    y = np.sin(t) + np.random.default_rng(4).normal(0, 0.1, t.size)
    y[5000:5003] = np.nan
    et, ey = envelope(t, y, t_end=1000.0, slices=100)
    assert len(et) <= 3 * 101 and np.all(np.diff(et) >= 0)
    assert np.nanmax(ey) == np.nanmax(y) and np.nanmin(ey) == np.nanmin(y)  # spikes survive
    assert np.isnan(ey).sum() == 1 and et[np.isnan(ey)][0] == pytest.approx(500.0)  # the gap stays, in its slice
    for k in (0, 37, 99):  # each slice: exactly its lowest and highest reading
        inside = (t >= k * 10) & (t < (k + 1) * 10) & ~np.isnan(y)
        mine = ey[(et >= k * 10) & (et < (k + 1) * 10)]
        assert np.nanmin(mine) == y[inside].min() and np.nanmax(mine) == y[inside].max()
    short_t, short_y = envelope(t[:250], y[:250], t_end=1000.0, slices=100)
    assert (short_t == t[:250]).all() and np.array_equal(short_y, y[:250], equal_nan=True)  # few: as they are


def test_live_lines_are_cut_to_the_panel_width_and_the_static_figure_draws_every_reading():
    fig = MonitorFigure(COLUMNS, title="long run")
    t, v = readings(20_000)
    fig.update(t, v, stepped=True)
    fig.live_png()
    width = fig.axes["speed"].bbox.width
    assert all(len(line.get_xdata()) <= 3 * (width + 1) for line in fig.lines.values())
    fig.update(t, v)
    fig.png()
    assert all(len(line.get_xdata()) == 20_000 for line in fig.lines.values())
