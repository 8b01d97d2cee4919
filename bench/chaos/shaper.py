"""A user-space netem for kernels built without ``sch_netem``: delay and loss on one direction
of a veth link.

``tc`` redirects every frame leaving the veth to a tap device (``clsact`` egress, ``u32`` match
all, ``mirred`` redirect); this process reads the frames from the tap, drops each with the loss
probability, holds the rest for the delay (in order, as netem does without jitter) and sends them
out of the veth through a packet socket that bypasses the qdisc, so they are not redirected again.

Run as ``python -m bench.chaos.shaper TAP VETH`` (inside the veth's namespace); one line on stdin,
``DELAY_MS LOSS_FRACTION``, changes the impairment; stdin closing ends it. Prints ``ready``.
"""

from __future__ import annotations

import contextlib
import fcntl
import heapq
import itertools
import os
import random
import select
import socket
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
SOL_PACKET = 263
PACKET_QDISC_BYPASS = 20


def open_tap(name: str) -> int:
    """Attach to the (already created) tap device ``name``; frames sent to it are read here."""
    descriptor = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(descriptor, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return descriptor


def open_output(device: str) -> socket.socket:
    """A raw packet socket on ``device`` that skips its qdisc (and the redirect on it)."""
    output = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    output.setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, 1)
    output.bind((device, 0))
    return output


def parse(line: str) -> tuple[float, float]:
    delay_ms, loss = line.split()
    return float(delay_ms) / 1000.0, float(loss)


def shape(tap: int, output: socket.socket, control: int) -> None:
    """Forward frames from ``tap`` to ``output`` with the current delay and loss."""
    delay_s, loss = 0.0, 0.0
    pending: list[tuple[float, int, bytes]] = []
    order = itertools.count()
    while True:
        timeout = max(0.0, pending[0][0] - time.monotonic()) if pending else None
        readable, _, _ = select.select([tap, control], [], [], timeout)
        if control in readable:
            line = os.read(control, 4096).decode()
            if not line:
                return
            delay_s, loss = parse(line.strip().splitlines()[-1])
        if tap in readable:
            frame = os.read(tap, 65536)
            if random.random() >= loss:
                heapq.heappush(pending, (time.monotonic() + delay_s, next(order), frame))
        now = time.monotonic()
        while pending and pending[0][0] <= now:
            with contextlib.suppress(OSError):  # a full device queue loses the frame, as a wire
                output.send(heapq.heappop(pending)[2])


def main() -> None:
    tap_name, device = sys.argv[1], sys.argv[2]
    tap = open_tap(tap_name)
    output = open_output(device)
    print("ready", flush=True)
    shape(tap, output, sys.stdin.fileno())


if __name__ == "__main__":
    main()
