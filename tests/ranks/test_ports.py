"""A reservation's private MASTER_PORT range: derived from its GPUs, disjoint between reservations, honoured by the
launcher's rendezvous store (a real TCPStore), with clear errors for a range written wrong or used up."""

from __future__ import annotations

import socket

import pytest

from gpulab.ranks.ports import PORTS_VAR, format_ports, parse_ports, reservation_ports, store_ports
from gpulab.ranks.ports import open_store as _open_store


def test_reservations_of_different_gpus_get_disjoint_ranges_that_avoid_torchruns_default():
    ranges = [set(reservation_ports([k])) for k in range(8)]
    assert all(not (a & b) for i, a in enumerate(ranges) for b in ranges[i + 1 :])
    assert 29500 not in set().union(*ranges)
    assert format_ports(reservation_ports([5, 3])) == "29540-29549"  # the lowest GPU of the reservation names its range


@pytest.mark.parametrize(
    "text, message",
    [
        ("29510", "expected a range of ports written first-last"),
        ("29519-29510", "must go upwards"),
        ("80-90", "within 1024-65535"),
    ],
)
def test_a_range_written_wrong_is_refused_with_an_example(text, message):
    with pytest.raises(ValueError, match=message):
        parse_ports(text)


def _two_free_ports() -> int:
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p >= 65535:
            continue
        with socket.socket() as t:
            try:
                t.bind(("127.0.0.1", p + 1))
            except OSError:
                continue
        return p
    raise AssertionError("no two free ports in a row")


def test_the_launchers_store_takes_the_first_free_port_of_the_kernels_range(monkeypatch):
    assert store_ports({}) == [0]
    first = _two_free_ports()
    monkeypatch.setenv(PORTS_VAR, f"{first}-{first + 1}")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", first))
        busy.listen()
        store = _open_store(1, 5.0)
        assert store.port == first + 1
        with pytest.raises(RuntimeError, match=f"every port of this kernel's range {first}-{first + 1} is in use"):
            _open_store(1, 5.0)
        del store
