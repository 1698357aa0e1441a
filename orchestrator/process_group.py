"""The torch.distributed set-up of a trial's Ray Train workers, without torch in Ray Train's
controller.

Ray's `TorchConfig` sets up the process group a trial needs (gloo on CPUs, NCCL on GPUs, an
env:// rendezvous at worker 0's address; DeepSpeed then joins it). Its module imports torch at
the top, and Ray Train V2 unpickles the backend config in each run's controller, a process that
never holds a tensor: about 2 CPU s per trial (`python -c "import ray.train.torch"` against
`import ray.train`: 4.2 against 2.2 CPU s on the project machine), paid while the trial's other
processes start on the same cores (bench/README.md, "Start-up").

`ProcessGroupConfig` is the same set-up, split where torch is needed. The controller's half
(which rank holds the rendezvous, which backend, the shutdown's timeout) uses only Ray's
torch-free API; everything that touches torch runs in the workers, through Ray's own functions
in `ray.train.torch.config`, imported there (each worker imports torch anyway). Ray's TPU
set-up is not carried over: numsweep trains on CPUs and GPUs.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

import ray
from ray._private import ray_constants
from ray.exceptions import GetTimeoutError
from ray.train._internal.utils import get_address_and_port
from ray.train.backend import Backend, BackendConfig
from ray.train.constants import (
    DEFAULT_TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S,
    TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S,
)
from ray.train.v2._internal.util import TrainingFramework

logger = logging.getLogger(__name__)


def _torch_config_call(name: str, **kwargs: Any) -> Any:
    """In a worker: call `ray.train.torch.config.<name>(**kwargs)`."""
    from ray.train.torch import config

    return getattr(config, name)(**kwargs)


def _set_rendezvous(addr: str, port: int) -> None:
    """In a worker: where `init_process_group(init_method="env://")` meets the other ranks."""
    os.environ["MASTER_ADDR"] = addr
    os.environ["MASTER_PORT"] = str(port)


class _DefaultCudaDevice:
    """Around the train function in each worker: Ray's `TorchConfig` context (on a GPU worker,
    its CUDA device becomes the default one)."""

    def __enter__(self) -> None:
        from ray.train.torch.config import TorchConfigContextManager

        TorchConfigContextManager().__enter__()

    def __exit__(self, *exc: object) -> bool:
        return False


class _ProcessGroupBackend(Backend):
    """`ray.train.torch.config._TorchBackend` for CPU and GPU workers, run from the controller."""

    share_cuda_visible_devices: bool = True

    def on_start(self, worker_group: Any, backend_config: ProcessGroupConfig) -> None:
        addr, port = worker_group.execute_single(0, get_address_and_port)
        worker_group.execute(_set_rendezvous, addr=addr, port=port)
        # LOCAL_RANK, RANK, WORLD_SIZE, ... before init_process_group, as torchrun sets them.
        worker_group.execute(_torch_config_call, "_set_torch_distributed_env_vars")
        setups = [
            worker_group.execute_single_async(
                rank,
                _torch_config_call,
                "_setup_torch_process_group",
                backend=backend_config.backend,
                world_rank=rank,
                world_size=len(worker_group),
                init_method="env://",
                timeout_s=backend_config.timeout_s,
            )
            for rank in range(len(worker_group))
        ]
        ray.get(setups)

    def on_shutdown(self, worker_group: Any, backend_config: ProcessGroupConfig) -> None:
        shutdowns = worker_group.execute_async(
            _torch_config_call, "_shutdown_torch", destroy_process_group=len(worker_group) > 1
        )
        timeout_s = ray_constants.env_integer(
            TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S, DEFAULT_TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S
        )
        try:
            ray.get(shutdowns, timeout=timeout_s)
        except GetTimeoutError:
            logger.warning("torch process group shutdown timed out after %s seconds", timeout_s)


@dataclass
class ProcessGroupConfig(BackendConfig):
    """Ray Train's backend config for a trial: torch.distributed over `backend`."""

    backend: str = "gloo"
    """torch.distributed's backend: "gloo" (CPU workers) or "nccl" (GPU workers)."""
    timeout_s: int = 1800
    """Seconds a process-group operation may take before it fails (Ray's default)."""

    @property
    def backend_cls(self) -> type[Backend]:
        return _ProcessGroupBackend

    @property
    def train_func_context(self) -> type[_DefaultCudaDevice]:
        return _DefaultCudaDevice

    @property
    def framework(self) -> TrainingFramework:
        return TrainingFramework.TORCH
