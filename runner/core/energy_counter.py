"""The energy counter seam: what runner/core/energy.py reads, and NVML behind it.

A counter is three calls: the device's total energy in mJ since some origin, and a
monotonic clock (`now`, `sleep`) its reads are timed with. On a GPU host that is NVML's
nvmlDeviceGetTotalEnergyConsumption (nvidia-ml-py, an optional dependency: `pip install
launchbench[energy]`) with time.perf_counter; tests pass a fake that steps every 80 ms on
an injected clock (tests/fake_energy.py), so no test depends on the wall clock.

Where there is no counter, `open_counter` returns the reason as a string, never a counter
that reads 0: the point's energy figures are then absent, with that reason.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

NVML_INSTALL = "nvidia-ml-py is not installed (pip install 'launchbench[energy]')"
MIG = "a MIG instance: NVML's energy counter is the whole GPU's, shared with other slices"
VOLTA = 7  # compute capability major: NVML's total-energy counter starts with Volta


class EnergyCounter(Protocol):
    name: str

    def read_mj(self) -> float: ...

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True)
class Tick:
    """The counter moved to `mj` at some moment in [lo, hi] (counter's clock): `lo` is
    when the read before it began, `hi` when the read that saw the new value returned."""
    lo: float
    hi: float
    mj: float

    @property
    def at(self) -> float:
        """The best estimate of the moment: the middle of what the reads allow."""
        return (self.lo + self.hi) / 2

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2


class TickSource(Protocol):
    """Where an energy window learns of the counter's ticks (runner/core/energy.py).
    `poll()` is called by the running mode after each block; `first(after)` is the first
    tick whose earliest moment is at or after `after`, or None so far."""

    def start(self) -> None: ...

    def poll(self) -> None: ...

    def first(self, after: float) -> Tick | None: ...

    def stop(self) -> None: ...


class PolledTicks:
    """Ticks found by reading the counter once per `poll()`, in the caller's thread. For
    counters whose reads cost the device nothing (a synthetic counter in tests); on a GPU
    a read takes milliseconds of host time that a launch-bound mode would idle through,
    so NVML's counter uses ThreadTicks."""

    def __init__(self, counter: EnergyCounter):
        self.c = counter
        self.ticks: list[Tick] = []
        self._last: tuple[float, float] | None = None  # (value, when its read began)

    def start(self) -> None:
        self.ticks, self._last = [], None
        self.poll()

    def poll(self) -> None:
        t0 = self.c.now()
        v = self.c.read_mj()
        t1 = self.c.now()
        if self._last is not None:
            if v < self._last[0]:
                raise CounterWentBack(self._last[0], v)
            if v != self._last[0]:
                self.ticks.append(Tick(self._last[1], t1, v))
        self._last = (v, t0)

    def first(self, after: float) -> Tick | None:
        return next((t for t in self.ticks if t.lo >= after), None)

    def stop(self) -> None:
        pass


class ThreadTicks(PolledTicks):
    """Ticks found by a reader thread that reads the counter back to back while the mode
    runs in the main thread. Why a thread: an NVML read takes ~4 ms of host time (H100,
    bench/results/h100-memory-energy-probe.txt); read between a launch-bound mode's
    blocks it would idle the GPU for as long, which lowers the very power being measured.
    The read releases the GIL (a ctypes call), so the launching thread runs on while the
    reader waits on the driver. `poll()` is then a no-op."""

    MIN_INTERVAL_S = 0.001  # a driver that answers in microseconds must not starve the mode

    def __init__(self, counter: EnergyCounter):
        super().__init__(counter)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> None:
        self.ticks, self._last = [], None
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="energy-ticks", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                super().poll()
                rest = self.MIN_INTERVAL_S - (time.perf_counter() - t0)
                if rest > 0:
                    time.sleep(rest)
        except BaseException as e:  # noqa: BLE001 - handed to the caller at first()
            self.error = e

    def poll(self) -> None:
        if self.error is not None:
            raise self.error

    def first(self, after: float) -> Tick | None:
        self.poll()
        return super().first(after)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None


class CounterWentBack(RuntimeError):
    def __init__(self, before: float, after: float):
        super().__init__(f"the energy counter went back from {before:.0f} to {after:.0f} mJ")


def ticks_of(counter: EnergyCounter) -> TickSource:
    """The counter's own tick source where it has one (NVML: a reader thread), else
    reads in the caller's thread."""
    own = getattr(counter, "ticks", None)
    return own() if own is not None else PolledTicks(counter)


class NvmlCounter:
    """NVML's total-energy counter of one device, timed with perf_counter."""

    def __init__(self, nvml: Any, handle: Any, name: str):
        self.nvml, self.handle, self.name = nvml, handle, name

    def read_mj(self) -> float:
        return float(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle))

    def now(self) -> float:
        return time.perf_counter()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def ticks(self) -> ThreadTicks:
        return ThreadTicks(self)

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()  # NVML counts inits: this undoes only ours
        except Exception:  # noqa: BLE001 - nothing to do about a failed shutdown
            pass


@dataclass(frozen=True)
class GpuIdentity:
    """How torch names a CUDA device (torch_identity)."""
    index: int
    uuid: str | None
    pci: str | None  # domain:bus:device.function, as NVML's bus id
    major: int | None  # compute capability
    minor: int | None
    visible: str | None  # CUDA_VISIBLE_DEVICES as torch saw it


def torch_identity(device: str) -> GpuIdentity:
    """How torch names the device: its UUID, PCI bus id and compute capability. NVML
    numbers devices in PCI order and ignores CUDA_VISIBLE_DEVICES, torch in CUDA's
    order among the visible ones: only the UUID or the bus id names the same GPU."""
    import torch

    index = int(device.split(":", 1)[1]) if ":" in device else torch.cuda.current_device()
    # Any: torch's stub of the properties lacks the PCI ids that builds carry (hasattr below)
    p: Any = torch.cuda.get_device_properties(index)
    uuid = str(getattr(p, "uuid", "") or "") or None
    pci = None
    if all(hasattr(p, a) for a in ("pci_domain_id", "pci_bus_id", "pci_device_id")):
        pci = f"{p.pci_domain_id:08X}:{p.pci_bus_id:02X}:{p.pci_device_id:02X}.0"
    return GpuIdentity(index=index, uuid=uuid, pci=pci, major=p.major, minor=p.minor,
                       visible=os.environ.get("CUDA_VISIBLE_DEVICES"))


def open_counter(device: str, *, nvml: Any = None,
                 identity: GpuIdentity | None = None) -> NvmlCounter | str:
    """The NVML counter of `device` as torch names it ("cuda", "cuda:1"), or why not.

    `nvml` (the pynvml module) and `identity` (torch_identity's answer) are parameters
    so tests can hand in fakes; by default both are looked up here, lazily."""
    if not device.startswith("cuda"):
        return f"energy needs an NVIDIA GPU's counter; this point runs on {device}"
    if nvml is None:
        try:
            import pynvml
        except ImportError:
            return NVML_INSTALL
        nvml = pynvml
    try:
        ident = identity if identity is not None else torch_identity(device)
    except Exception as e:  # noqa: BLE001 - no CUDA device to name
        return f"cannot name {device} for NVML: {type(e).__name__}: {e}"[:300]
    if ident.major is not None and ident.major < VOLTA:
        return (f"NVML's total-energy counter needs Volta or newer; this GPU is compute "
                f"capability {ident.major}.{ident.minor or 0}")
    uuid = ident.uuid or ""
    if uuid.startswith("MIG-") or "MIG-" in (ident.visible or ""):
        return MIG
    try:
        nvml.nvmlInit()
    except Exception as e:  # noqa: BLE001 - NVMLError or a missing libnvidia-ml
        return f"NVML did not start: {_nvml_text(e)}"
    counter = None
    try:
        handle = _handle(nvml, ident)
        if handle is None:
            return (f"no NVML device matches torch's {device} (uuid {uuid or '?'}, pci "
                    f"{ident.pci or '?'})")
        if _mig_enabled(nvml, handle):  # torch's UUID of a MIG slice does not say so
            return MIG
        opened = NvmlCounter(nvml, handle, f"nvml {_text(nvml, 'nvmlDeviceGetName', handle)}"
                             f" {uuid}".strip())
        opened.read_mj()  # a driver or board without the counter says so here
        counter = opened  # only now is NVML's init the counter's to undo
        return counter
    except Exception as e:  # noqa: BLE001 - NVMLError_NotSupported and kin
        not_supported = getattr(nvml, "NVML_ERROR_NOT_SUPPORTED", 3)
        if getattr(e, "value", None) == not_supported:
            return "NVML's total-energy counter is not supported on this GPU or driver"
        return f"NVML's energy counter failed: {_nvml_text(e)}"
    finally:
        if counter is None:
            try:
                nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001
                pass


def _handle(nvml: Any, ident: GpuIdentity) -> Any:
    uuid, pci = ident.uuid, ident.pci
    if uuid:
        full = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
        try:
            return nvml.nvmlDeviceGetHandleByUUID(full)
        except Exception:  # noqa: BLE001 - try the bus id
            pass
    if pci:
        by_pci = getattr(nvml, "nvmlDeviceGetHandleByPciBusId_v2", None) or getattr(
            nvml, "nvmlDeviceGetHandleByPciBusId", None)
        if by_pci is not None:
            try:
                return by_pci(pci)
            except Exception:  # noqa: BLE001
                pass
    # Index order is NVML's (PCI), not torch's: it names the same GPU only when one GPU
    # is visible to both, so use it only then.
    if ident.visible is None and nvml.nvmlDeviceGetCount() == 1:
        return nvml.nvmlDeviceGetHandleByIndex(0)
    return None


def _mig_enabled(nvml: Any, handle: Any) -> bool:
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(handle)
    except Exception:  # noqa: BLE001 - no MIG on this GPU or binding
        return False
    return current == getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1)


def _text(nvml: Any, fn: str, *args) -> str:
    try:
        v = getattr(nvml, fn)(*args)
    except Exception:  # noqa: BLE001 - a name is decoration
        return ""
    return v.decode() if isinstance(v, bytes) else str(v)


def _nvml_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:300]
