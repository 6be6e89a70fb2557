"""gpulab: helpers for the notebook chapters that teach putting PyTorch work on GPUs.

Grouped by what a learner does with them; each docstring names the notebook that teaches it.
Importing gpulab initialises neither NVML nor CUDA.
"""
from .config import fast_mode, pick
from .devices import Inventory, devices
from .gpus import best_device, cuda_gpu_count, gpu_requirement
from .host import HostInfo, host_info
from .magics import load_ipython_extension
from .nvml import GpuReader, NvmlReader, default_reader
from .report import EnvReport, environment_report
from .readings import GpuInfo, GpuProcess, GpuSample, MigInstance, Unavailable
from .simulated import SimulatedGpuReader
from .units import format_bytes, format_percent, format_rate, format_seconds
from .visible import VisibleMap, parse_visible_devices, visible_map

# >>> chapter 01 exports (issue 3: timing, transfers) — edit only inside this block
from .sizing import Allocation, ModuleSize, allocated_bytes, module_size  # noqa: E402
from .timing import BenchmarkResult, benchmark, synchronize  # noqa: E402
from .crossover import CrossoverSweep, crossover_sweep  # noqa: E402
from .transfer import BandwidthSweep, HazardResult, bandwidth_sweep, nonblocking_hazard  # noqa: E402

_transfer: list[str] = ["benchmark", "BenchmarkResult", "synchronize",
                        "bandwidth_sweep", "BandwidthSweep", "crossover_sweep", "CrossoverSweep",
                        "nonblocking_hazard", "HazardResult",
                        "module_size", "ModuleSize", "allocated_bytes", "Allocation"]
# <<< chapter 01 exports
# >>> chapter 02 exports (issue 4: explain, setter, selection, picker) — edit only inside this block
from .envvars import CudaAlreadyStarted, CudaState, cuda_state, patched_environ, set_visible_devices  # noqa: E402
from .explain import Explanation, explain  # noqa: E402
from .picker import GpuPicker  # noqa: E402
from .reservation import Reservation, current_holders, reserve_gpus  # noqa: E402
from .selection import Choice, NoFreeGpu, Policy, choose_gpus, rank_gpus  # noqa: E402
from .visible import format_visible_devices  # noqa: E402

_choosing_more: list[str] = ["explain", "Explanation", "format_visible_devices",
                             "set_visible_devices", "patched_environ", "cuda_state", "CudaState", "CudaAlreadyStarted",
                             "choose_gpus", "rank_gpus", "Policy", "Choice", "NoFreeGpu",
                             "reserve_gpus", "Reservation", "current_holders", "GpuPicker"]
# <<< chapter 02 exports
# >>> monitor exports (issue 5) — edit only inside this block
from .monitoring import Monitor, MonitorSummary, monitor  # noqa: E402

_monitor: list[str] = ["monitor", "Monitor", "MonitorSummary"]
# <<< monitor exports

# --- chapter 00: what hardware is here -------------------------------------------------------------------------------
_setup = ["environment_report", "EnvReport", "devices", "Inventory", "HostInfo", "host_info", "cuda_gpu_count", "gpu_requirement", "best_device",
          "GpuReader", "NvmlReader", "SimulatedGpuReader", "default_reader",
          "GpuInfo", "GpuSample", "GpuProcess", "MigInstance", "Unavailable"]
# --- chapter 02: which GPU runs what -------------------------------------------------------------------------------
_choosing = ["visible_map", "parse_visible_devices", "VisibleMap"]
# --- formatting and course settings ---------------------------------------------------------------------------------
_common = ["format_bytes", "format_seconds", "format_rate", "format_percent", "fast_mode", "pick",
           "load_ipython_extension"]

__all__ = _setup + _choosing + _common + _transfer + _choosing_more + _monitor
__version__ = "0.1.0"
