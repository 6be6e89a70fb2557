"""The GPU picker: one row per physical GPU, tick the ones you want, see ``cuda:k → physical`` live, apply (a view).

The only module that imports ipywidgets for this view. It reads GPUs through a ``GpuReader`` (NVML, or a described
machine such as ``SimulatedGpuReader("workshop-8")``, always labelled SIMULATED), so it never creates a CUDA context.
Everything the buttons do is also a method (``select``, ``pick_free``, ``apply``), and the starting selection can be
given as an argument or in ``GPULAB_PICK_GPUS`` (``"2,0"`` or ``"free:2"``), so a notebook runs the same without a
browser. With no GPU it shows the CPU and says what would appear. Taught in ``notebooks/02_choosing_gpus.ipynb``.
"""

from __future__ import annotations

import dataclasses
import html
import os
from collections.abc import Mapping, Sequence

import ipywidgets as w

from ..core.arguments import environment, index_list, path_or_none, shown, whole_number
from ..core.readings import GpuInfo, is_known
from ..core.reservable import device_key, device_readings, one_slice_note
from ..core.tables import html_with_code
from ..core.visible import VisibleMap, visible_map
from ..core.visible_text import VisibleSpec, parse_visible_devices
from ..core.widget_view import widget_bundle
from ..machine.nvml import GpuReader
from ..machine.resolve import as_reader
from ..reservations.holders import reservation_holders
from ..reservations.yours import yours_and_others
from .allowed import usable_gpus
from .picker_text import (
    BADGE,
    BAR_STYLE,
    HEADER,
    PICK_ENV,
    SIMULATED_BANNER,
    WIDTHS,
    cpu_lines,
    free_rule,
    memory_text,
    not_free_warning,
    parse_pick,
    starting_pick,
    status_html,
    text_form,
    utilisation_text,
    who_uses,
    who_words,
)
from .selection import NoFreeGpu, Policy, choose_up_to, rank_gpus, validated_policy
from .setter import CudaAlreadyStarted, write_visible_devices

__all__ = ["GpuPicker", "parse_pick"]


class GpuPicker:
    """``GpuPicker()`` in a cell shows the widget; ``picker.selected``/``picker.value``/``picker.mapping`` read it."""

    def __init__(
        self,
        machine: GpuReader | str | None = None,
        *,
        selected: Sequence[int] | str | None = None,
        policy: Policy | None = None,
        env: Mapping[str, str] | None = None,
        reservations: str | None = None,
        this_kernel: bool | None = None,
    ) -> None:
        self.reader = as_reader(machine)
        self.policy = validated_policy(policy)
        env = environment(env)
        if this_kernel is not None and not isinstance(this_kernel, bool):
            raise TypeError(
                f"this_kernel={shown(this_kernel)}: this_kernel takes True, False or None (the default: "
                "True for this machine, False for a described one)."
            )
        pick = starting_pick(selected if selected is not None else os.environ.get(PICK_ENV))
        # A simulated machine is not this kernel's: apply() only shows the value there, unless told otherwise.
        self.simulated = bool(getattr(self.reader, "simulated", False))
        self.this_kernel = (not self.simulated) if this_kernel is None else this_kernel
        # The environment the kernel started with decides which GPUs it may use; a described machine is not this one.
        self.env = dict(env) if env is not None else (dict(os.environ) if self.this_kernel else {})
        # this machine's GPUs (or those env describes) obey its SLURM job's or Kubernetes pod's scheduler
        self._scheduler_env = dict(env) if env is not None else dict(os.environ) if machine is None else None
        self.reservations = path_or_none(reservations, "reservations")
        self._order: list[int | str] = []  # physical indices, and "0/mig1" for a MIG slice
        self.gpus: tuple[GpuInfo, ...] = ()
        self.status = w.HTML()
        self.mapping_view = w.HTML()
        self.rows_box = w.VBox()
        self.apply_button = w.Button(
            description="Apply",
            button_style="primary",
            tooltip="set CUDA_VISIBLE_DEVICES in this kernel (before CUDA starts)",
        )
        # how many GPUs "Pick N free" ticks: the learner sets it, and the button says it
        start = pick if isinstance(pick, int) else max(1, len(pick or ()))
        self.count = w.BoundedIntText(
            value=start, min=1, max=64, description="how many", layout=w.Layout(width="150px")
        )
        self.free_button = w.Button(
            description=f"Pick {self.count.value} free", tooltip="tick the freest GPUs, as many as the number beside it"
        )
        self.count.observe(lambda ch: setattr(self.free_button, "description", f"Pick {ch['new']} free"), "value")
        self.refresh_button = w.Button(description="Refresh")
        self.apply_button.on_click(lambda _: self._clicked(self.apply))
        self.free_button.on_click(lambda _: self._clicked(lambda: self.pick_free(self.count.value)))
        self.refresh_button.on_click(lambda _: self.refresh())
        self._boxes: dict[int | str, w.Checkbox] = {}
        banner = w.HTML(SIMULATED_BANNER if self.simulated else "")
        self.rule_view, self.header = w.HTML(), _header()
        controls = w.HBox([self.count, self.free_button, self.apply_button, self.refresh_button])
        rows = [banner, self.header, self.rows_box, self.rule_view, controls, self.mapping_view, self.status]
        self.widget = w.VBox(rows)
        self.refresh()
        if isinstance(pick, int) and not self.shortfall:  # given no GPU, the status line says how to ask for one
            self.pick_free(pick)
        elif pick is not None and not self.shortfall:
            self.select(pick)

    # -- reading the machine ---------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the GPUs again (memory, utilisation, processes, reservations) and redraw the rows."""
        self.gpus = tuple(self.reader.info(i) for i in range(self.reader.count()))
        self.devices = device_readings(self.gpus)  # the rows: each GPU, and in place of one in MIG mode its slices
        self._usable = usable_gpus(self.gpus, self.env, self._scheduler_env)
        self._cards = {g.physical_index for g in self.gpus if self._usable.allows(g.physical_index)}
        self._by_key = {device_key(d): d for d in self.devices}
        self._allowed = {k for k, d in self._by_key.items() if d.physical_index in self._cards}
        holders = reservation_holders([d.uuid for d in self.devices], self.reservations)
        # yours: this kernel's own reservations and its server's; taken: what its choices keep away from
        self._yours, self._taken = yours_and_others(holders)
        self._holders = who_words(self.devices, holders, self._taken, self._yours)  # the who column
        verdicts = rank_gpus(self.devices, self.policy, taken=self._taken, yours=self._yours)
        self._verdicts = {device_key(v.gpu): v for v in verdicts}
        self._boxes = {}
        self.rows_box.children = [self._row(d) for d in self.devices] or [self._cpu_row()]
        self.header.layout.display = None if self.gpus else "none"
        self.rule_view.value = f"<p style='color:#555'>{html.escape(self.rule())}</p>" if self.gpus else ""
        for i in self._order:
            if i in self._boxes:
                self._boxes[i].value = True
        self.apply_button.disabled = self.free_button.disabled = not self.gpus or not self._allowed
        self._update()
        if self.shortfall:  # the scheduler gave this job no GPU: the line says how to ask it for one
            self._say(self.shortfall, ok=False)

    def _row(self, g: GpuInfo) -> w.HBox:
        key = device_key(g)
        box = w.Checkbox(value=False, description=f"GPU {g.label}", indent=False, layout=w.Layout(width="70px"))
        box.observe(lambda ch, i=key: self._ticked(i, ch["new"]), names="value")
        box.disabled = key not in self._allowed
        self._boxes[key] = box
        used, total = g.memory_used_bytes, g.memory_total_bytes
        frac = used / total if is_known(used) and is_known(total) and total else 0.0
        state = self.state(key)
        # the bar's length is the memory used; its colour, like the badge's, is the free rule's verdict (judge). A free
        # GPU's bar is nearly empty, so the legend names the badge, which always shows its colour.
        bar = w.FloatProgress(value=frac, min=0.0, max=1.0, layout=w.Layout(width="100px"), bar_style=BAR_STYLE[state])
        badge = w.HTML(
            f"<span style='color:#fff;background:{BADGE[state]};padding:0 6px;border-radius:3px'>{state}</span>",
            layout=w.Layout(width=f"{WIDTHS[0] - 70}px"),
        )
        _, model, mem_w, util_w, who_w = WIDTHS
        return w.HBox(
            [
                box,
                badge,
                _cell(g.name, model),
                bar,
                _cell(memory_text(g), mem_w - 100),
                _cell(utilisation_text(g), util_w),
                _cell(self._who(g), who_w),
            ]
        )

    def state(self, physical_index: int | str) -> str:
        """``"free"``, ``"yours"`` or ``"busy"`` (the rule ``choose_gpus`` applies, ``selection.judge``; see
        ``rule()``), or ``"hidden"`` from this kernel, for a row: a GPU's physical index, or ``"0/mig1"``."""
        if physical_index not in self._verdicts:
            raise ValueError(f"{physical_index!r} is not a row of this picker; its rows are {list(self._verdicts)}.")
        return self._verdicts[physical_index].state if physical_index in self._allowed else "hidden"

    def rule(self) -> str:
        """The free rule in one sentence, as the widget states it under the table."""
        return free_rule(self.policy)

    @property
    def shortfall(self) -> str:
        """In a SLURM job or Kubernetes pod given no GPU: how to ask for one (the status line); else ``""``."""
        return self._usable.none_given()

    def _who(self, g: GpuInfo) -> str:
        return who_uses(g, self._cards, self._holders, self._usable.hidden_because)

    def _cpu_lines(self) -> list[str]:
        return cpu_lines(getattr(self.reader, "error", None))

    def _cpu_row(self) -> w.HTML:
        first, *rest = self._cpu_lines()
        return w.HTML(
            f"<p><b>CPU</b>{html.escape(first[3:])}</p>" + "".join(f"<p>{html_with_code(x)}</p>" for x in rest)
        )

    # -- the selection -----------------------------------------------------------------------------------------------
    @property
    def selected(self) -> tuple[int | str, ...]:
        """Physical GPUs (``"0/mig1"`` for a MIG slice) in the order they were ticked: the first is cuda:0."""
        return tuple(self._order)

    @property
    def value(self) -> str:
        """The ``CUDA_VISIBLE_DEVICES`` value for the selection: physical indices, as read with
        ``CUDA_DEVICE_ORDER=PCI_BUS_ID``; UUIDs where a MIG slice is ticked (a slice has no index)."""
        if all(isinstance(k, int) for k in self._order):
            return ",".join(map(str, self._order))
        return ",".join(self._by_key[k].uuid for k in self._order)

    @property
    def mapping(self) -> VisibleMap:
        """What a process started with this selection would see."""
        return visible_map(self.gpus, {"CUDA_VISIBLE_DEVICES": self.value, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})

    def select(self, physical_indices: Sequence[int | str]) -> None:
        """Tick exactly these GPUs, in this order (the first becomes cuda:0); a MIG slice as ``"0/mig1"``."""
        if isinstance(physical_indices, (list, tuple)) and any(isinstance(k, str) for k in physical_indices):
            index_list([k for k in physical_indices if not isinstance(k, str)], "physical_indices")
        else:
            physical_indices = index_list(physical_indices, "physical_indices", example="select([2, 3])")
        bad = [i for i in physical_indices if i not in self._allowed]
        usable = [k for k in self._by_key if k in self._allowed]
        if bad or len(set(physical_indices)) != len(physical_indices):
            why = (
                f"GPU {bad[0]} is not one this kernel may use (it can use {usable or 'none'})"
                if bad
                else "a GPU is listed twice"
            )
            raise ValueError(
                f"cannot select {list(physical_indices)}: {why}. Use the physical numbers shown in the "
                "rows (nvidia-smi's numbering)."
            )
        self._order = []
        for box in self._boxes.values():
            box.value = False
        for i in physical_indices:
            self._boxes[i].value = True  # observer appends in this order

    def pick_free(self, n: int = 1) -> tuple[int | str, ...]:
        """Tick ``n`` GPUs: yours first (this kernel's reservations, its server's), then the freest
        (``gpulab.placement.selection``'s rule), others' reservations excluded.

        With fewer than ``n`` yours or free it ticks those it found and says so in the status line; ``NoFreeGpu`` (why
        each GPU was passed over) only when none is. Returns the GPUs ticked.
        """
        n = whole_number(n, "n", minimum=1, example="pick_free(2)")
        chosen, fewer = choose_up_to(
            n, self.gpus, self.policy, taken=self._taken, yours=self._yours, allowed=self._usable
        )
        self.select(chosen)
        if fewer:
            self._say(fewer, ok=None)
        return self.selected

    def apply(self) -> VisibleSpec:
        """Set ``CUDA_VISIBLE_DEVICES`` here to the selection (refused once CUDA read it; said where that is unknown).

        On a simulated machine (unless ``this_kernel=True``) nothing is set: the value is only shown.
        """
        if not self._order:
            raise ValueError("nothing is selected: tick at least one GPU (or call select([...]) / pick_free()).")
        if not self.this_kernel:
            self._say(
                f"Simulated machine: a real one would now set CUDA_VISIBLE_DEVICES={self.value} "
                "CUDA_DEVICE_ORDER=PCI_BUS_ID. Nothing was changed in this kernel.",
                ok=True,
            )
            spec = parse_visible_devices(self.value)  # printed, it says that it is a described machine's
            return dataclasses.replace(
                spec, notes=(*spec.notes, "SIMULATED machine: what a real one would set; nothing was set")
            )
        spec, unsure = write_visible_devices(self.value, "PCI_BUS_ID")  # unsure: could not verify, and why
        done = (
            f"Set CUDA_VISIBLE_DEVICES={self.value}, CUDA_DEVICE_ORDER=PCI_BUS_ID here; "
            "processes it starts inherit them."
        )
        self._say(unsure[:1].upper() + unsure[1:] if unsure else done, ok=not unsure or None)
        return spec

    # -- plumbing ----------------------------------------------------------------------------------------------------
    def _ticked(self, i: int | str, on: bool) -> None:
        if on and i not in self._order:
            self._order.append(i)
        elif not on and i in self._order:
            self._order.remove(i)
        self.status.value = ""  # what an earlier Apply or Pick free said was about another selection
        self._update()

    def warnings(self) -> list[str]:
        """One sentence per ticked GPU that is not free: who holds it, how full and how busy it is; and one where a MIG
        slice is ticked beside another device (CUDA lets a process use one MIG slice only)."""
        ticked = [self._by_key[i] for i in self._order]
        mine = [g for g in ticked if g.uuid not in self._yours]  # yours: no warning
        said = [w for w in (not_free_warning(g, self.policy, self._taken) for g in mine) if w]
        return said + [s for s in [one_slice_note(ticked)] if s]

    def _update(self) -> None:
        if not self.gpus:
            self.mapping_view.value = "<p>Nothing to map: this machine has no GPU, so torch will use the CPU.</p>"
            return
        if not self._order:
            self.mapping_view.value = "<p>Selected: none (tick a row)</p>"
            return
        warn = "".join(f"<p style='color:#a60'>⚠ {html.escape(w)}</p>" for w in self.warnings())
        self.mapping_view.value = self.mapping._repr_html_() + warn

    def _clicked(self, action) -> None:
        try:
            action()
        except (CudaAlreadyStarted, NoFreeGpu, ValueError, TypeError) as exc:
            self._say(str(exc), ok=False)

    def _say(self, text: str, *, ok: bool | None) -> None:
        self.status.value = status_html(text, ok)

    def __str__(self) -> str:
        """The text form: every GPU under the widget's header, with the same badges, then the selection."""
        label = "SIMULATED machine (described GPUs, not this computer's): " if self.simulated else ""
        head = f"{label}{len(self.gpus)} GPU(s); selected: {', '.join(map(str, self._order)) or 'none'}"
        if self.shortfall:
            head += f"\n  {self.shortfall}"
        if not self.gpus:
            return "\n".join([head] + [f"  {line}".replace("`", "") for line in self._cpu_lines()])
        rows = [[g, self.state(device_key(g)), self._who(g)] for g in self.devices]
        mapping = (
            dataclasses.replace(self.mapping.table(), title=self.mapping.environment_line()) if self._order else ""
        )
        return text_form(head, rows, self.rule(), str(mapping), self.warnings())

    def _repr_mimebundle_(self, **kwargs: object) -> dict:
        return widget_bundle(self.widget.model_id, str(self))  # not the widget's own: ipywidgets 7 has none


def _header() -> w.HBox:
    return w.HBox([w.HTML(f"<b>{h}</b>", layout=w.Layout(width=f"{px}px")) for h, px in zip(HEADER, WIDTHS)])


def _cell(text: str, width: int) -> w.HTML:
    t = html.escape(text)
    return w.HTML(f"<span title='{t}'>{t}</span>", layout=w.Layout(width=f"{width}px", overflow="hidden"))
