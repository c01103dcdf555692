"""Where a sweep's cells run: one after another in this process, or as Ray tasks (a local cluster
started for the sweep, or one named by address). Kept apart from the sweep's bookkeeping so another
executor is one function here."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from symalign.errors import SymalignError
from symalign.workspace import home as workspace_home

EXECUTORS = ("auto", "ray", "serial")
# A cell's work: (payload, run-store path, data folder for a worker, torch threads) -> its result row.
CellTask = Callable[..., dict]


def run_cells(cell: CellTask, payloads: list[dict], store_path: str | None, executor: str,
              address: str | None = None, gpus_per_cell: float | None = None) -> Iterator[tuple[int, dict]]:
    """(index, result) for every payload as it finishes, on the executor `pick_executor` chose.
    `gpus_per_cell` (Ray): GPUs each cell asks for; None: one where the cluster has GPUs, else none.
    Nothing to run (a sweep resumed with every cell in the history) starts no Ray cluster: seconds for nothing."""
    if executor == "ray" and payloads:
        return _on_ray(cell, payloads, store_path, address, gpus_per_cell)
    return _serial(cell, payloads, store_path)


def cell_gpus(gpus_per_cell: float | None, cluster_gpus: float) -> float:
    """GPUs a cell asks Ray for: one per cell where the cluster has any (a 4-GPU node runs four cells
    at once, each on its own device), none on a CPU cluster; a request the cluster cannot meet is
    refused in one line (its cells would wait forever)."""
    if gpus_per_cell is None:
        return 1.0 if cluster_gpus >= 1 else 0.0
    if gpus_per_cell < 0:
        raise SymalignError(f"--gpus-per-cell must be at least 0; got {gpus_per_cell:g}")
    if gpus_per_cell > cluster_gpus:
        raise SymalignError(f"--gpus-per-cell {gpus_per_cell:g}: the Ray cluster has {cluster_gpus:g} GPU(s), so no "
                            "cell could start")
    return float(gpus_per_cell)


def assigned_gpus() -> str:
    """The GPUs Ray gave the cell running here ("" outside Ray, or without a GPU): the sweep's `gpus` column."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return ""
    return ",".join(str(i) for i in ray.get_gpu_ids())


def check_address(address: str) -> None:
    """One line, quickly, when no Ray cluster answers at ADDRESS (ray.init would wait and print pages)."""
    if address in ("auto", "local"):
        return
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise SymalignError(f"--address {address}: give HOST:PORT of a Ray cluster's head (e.g. 10.0.0.5:6379)")
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            pass
    except OSError as exc:
        raise SymalignError(f"--address {address}: no Ray cluster answers there ({exc.strerror or exc})") from None


@contextmanager
def _stderr_silenced() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null for a while (C++ libraries write there directly)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def pick_executor(executor: str) -> str:
    if executor not in EXECUTORS:
        raise SymalignError(f"unknown executor {executor!r}; choose from {', '.join(EXECUTORS)}")
    try:
        import ray  # noqa: F401
    except ImportError:
        if executor == "ray":
            raise SymalignError('the ray executor needs Ray: pip install -e ".[ray]" (or use --executor serial)') \
                from None
        return "serial"
    return "ray" if executor == "auto" else executor


def _serial(cell: CellTask, payloads: list[dict], store_path: str | None) -> Iterator[tuple[int, dict]]:
    """Cells one after another in this process (its own data folder and thread count)."""
    for i, payload in enumerate(payloads):
        yield i, cell(payload, store_path, None)


def _on_ray(cell: CellTask, payloads: list[dict], store_path: str | None,
            address: str | None, gpus_per_cell: float | None) -> Iterator[tuple[int, dict]]:
    """Cells as Ray tasks (one CPU and one torch thread each, so tasks do not oversubscribe cores;
    one GPU each on a cluster with GPUs: Ray sets CUDA_VISIBLE_DEVICES, and the cell's `auto` device
    is that GPU), yielded as they finish. A local cluster is started for the sweep unless one is
    running or named."""
    import ray

    started = False
    if not ray.is_initialized():
        try:
            with _stderr_silenced():  # Ray's core prints a line a second while it retries an address
                ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        except Exception as exc:
            where = f"join the Ray cluster at {address}" if address else "start a local Ray cluster"
            raise SymalignError(f"could not {where} ({' '.join(str(exc).split())[:200]})") from None
        started = True
    try:
        gpus = cell_gpus(gpus_per_cell, ray.cluster_resources().get("GPU", 0.0))
        task = ray.remote(num_cpus=1, num_gpus=gpus)(cell)
        home = str(workspace_home())
        pending = {task.remote(p, store_path, home, 1): i for i, p in enumerate(payloads)}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            i = pending.pop(done[0])
            yield i, ray.get(done[0])
    finally:
        if started:
            ray.shutdown()
