"""What the CPU sweep tests hand run_sweep: the tiny MLP they sweep, and a sink that records
each call it gets, in order (runner.ops.sinks.MemorySink keeps the run, not the calls)."""

from __future__ import annotations

TINY = {"depth": "2", "width": "16"}


class ListSink:
    def __init__(self):
        self.env = self.run = self.status = None
        self.kept: list = []  # the sweep's own Measurements (a later pass adds rounds)
        self.calls: list[str] = []

    def start(self, environment, run):
        self.env, self.run = environment, run
        self.calls.append("start")

    def point(self, measurement):
        self.kept.append(measurement)
        self.calls.append("point")

    def finish(self, status):
        self.status = status
        self.calls.append("finish")

    @property
    def points(self) -> list[dict]:  # the stored form, as a bundle holds it
        return [m.to_json() for m in self.kept]
