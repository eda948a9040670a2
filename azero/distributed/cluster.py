"""Ray, imported only when asked for, and the instance a run uses: a local one or a cluster.

    ray = require_ray()                  # one clear error naming the install command without Ray
    connect(address=None)                # a local instance with this machine's cores
    connect(address="auto")              # the cluster this machine joined (`ray start ...`)
    connect(address="10.0.0.5:6379")     # a cluster's head node
"""

from __future__ import annotations

import logging
import os
import socket

from games.options import is_whole_number

from ..errors import UserError

INSTALL = "pip install -e '.[ray]'"


def require_ray(asked: str = "--ray"):
    """The ray module, or a UserError that says how to install it (`asked`: what the user asked
    for that needs it)."""
    try:
        import ray
    except ImportError as error:
        raise UserError(f"{asked} needs Ray, which is not installed ({error}); install it with: {INSTALL} "
                        "(or pip install 'ray>=2.9')") from None
    return ray


def connect(address: str | None = None, *, num_cpus: int | None = None, worker_niceness: int = 0):
    """Start a local Ray instance (address None) or join a cluster; returns the ray module.

    A local instance's actors run at `worker_niceness` (Ray's own default is 15, below every
    other program: on a shared machine the actors, which do most of a run's work, would get
    almost nothing); a cluster's nodes keep the niceness they were started with.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    if address is None:
        os.environ["RAY_worker_niceness"] = str(worker_niceness)  # read by the raylet ray.init starts
    elif address != "auto":
        check_reachable(address)
    # A local instance's workers inherit this process's environment (PYTHONPATH included); a
    # cluster's nodes run the azero installed on them.
    options = dict(include_dashboard=False, logging_level=logging.WARNING, log_to_driver=True)
    try:
        if address is None:
            ray.init(num_cpus=num_cpus, **options)
        else:
            ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as error:
        where = "start a local Ray instance" if address is None else f"join the Ray cluster at {address}"
        hint = "" if address is None else " (is `ray start --head` running there, and is the address right?)"
        raise UserError(f"could not {where}: {str(error).strip().splitlines()[0][:200]}{hint}") from None
    return ray


def check_reachable(address: str, timeout: float = 10.0) -> None:
    """A UserError unless HOST:PORT accepts connections (Ray itself would retry for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not is_whole_number(port) or not 0 < int(port) < 65536:
        raise UserError(f"--ray-address {address!r}: write auto or HOST:PORT (a port from 1 to 65535), "
                        "e.g. 10.0.0.5:6379")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as error:
        raise UserError(f"could not join the Ray cluster at {address}: {error.strerror or error} (is `ray start "
                        "--head` running there, and is the address right?)") from None


def cluster_cpus(ray) -> float:
    return float(ray.cluster_resources().get("CPU", 0.0))


def cluster_gpus(ray) -> float:
    return float(ray.cluster_resources().get("GPU", 0.0))


def disconnect() -> None:
    try:
        import ray
    except ImportError:
        return
    if ray.is_initialized():
        ray.shutdown()
