"""Where a sweep's results go: the database, a bundle file, or both at once.

A sink is anything with start(environment, run), point(measurement), finish(status) (a
measurement: contract/measurement.py's typed Measurement, JSON only here); the
sweep calls them in that order (runner/core/sweep.py). With `--processes K` it also calls
update(measurement) when a later pass has added its rounds to a point already handed
over: the same (mode, batch_size), replaced. Standard library only at import: the
database layer is imported by DbSink's caller, which hands it an engine, so a GPU host
without SQLAlchemy can still write a bundle.
"""

from __future__ import annotations

import copy
import os
import threading
from typing import Any

from contract import bundle as fmt
from contract.measurement import Measurement
from contract.run_record import Environment, Run


class MemorySink:
    """Keeps the whole run in memory: what the bundle is made of and the summary table read."""

    def __init__(self) -> None:
        self.environment: Environment | None = None
        self.run: Run | None = None
        self.measurements: list[Measurement] = []
        self.status: str | None = None

    def start(self, environment: Environment, run: Run) -> None:
        self.environment, self.run = environment, run  # frozen: nothing to copy

    def point(self, measurement: Measurement) -> None:
        self.measurements.append(copy.deepcopy(measurement))

    def update(self, measurement: Measurement) -> None:
        key = (measurement.mode, measurement.batch_size)
        for i, m in enumerate(self.measurements):
            if (m.mode, m.batch_size) == key:
                self.measurements[i] = copy.deepcopy(measurement)
                return
        self.point(measurement)

    def finish(self, status: str) -> None:
        self.status = status
        if self.run is not None:
            self.run = self.run.finished(status, fmt.now_iso())

    @property
    def started(self) -> bool:
        return self.run is not None

    def bundle(self) -> fmt.BundleDoc:
        if self.run is None:
            raise RuntimeError("no run was started")
        return fmt.make_bundle((self.environment or Environment()).to_json(),
                               self.run.to_json(), self.measurements)


class BundleSink(MemorySink):
    """Writes the bundle once, atomically, when the run finishes, whatever its status:
    a cancelled or failed run keeps the points that finished."""

    def __init__(self, path: str | os.PathLike) -> None:
        super().__init__()
        self.path = fmt.check_writable(path, stdout=True)  # -: stdout, kept for it
        self.written = False

    def finish(self, status: str) -> None:
        super().finish(status)
        if self.run is not None:
            fmt.write(self.path, self.bundle())
            self.written = True


class DbSink:
    """Stores the run header at start and each point as soon as it finishes, so a crash
    loses only the point in flight. While the run is open a background thread heartbeats
    it every `heartbeat_s`, so a long point (a compile) does not read as lost and a
    killed process (SIGKILL: no clean-up runs) does, once LOST_AFTER_S has passed."""

    def __init__(self, engine: Any, heartbeat_s: float | None = None) -> None:
        from contract.limits import HEARTBEAT_S

        self.engine = engine
        self.run_id: int | None = None
        self.heartbeat_s = HEARTBEAT_S if heartbeat_s is None else heartbeat_s
        self._stop = threading.Event()
        self._beats: threading.Thread | None = None

    def start(self, environment: Environment, run: Run) -> None:
        from db import store  # here, not at import: db needs SQLAlchemy

        self.run_id = store.start_run(self.engine, environment, run)
        self._beats = threading.Thread(target=self._beat, args=(self.run_id,), daemon=True,
                                       name="launchbench-run-heartbeat")
        self._beats.start()

    def _beat(self, run_id: int) -> None:
        from db import store

        while not self._stop.wait(self.heartbeat_s):
            try:
                if not store.heartbeat_run(self.engine, run_id):
                    return  # finished, or reaped as lost: nothing left to keep alive
            except Exception:  # noqa: BLE001 - a database hiccup: the next beat retries
                continue

    def point(self, measurement: Measurement) -> None:
        from db import store

        if self.run_id is None:
            raise RuntimeError("point() before start()")
        store.add_measurement(self.engine, self.run_id, measurement)

    def update(self, measurement: Measurement) -> None:
        from db import store

        if self.run_id is None:
            raise RuntimeError("update() before start()")
        store.replace_measurement(self.engine, self.run_id, measurement)

    def finish(self, status: str) -> None:
        from db import store

        if self.run_id is not None:
            store.finish_run(self.engine, self.run_id, status)
        self.close()  # not on failure: a caller retrying the write still beats

    def close(self) -> None:
        """Stop heartbeating (the run is finished, or its writer gives up on it)."""
        self._stop.set()


class Tee:
    """Hands every call to each sink. One sink failing does not starve the others (a
    database hiccup must not lose the bundle); the first error is raised afterwards."""

    def __init__(self, *sinks: Any) -> None:
        self.sinks = sinks

    def _each(self, method: str, *args: Any) -> None:
        first: BaseException | None = None
        for sink in self.sinks:
            try:
                getattr(sink, method)(*args)
            except Exception as e:  # noqa: BLE001 - re-raised below, after the others ran
                first = first or e
        if first is not None:
            raise first

    def start(self, environment: Environment, run: Run) -> None:
        self._each("start", environment, run)

    def point(self, measurement: Measurement) -> None:
        self._each("point", measurement)

    def update(self, measurement: Measurement) -> None:
        self._each("update", measurement)

    def finish(self, status: str) -> None:
        self._each("finish", status)
