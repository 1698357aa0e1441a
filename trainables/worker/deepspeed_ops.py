"""DeepSpeed's compiled CPU op: built once when the environment is set up, never silently later.

A CPU trial with DeepSpeed's AdamW (`train.optimizer: fused_adam`, the default) loads one of
DeepSpeed's C++ ops, ``fused_adam``; with torch's AdamW (`torch_adamw`, as the demo trains) it
loads none. (DeepSpeed's CPU accelerator would also load ``deepspeed_shm_comm``, shared-memory
collectives, in ``deepspeed.init_distributed``; a trial leaves it out, as it serves inference
only: `compat.deepspeed_private.init_distributed_without_shm_comm`.) Left to itself DeepSpeed
compiles an op just in time on first use: tens of seconds of a first trial, repeated in every
new environment because torch's JIT cache is keyed by the build flags, which hold the
environment's path. Even a cached JIT build costs each trial 2–3 s (a CPU probe in a subprocess,
a ninja check). `make ops` (run by `make test` and by the studies' targets; `make demo` needs no
op) therefore reinstalls DeepSpeed with the op compiled into the package (DeepSpeed's own
``DS_BUILD_<OP>=1`` pre-install: ``python -m trainables.worker.deepspeed_ops build``), and a trial
that finds an op it needs not prebuilt says so before DeepSpeed compiles it
(`announce_jit_builds`).

GPU machines build CUDA ops just in time as DeepSpeed does by default (the announcement still
names them); their JIT cache is kept per environment (`TORCH_EXTENSIONS_DIR` under the venv).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

# Op name -> DeepSpeed's build switch, for the ops a CPU trial loads.
CPU_OPS: dict[str, str] = {"fused_adam": "DS_BUILD_FUSED_ADAM"}
# Measured on the project machine (2-core Xeon, quiet, 2026-12-08): 66 s of wall time, 103 CPU
# s (75–100 s before, with the shared-memory op built beside it).
BUILD_SECONDS = "65 s"


def installed_ops() -> dict[str, bool]:
    """DeepSpeed's record of the ops compiled into the installed package."""
    from deepspeed.git_version_info import installed_ops as ops

    return dict(ops)


def missing_cpu_ops() -> list[str]:
    """The CPU ops a trial loads that the installed DeepSpeed does not carry prebuilt."""
    ops = installed_ops()
    return [name for name in CPU_OPS if not ops.get(name)]


def jit_cache_dir() -> Path:
    """Where torch keeps just-in-time builds for this environment (one per venv, so two
    environments never rebuild each other's ops)."""
    return Path(os.environ.get("TORCH_EXTENSIONS_DIR", Path(sys.prefix) / "torch_extensions"))


def trial_ops(*, offload_optimizer: bool, optimizer: str = "fused_adam") -> list[str]:
    """The compiled ops a trial's DeepSpeed engine loads: the AdamW step (on the CPU with ZeRO
    optimizer offload; none for torch's AdamW, `train.optimizer: torch_adamw`), on a CPU as on a
    GPU: the CPU accelerator's shared-memory op is left out
    (`compat.deepspeed_private.init_distributed_without_shm_comm`)."""
    if offload_optimizer:
        return ["cpu_adam"]
    return ["fused_adam"] if optimizer == "fused_adam" else []


def announce_jit_builds(ops: Sequence[str]) -> None:
    """Call before DeepSpeed loads `ops`: points torch's JIT cache at this environment's
    (`jit_cache_dir`), and for each op not prebuilt prints what happens and how long a first
    build takes."""
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(jit_cache_dir()))
    prebuilt = installed_ops()
    for name in ops:
        if prebuilt.get(name):
            continue
        cached = any(jit_cache_dir().glob(f"{name}/*.so"))  # torch's layout under the dir
        how = (
            "loading its cached JIT build"
            if cached
            else f"compiling it now (a first build takes about {BUILD_SECONDS} on 2 CPU cores)"
        )
        print(
            f"numsweep: DeepSpeed op {name} is not prebuilt; {how}. "
            "`python -m trainables.worker.deepspeed_ops build` (run by `make`) prebuilds it.",
            flush=True,
        )


def compiler_without_debug_info(folder: Path) -> str:
    """A C++ compiler for the build: a script in ``folder`` that runs the environment's (``CXX``,
    else ``c++``) with ``-g0`` after every other flag. DeepSpeed's CPU builders pass ``-g`` in
    their own flags, after any from the environment, and debug info for the ops' four C++ files
    (each parsing torch's headers) is a third of their compile time (one file: 30.6 s with it,
    20.8 s without, on the project machine); no one debugs these builds. Named ``g++`` so that
    torch's compiler check accepts it by name."""
    script = folder / "g++"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(os.environ.get("CXX", "c++"))} "$@" -g0\n')
    script.chmod(0o755)
    return str(script)


def build_command(compiler: str) -> tuple[list[str], dict[str, str]]:
    """The pip command (and environment) that reinstalls the installed DeepSpeed version with
    the CPU ops compiled in, by ``compiler``."""
    version = importlib.metadata.version("deepspeed")
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "DS_BUILD_OPS": "0", "DS_ENABLE_NINJA": "1"}
    env.update(dict.fromkeys(CPU_OPS.values(), "1"))
    env["CXX"] = compiler
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        # The build imports torch (to compile against it), so it must see the environment's.
        "--no-build-isolation",
        "--no-cache-dir",
        "--force-reinstall",
        "--no-deps",
        "--no-binary",
        "deepspeed",
        f"deepspeed=={version}",
    ]
    return command, env


def build() -> int:
    """Prebuild the CPU ops unless they are there already or torch is a CUDA build."""
    import torch

    if torch.version.cuda is not None or torch.version.hip is not None:
        print("numsweep: GPU torch: DeepSpeed builds its GPU ops just in time (not prebuilt)")
        return 0
    missing = missing_cpu_ops()
    if not missing:
        print(f"numsweep: DeepSpeed's CPU ops are prebuilt ({', '.join(CPU_OPS)})")
        return 0
    print(
        f"numsweep: building DeepSpeed's CPU ops {', '.join(missing)} into the installed "
        f"package, once (about {BUILD_SECONDS})",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as folder:
        command, env = build_command(compiler_without_debug_info(Path(folder)))
        done = subprocess.run(command, env=env, check=False)
    if done.returncode != 0:
        return done.returncode
    # A fresh interpreter: this one imported the previous DeepSpeed.
    check = subprocess.run(
        [sys.executable, "-m", "trainables.worker.deepspeed_ops", "check"], env=env, check=False
    )
    return check.returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainables.worker.deepspeed_ops")
    parser.add_argument("command", choices=["build", "check"])
    args = parser.parse_args(argv)
    if args.command == "build":
        return build()
    missing = missing_cpu_ops()
    if missing:
        print(f"DeepSpeed's CPU ops not prebuilt: {', '.join(missing)}", file=sys.stderr)
        return 1
    print(f"DeepSpeed's CPU ops are prebuilt: {', '.join(CPU_OPS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
