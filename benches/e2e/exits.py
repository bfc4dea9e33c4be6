"""Where a run's CPU goes, process by process: the kernel's task statistics of every process
that ends while recording.

``python -m benches.e2e.exits record FILE`` (root: registering for every CPU's exits needs
CAP_NET_ADMIN) writes one line per ending thread until SIGTERM or SIGINT: its pid, its parent's,
its command name, its CPU time in nanoseconds (the scheduler's own sum, not sampled) and the
time it ended.  ``python -m benches.e2e.exits tree FILE [--below COMMAND]`` adds the CPU up by
ancestry: each process is named by its command and those of its first three ancestors
(``python < python < python < sshd`` is a child of a runner started by a keeper that sshd
started), and ``--below sshd`` keeps what has an ``sshd`` among its ancestors: the hosts' side
of a run over a local sshd.

A process that is still running when recording stops is not in the file: record around a
whole run, and end the run's long-lived processes (runners, sshd) before stopping.
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import socket
import struct
import sys
import time

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
TASKSTATS_CMD_GET = 1
TASKSTATS_CMD_ATTR_REGISTER_CPUMASK = 3
TASKSTATS_TYPE_STATS = 3
TASKSTATS_TYPE_AGGR_PID = 4
# Offsets in struct taskstats (linux/taskstats.h, version 8 and later on 64-bit).
_RUN_NS = 72  # cpu_run_virtual_total: the scheduler's sum_exec_runtime
_COMM = slice(80, 112)
_PIDS = 120  # ac_uid, ac_gid, ac_pid, ac_ppid


def _attribute(kind: int, data: bytes) -> bytes:
    length = 4 + len(data)
    return struct.pack("HH", length, kind) + data + b"\0" * (-length % 4)


def _message(family: int, command: int, attributes: bytes, sequence: int) -> bytes:
    payload = struct.pack("BBH", command, 1, 0) + attributes
    return struct.pack("IHHII", 16 + len(payload), family, 1 | 4, sequence, os.getpid()) + payload


def _attributes(data: bytes) -> dict[int, list[bytes]]:
    found: dict[int, list[bytes]] = {}
    at = 0
    while at + 4 <= len(data):
        length, kind = struct.unpack_from("HH", data, at)
        if length < 4:
            break
        found.setdefault(kind & 0x3FFF, []).append(data[at + 4:at + length])
        at += (length + 3) & ~3
    return found


def _family(sock: socket.socket) -> int:
    sock.send(_message(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, _attribute(CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0"), 1))
    reply = sock.recv(65536)
    return struct.unpack_from("H", _attributes(reply[20:])[CTRL_ATTR_FAMILY_ID][0])[0]


def records(data: bytes, family: int):
    """(pid, ppid, command, CPU ns) of each ending thread in one netlink datagram."""
    at = 0
    while at + 16 <= len(data):
        length, kind = struct.unpack_from("IH", data, at)
        if length < 16:
            break
        if kind == family:
            for nested in _attributes(data[at + 20:at + length]).get(TASKSTATS_TYPE_AGGR_PID, []):
                stats = _attributes(nested).get(TASKSTATS_TYPE_STATS, [None])[0]
                if stats is not None and len(stats) >= _PIDS + 16:
                    _uid, _gid, pid, ppid = struct.unpack_from("IIII", stats, _PIDS)
                    command = stats[_COMM].split(b"\0")[0].decode("utf-8", "replace")
                    yield pid, ppid, command, struct.unpack_from("Q", stats, _RUN_NS)[0]
        at += (length + 3) & ~3


def record(path: str, ready=None) -> None:
    """Write every ending thread's line to ``path`` until SIGTERM or SIGINT."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
    sock.bind((0, 0))
    family = _family(sock)
    cpus = f"0-{os.cpu_count() - 1}".encode() + b"\0"
    sock.send(_message(family, TASKSTATS_CMD_GET, _attribute(TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, cpus), 2))
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(True))
    sock.settimeout(0.2)
    with open(path, "w") as out:
        if ready is not None:
            ready()
        while True:
            if stopping:  # what has ended so far is queued: take it, then stop
                sock.setblocking(False)
            try:
                data = sock.recv(1 << 20)
            except BlockingIOError:
                break
            except (TimeoutError, socket.timeout, InterruptedError):
                continue
            now = time.time()
            for pid, ppid, command, run_ns in records(data, family):
                out.write(f"{pid}\t{ppid}\t{command}\t{run_ns}\t{now:.3f}\n")
            out.flush()


def read(path: str) -> list[tuple[int, int, str, int, float]]:
    rows = []
    with open(path) as handle:
        for line in handle:
            pid, ppid, command, run_ns, ended = line.rstrip("\n").split("\t")
            rows.append((int(pid), int(ppid), command, int(run_ns), float(ended)))
    return rows


def by_ancestry(rows, below: str | None = None, depth: int = 4) -> dict[str, tuple[int, int]]:
    """``command < parent's < ...`` (``depth`` names) -> (CPU ns, processes)."""
    parent = {pid: ppid for pid, ppid, _, _, _ in rows}
    command = {pid: name for pid, _, name, _, _ in rows}
    totals: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for pid, _, _, run_ns, _ in rows:
        names, seen, at = [], set(), pid
        while at in command and at not in seen:
            seen.add(at)
            names.append(command[at])
            at = parent[at]
        if below is not None and below not in names[1:]:
            continue
        key = " < ".join(names[:depth])
        totals[key][0] += run_ns
        totals[key][1] += 1
    return {key: (cpu, count) for key, (cpu, count) in totals.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benches.e2e.exits", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("record").add_argument("file")
    tree = sub.add_parser("tree")
    tree.add_argument("file")
    tree.add_argument("--below", default=None)
    tree.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    if args.what == "record":
        record(args.file, ready=lambda: print("recording", flush=True))
        return 0
    totals = by_ancestry(read(args.file), args.below)
    print(f"{sum(cpu for cpu, _ in totals.values()) / 1e9:9.2f} s  in all")
    for key, (cpu, count) in sorted(totals.items(), key=lambda item: -item[1][0])[: args.top]:
        print(f"{cpu / 1e9:9.2f} s  {count:6d} processes  {cpu / count / 1e6:8.2f} ms each  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
