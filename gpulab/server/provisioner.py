"""Every student's kernel gets its own free GPUs: a ``jupyter_client`` kernel provisioner (a probe: processes, locks).

A kernelspec whose metadata names ``gpulab-provisioner`` (``python -m gpulab kernelspec install --n-gpus 1``) is started
by ``GpuKernelProvisioner``, jupyter_client's own ``LocalProvisioner`` with one step added: the kernel's command runs
behind ``python -m gpulab.server.reservation_start``, which reserves free GPUs with ``reserve_gpus`` (the policy, lock
files and details every other view reads), sets ``CUDA_VISIBLE_DEVICES``, ``MASTER_PORT`` and ``GPULAB_MASTER_PORTS``,
and ``exec``s the kernel, which then holds the lock files itself. So the reservation ends with the kernel however it
ends (shutdown, restart, culling, ``kill -9``): the provisioner releases nothing and runs no poller. A restart prefers
the GPUs the kernel had, when they are still free. The reservation records the kernel id, the Unix user and the notebook
(``JPY_SESSION_NAME``, which jupyter-server sets to the notebook's path).

When no GPU is free the start fails with a message that JupyterLab shows: who holds what, and what to do. With
``wait_s`` the start waits up to that long for a GPU. ``n_gpus=0`` starts a kernel that sees no GPU
(``CUDA_VISIBLE_DEVICES=""``) and holds nothing: the kernel for the students who wait.

While the kernel runs, its reservation file's modification time follows jupyter-server's ``last_activity`` (the clock
the culler uses), so ``python -m gpulab watch`` can show each reservation's idle time without a token for anyone's
server. Built on jupyter_client's provisioner API (``KernelProvisionerBase``), registered through its entry point
``jupyter_client.kernel_provisioners``. Taught in ``notebooks/workshop_guide.ipynb``.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import sys
from typing import Any

from jupyter_client.provisioning import LocalProvisioner
from traitlets import Dict, Float, Int, TraitError, Unicode

from ..placement.selection import Policy
from .reservation_start import START_MODULE

__all__ = ["GpuKernelProvisioner", "GpuKernelStartFailed", "PROVISIONER_NAME"]

PROVISIONER_NAME = "gpulab-provisioner"
_OLD_INFO_KEY = "gpulab_lease"  # deprecated: the key older gpulab saved a kernel's reservation under, still read
_OLD_COUNT_KEY = "gpus"  # deprecated: the kernel.json key older gpulab wrote the GPU count under, still read


class GpuKernelStartFailed(RuntimeError):
    """The kernel did not start because its GPUs could not be reserved; the message says who holds them and what to
    do."""


def _what_to_do(n_gpus: int, wait_s: float) -> str:
    waited = f" (this kernel waited {wait_s:g} s)" if wait_s else ""
    return (
        f"\nNo kernel was started{waited}. What you can do:\n"
        "  - wait a few minutes and start it again: GPUs come back when other kernels shut down or are culled "
        "(python -m gpulab watch shows who holds each one);\n"
        "  - start a kernel that needs no GPU: the kernel 'Python 3 · no GPU (gpulab)' or a plain 'Python 3' "
        "kernel (Kernel → Change Kernel…), and work on the CPU meanwhile;\n"
        f"  - ask the instructor{' for a kernel with fewer GPUs' if n_gpus > 1 else ''}."
    )


def _touch(path: Any) -> None:
    try:
        os.utime(path, None)
    except OSError:
        pass  # the reservation is gone (the kernel ended): nothing to show


class GpuKernelProvisioner(LocalProvisioner):  # type: ignore[misc]
    """``LocalProvisioner`` that starts the kernel holding ``n_gpus`` free GPUs (see the module's docstring).

    Configured from the kernelspec's ``metadata.kernel_provisioner.config``: ``n_gpus``, ``shares`` (kernels per GPU:
    above 1, each kernel holds one share of a GPU with its memory cap, ``GPULAB_MEMORY_CAP``), ``policy`` (``Policy``'s
    fields), ``wait_s``, ``reservations`` (the reservations folder; default ``GPULAB_RESERVATIONS_DIR`` or
    ``/tmp/gpulab-reservations``)."""

    n_gpus = Int(1, config=True, help="how many free GPUs each kernel reserves (0: a kernel that sees no GPU)")
    shares = Int(1, config=True, help="how many kernels share each GPU (1: a whole GPU each; 3: a share of a third)")
    policy = Dict({}, config=True, help="the fields of gpulab's Policy: what counts as a free GPU")
    wait_s = Float(0.0, config=True, help="how long a start waits for a GPU to come free before it fails")
    reservations = Unicode("", config=True, help="the reservations folder (default: GPULAB_RESERVATIONS_DIR or /tmp/…)")
    activity_every_s = Float(
        10.0, config=True, help="how often the reservation files follow the server's last_activity"
    )

    reservation: dict[str, Any] | None = None  # what the last start got: uuids, physical, ports, pid, env
    _activity_task: asyncio.Task | None = None

    def __init__(self, **kwargs: Any) -> None:
        if _OLD_COUNT_KEY in kwargs:  # deprecated key of a kernel.json an older gpulab installed; unread, it would be 1
            kwargs.setdefault("n_gpus", kwargs.pop(_OLD_COUNT_KEY))
        super().__init__(**kwargs)

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        """Start the kernel through ``reservation_start``, which reserves its GPUs first (or hide every GPU from a
        kernel that holds none)."""
        kwargs = await super().pre_launch(**kwargs)
        if self.n_gpus < 0:
            raise GpuKernelStartFailed(
                f"this kernelspec asks for n_gpus={self.n_gpus}; reinstall it with "
                "python -m gpulab kernelspec install --n-gpus 1 (or --n-gpus 0 for no GPU)."
            )
        if self.shares < 1 or (self.shares > 1 and self.n_gpus != 1):
            raise GpuKernelStartFailed(
                f"this kernelspec asks for n_gpus={self.n_gpus} with shares={self.shares}; a kernel holds one share "
                "of one GPU. Reinstall it: python -m gpulab kernelspec install --n-gpus 1 --shares 3."
            )
        if self.n_gpus == 0:
            kwargs["env"]["CUDA_VISIBLE_DEVICES"] = ""  # CUDA sees no GPU; nothing is held
            return kwargs
        try:
            Policy(**self.policy)
        except (TypeError, ValueError) as exc:
            raise GpuKernelStartFailed(
                f"this kernelspec's policy {self.policy} is not one gpulab can use ({exc}). "
                "Reinstall it: python -m gpulab kernelspec install --n-gpus 1 --policy "
                "max_memory_used_fraction=0.5 (or without --policy)."
            ) from None
        env = kwargs["env"]
        details = {
            "kernel": self.kernel_id or "",
            "user": pwd.getpwuid(os.geteuid()).pw_name,
            "notebook": env.get("JPY_SESSION_NAME", ""),
        }
        prefer = ",".join(self.reservation["uuids"]) if self.reservation else ""
        self._report_r, self._report_w = os.pipe()
        kwargs["cmd"] = [
            sys.executable,
            "-m",
            START_MODULE,
            "--report-fd",
            str(self._report_w),
            "--n-gpus",
            str(self.n_gpus),
            "--shares",
            str(self.shares),
            "--policy",
            json.dumps(self.policy),
            "--wait-s",
            str(self.wait_s),
            "--prefer",
            prefer,
            "--details",
            json.dumps(details),
            *(["--reservations", self.reservations] if self.reservations else []),
            "--",
            *kwargs["cmd"],
        ]
        kwargs["pass_fds"] = (*kwargs.get("pass_fds", ()), self._report_w)
        return kwargs

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
        """Launch, then read what the reservation got: a kernel whose GPUs were not free fails to start, saying what to
        do."""
        if self.n_gpus == 0:
            return await super().launch_kernel(cmd, **kwargs)
        try:
            info = await super().launch_kernel(cmd, **kwargs)
        except BaseException:
            os.close(self._report_r)
            raise
        finally:
            os.close(self._report_w)  # the starter holds the other copy: end of file once it execs or dies
        report = await self._read_report(self._report_r)
        if not report.get("ok"):
            await self.wait()  # the starter has exited after reporting: reap it
            text = report.get("error") or "the GPU reservation step ended before it said why (see the server's log)"
            raise GpuKernelStartFailed(
                text + (_what_to_do(self.n_gpus, self.wait_s) if report.get("kind") == "busy" else "")
            )
        self.reservation = report
        return info

    async def _read_report(self, fd: int) -> dict[str, Any]:
        """The starter's one line, read without blocking the server (it may wait ``wait_s`` for a GPU)."""
        os.set_blocking(fd, False)
        data = b""
        try:
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    await asyncio.sleep(0.02)
                    continue
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
        try:
            return json.loads(data.decode() or "{}")
        except ValueError:
            return {"ok": False, "error": f"the GPU reservation step said {data[:200]!r}, which is not its report"}

    async def post_launch(self, **kwargs: Any) -> None:
        """Once the kernel runs: follow jupyter-server's activity, so that ``watch`` shows the kernel's idle time."""
        await super().post_launch(**kwargs)
        if self.reservation and self.parent is not None and self.parent.has_trait("last_activity"):  # jupyter-server's
            self._activity_task = asyncio.ensure_future(self._follow_activity(self.reservation))

    async def _follow_activity(self, reservation: dict[str, Any]) -> None:
        """Touch the reservation files when the server saw the kernel active since the last look (``watch``'s idle
        time).

        Only "now" can be written (``utime(path, None)``): the lock files may belong to another user, who alone
        could set an arbitrary time. So the idle time shown is accurate to ``activity_every_s``."""
        from ..reservations.folder import lock_path, reservations_dir
        from ..reservations.holders import reservation_holders
        from ..reservations.share_slots import share_key

        folder = reservations_dir(self.reservations or None, create=False)
        seen = self._last_activity()
        while self.process is not None and self.process.poll() is None:
            await asyncio.sleep(self.activity_every_s)
            now = self._last_activity()
            if now != seen:
                seen = now
                held = reservation_holders(reservation["uuids"], folder)
                for uuid in reservation["uuids"]:
                    h = held.get(uuid)
                    if h is not None and reservation.get("share"):  # a share: its own lock file shows the idle time
                        k, n = reservation["share"]
                        if any(s == k and sh.pid == reservation["pid"] for s, _, sh in h.shares):
                            _touch(lock_path(folder, share_key(uuid, k, n)))
                    elif h is not None and h.pid == reservation["pid"]:
                        _touch(lock_path(folder, uuid))

    def _last_activity(self) -> object:
        try:
            return self.parent.last_activity
        except TraitError:  # not set yet: the server sets it right after the start
            return None

    async def cleanup(self, restart: bool = False) -> None:
        """Stop following the kernel's activity; the reservation ended with the kernel's process."""
        if self._activity_task is not None:
            self._activity_task.cancel()
            self._activity_task = None
        await super().cleanup(restart=restart)

    async def get_provisioner_info(self) -> dict[str, Any]:
        """What jupyter-server saves about this kernel, with its reservation, so a restarted server still knows it."""
        info = await super().get_provisioner_info()
        info["gpulab_reservation"] = self.reservation
        return info

    async def load_provisioner_info(self, provisioner_info: dict) -> None:
        """The reservation saved with the kernel (under the old key too), for a server that restarted."""
        await super().load_provisioner_info(provisioner_info)
        saved = provisioner_info.get("gpulab_reservation")
        self.reservation = saved if saved is not None else provisioner_info.get(_OLD_INFO_KEY)
