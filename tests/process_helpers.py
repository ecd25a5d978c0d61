"""Child processes for the tests (DDP runs, servers): start them, and always end them.

A test that runs this repository's code in another process (a file run as a script,
whose ``ddp_spawn`` workers import it by name, or a TensorBoard server) starts it in a
new session, so that whatever it spawns shares its process group and can be ended with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop(proc: subprocess.Popen) -> None:
    """Terminate, wait, kill: then end whatever it left in its own process group."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # the group started with proc (start_new_session)


def run_script(script: str | Path, *args: object, timeout: float, ddp: bool = False):
    """Run ``python script args...`` with this repository importable; end it by ``timeout``.

    ``ddp=True`` also sets ``MASTER_ADDR``/``MASTER_PORT`` (a free port) for
    ``torch.distributed``. Returns the exit status (None if it had to be killed) and the
    last 4000 characters of its output.
    """
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    if ddp:
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    proc = subprocess.Popen(
        [sys.executable, str(script), *(str(a) for a in args)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        output, code = b"(timed out)", None
    finally:
        stop(proc)
    return code, output.decode(errors="replace")[-4000:]


def spawn_ranks(rank_fn, out: str, world: int, timeout: float) -> None:
    """Run ``rank_fn(rank, port, out)`` in ``world`` spawned processes; kill them by ``timeout``.

    The body of a DDP test script run as ``__main__`` (see :func:`rank_results`).
    """
    import time

    import torch

    context = torch.multiprocessing.start_processes(
        rank_fn, args=(free_port(), out), nprocs=world, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + timeout - 10
    while not context.join(timeout=1):
        if time.monotonic() > deadline:
            for process in context.processes:
                if process.is_alive():
                    process.kill()
            raise TimeoutError("the distributed ranks did not finish in time")


def rank_results(script: str | Path, out: Path, world: int, timeout: float) -> list:
    """Run a DDP test script (``script out``) and load the ``rank{r}.pt`` files it saves."""
    import pytest
    import torch

    code, text = run_script(script, out, timeout=timeout)
    files = [out / f"rank{r}.pt" for r in range(world)]
    if code != 0 or not all(f.exists() for f in files):
        pytest.fail(f"distributed run failed:\n{text}")
    return [torch.load(f) for f in files]
