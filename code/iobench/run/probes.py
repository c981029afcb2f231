"""The kernel's TCP counters around a measured window: what every kind's rows report of the network stack."""
from __future__ import annotations

from iobench.run import sampler
from iobench.run.runner import Probe


class TcpProbe(Probe):
    """TCP counters (listen overflows, resets), before and after: this namespace's, and behind
    a link the server's namespace's too (its accept queue overflows there), summed."""

    def __init__(self, netns: str | None = None):
        self.spaces = [None] + ([netns] if netns else [])

    def _read(self) -> dict:
        total: dict[str, int] = {}
        for ns in self.spaces:
            for k, v in sampler.tcp_counters(ns).items():
                total[k] = total.get(k, 0) + v
        return total

    def start(self) -> None:
        self.before = self._read()

    def stop(self) -> dict:
        return {k: v - self.before.get(k, 0) for k, v in self._read().items()}


def tcp_columns(tcp: dict) -> dict:
    """A TcpProbe's counts as a row's columns."""
    return {"listen_overflows": tcp.get("ListenOverflows"), "listen_drops": tcp.get("ListenDrops"),
            "tcp_retrans_segs": tcp.get("RetransSegs"), "tcp_out_rsts": tcp.get("OutRsts"),
            "tcp_abort_on_close": tcp.get("TCPAbortOnClose")}
