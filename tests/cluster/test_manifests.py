"""The cluster manifests, checked without a cluster: they parse, Ray's and DeepSpeed's own
validators accept them, they name shipped files that load, they pin the Ray version pyproject.toml
pins, and the runtime environment ships the code and only the code."""

from __future__ import annotations

import copy
import importlib.metadata
import json
import re
import shlex
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from orchestrator.sweep.sweep_file import load_sweep
from tests.cluster.cluster_fixtures import CLUSTER, ROOT
from trainables.config import TrainConfig
from trainables.worker.deepspeed_config import deepspeed_config

IMAGE_HOME = "/home/ray/numsweep"  # the project's place in cluster/Dockerfile's image
SHARED = "/mnt/shared"


def run_time_dependencies() -> list[str]:
    """pyproject's base dependencies and its `sweep` extra: what a node runs sweeps with."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["sweep"]]


def pinned_ray_version() -> str:
    deps = run_time_dependencies()
    (ray,) = [Requirement(d) for d in deps if Requirement(d).name == "ray"]
    (spec,) = ray.specifier
    assert spec.operator == "==", ray
    return spec.version


def project_dependencies() -> dict[str, Requirement]:
    deps = run_time_dependencies()
    return {Requirement(d).name.lower().replace("_", "-"): Requirement(d) for d in deps}


def image_path(path: str) -> Path:
    """A path inside cluster/Dockerfile's image, as the file of this checkout it was copied from."""
    assert path.startswith(f"{IMAGE_HOME}/"), path
    return ROOT / path.removeprefix(f"{IMAGE_HOME}/")


# ---- runtime environment -----------------------------------------------------------------------


def test_runtime_env_ships_code_not_history_environments_or_results(tmp_path):
    env = yaml.safe_load((CLUSTER / "runtime_env.yaml").read_text())
    assert env["working_dir"] == "."
    for excluded in (".git", ".venv", "results", "checkpoints", ".cache", "__pycache__"):
        assert excluded in env["excludes"], excluded
    from ray._private.runtime_env.packaging import create_package

    # The package `ray job submit` uploads from this checkout, made by Ray's own packaging.
    package = tmp_path / "working_dir.zip"
    create_package(str(ROOT), package, include_gitignore=True, excludes=env["excludes"])
    with zipfile.ZipFile(package) as archive:
        shipped = {info.filename: info.file_size for info in archive.infolist()}
    for needed in (
        "orchestrator/cli.py",
        "trainables/worker/loop.py",
        "analysis/__main__.py",
        "orchestrator/configs/demo.yaml",
        "cluster/del_7b.yaml",
        "pyproject.toml",
    ):
        assert needed in shipped, needed
    for path in shipped:
        assert not path.startswith((".git/", ".venv/", "results/", "bench/out/")), path
        assert "__pycache__" not in path and not path.endswith(".pyc"), path
    assert sum(shipped.values()) < 20 * 2**20, f"working_dir is {sum(shipped.values())} bytes"


def test_runtime_env_pip_packages_are_the_project_dependencies_the_image_lacks():
    env = yaml.safe_load((CLUSTER / "runtime_env.yaml").read_text())
    listed = {
        Requirement(p).name.lower().replace("_", "-"): Requirement(p)
        for p in env["pip"]["packages"]
    }
    deps = project_dependencies()
    image_provides = {"torch", "ray", "deepspeed"}
    assert set(listed) == set(deps) - image_provides
    for name, requirement in listed.items():
        assert requirement.specifier == deps[name].specifier, name
        # Satisfied by what is installed here, so a job on nodes with this environment installs
        # nothing (pip keeps installed versions that satisfy a requirement).
        installed = importlib.metadata.version(name)
        assert requirement.specifier.contains(installed, prereleases=True), (name, installed)


# ---- DeepSpeed ZeRO-3 --------------------------------------------------------------------------


def zero3() -> dict:
    return json.loads((CLUSTER / "deepspeed_zero3.json").read_text())


def test_zero3_config_partitions_parameters_and_gathers_them_to_save():
    zero = zero3()["zero_optimization"]
    assert zero["stage"] == 3
    # A whole model can be written from the shards (16-bit weights gathered on save).
    assert zero["stage3_gather_16bit_weights_on_model_save"] is True
    # Nothing that numsweep derives from the trial config (batch sizes, schedule) is set here.
    assert not {
        "train_batch_size",
        "train_micro_batch_size_per_gpu",
        "gradient_accumulation_steps",
        "scheduler",
    } & set(zero3())


def test_zero3_config_is_accepted_by_deepspeed_through_the_trial_config():
    from deepspeed.runtime.config import DeepSpeedConfig

    train = TrainConfig(
        zero_stage=3, precision="bf16", micro_batch_size=4, deepspeed_config=zero3()
    )
    # One rank: DeepSpeed checks the batch arithmetic against the process group it runs in.
    parsed = DeepSpeedConfig(deepspeed_config(train, world_size=1))
    assert parsed.zero_optimization_stage == 3
    assert parsed.zero_config.gather_16bit_weights_on_model_save
    assert parsed.zero_config.param_persistence_threshold == 100_000
    assert parsed.bfloat16_config.enabled
    # Eight ranks: the global batch numsweep derives for DeepSpeed.
    assert deepspeed_config(train, world_size=8)["train_batch_size"] == 4 * 1 * 8
    # Weights partitioned at load time: while the worker holds this config as an
    # HfDeepSpeedConfig, transformers' from_pretrained loads under deepspeed.zero.Init.
    from transformers.integrations import HfDeepSpeedConfig, is_deepspeed_zero3_enabled

    live = HfDeepSpeedConfig(deepspeed_config(train, world_size=8))
    assert live.is_zero3() and is_deepspeed_zero3_enabled()
    del live
    assert not is_deepspeed_zero3_enabled()


# ---- the 7B sweep ----------------------------------------------------------------------------


def test_7b_sweep_loads_and_uses_the_zero3_config_on_gpus():
    sweep = load_sweep(CLUSTER / "del_7b.yaml")
    train = sweep.trial.train
    assert train.zero_stage == 3 and train.precision == "bf16"
    assert train.deepspeed_config == zero3()  # the same settings as the standalone file
    assert train.checkpoint_every > 0  # failures resume from checkpoints
    r = sweep.resources
    assert r.gpus_per_worker == 1 and r.workers_per_trial == 8
    assert r.max_failures >= 1 and r.trial_max_failures >= 1
    assert r.placement_timeout_s >= 600  # an autoscaled GPU node takes minutes to come up
    assert sweep.trial.model.path.startswith(f"{SHARED}/")
    assert sweep.trial.data.path.startswith(f"{SHARED}/")
    assert sweep.trial.cache_dir.startswith(f"{SHARED}/")
    assert all(p.startswith(f"{SHARED}/") for p in sweep.trial.data.benchmarks.values())


def sweep_entrypoint(command: str) -> tuple[Path, list[str]]:
    """The sweep file (in this checkout) and arguments of a `python -m orchestrator sweep`."""
    words = shlex.split(command)
    assert words[:4] == ["python", "-m", "orchestrator", "sweep"], words
    config = words[4]
    path = image_path(config) if config.startswith("/") else ROOT / config
    return path, words[5:]


# ---- cluster launcher ------------------------------------------------------------------------


def launcher() -> dict:
    return yaml.safe_load((CLUSTER / "aws-gpu.yaml").read_text())


def test_launcher_yaml_passes_rays_own_validation():
    from ray.autoscaler._private.util import prepare_config, validate_config

    validate_config(prepare_config(copy.deepcopy(launcher())))
    broken = copy.deepcopy(launcher())
    broken["available_node_types"]["gpu_worker"]["min_workers"] = "two"
    with pytest.raises(Exception, match="two"):
        validate_config(prepare_config(broken))


def test_launcher_has_a_cpu_head_and_gpu_workers_on_the_pinned_ray():
    config = launcher()
    types = config["available_node_types"]
    assert config["head_node_type"] == "head"
    assert types["head"]["resources"] == {"CPU": 0}  # drivers only
    worker = types["gpu_worker"]
    assert worker["node_config"]["InstanceType"].startswith(("p4", "p5", "g5", "g6"))
    assert worker["max_workers"] >= 1
    assert config["docker"]["image"] == kuberay_image()
    dockerfile_from = dockerfile_base()
    assert dockerfile_from.startswith(f"rayproject/ray:{pinned_ray_version()}-")
    assert dockerfile_from.endswith("-gpu")


def test_launcher_keeps_token_auth_the_dashboard_on_loopback_and_shared_storage():
    config = launcher()
    head_start = " ".join(config["head_start_ray_commands"])
    assert "RAY_AUTH_MODE=token" in head_start
    assert "--dashboard-host=127.0.0.1" in head_start
    assert "--num-cpus=0" in head_start
    assert "RAY_AUTH_MODE=token" in " ".join(config["worker_start_ray_commands"])
    assert "~/.ray/auth_token" in config["file_mounts"]
    assert any(f"{SHARED}:{SHARED}" in o for o in config["docker"]["run_options"])
    assert any(SHARED in c for c in config["initialization_commands"])


def test_launcher_usage_submits_a_shipped_sweep_to_shared_storage():
    # The header's `ray job submit … -- python -m orchestrator sweep …` line.
    header = (CLUSTER / "aws-gpu.yaml").read_text().split("\ncluster_name:")[0]
    text = re.sub(r"\\\n#\s*", " ", header)
    (line,) = [ln for ln in text.splitlines() if "ray job submit" in ln]
    assert "--runtime-env cluster/runtime_env.yaml" in line
    config, args = sweep_entrypoint(line.split(" -- ", 1)[1])
    load_sweep(config)
    assert args[args.index("--results") + 1].startswith(f"{SHARED}/")


# ---- KubeRay ---------------------------------------------------------------------------------


def kuberay() -> dict[str, dict]:
    documents = yaml.safe_load_all((CLUSTER / "kuberay-rayjob.yaml").read_text())
    return {d["kind"]: d for d in documents}


def kuberay_image() -> str:
    images = set()
    spec = kuberay()["RayJob"]["spec"]["rayClusterSpec"]
    for group in [spec["headGroupSpec"], *spec["workerGroupSpecs"]]:
        images |= {c["image"] for c in group["template"]["spec"]["containers"]}
    (image,) = images  # one image everywhere
    return image


def dockerfile_base() -> str:
    (line,) = [
        ln for ln in (CLUSTER / "Dockerfile").read_text().splitlines() if ln.startswith("FROM ")
    ]
    return line.split()[1]


def test_rayjob_runs_a_shipped_sweep_on_the_pinned_ray():
    job = kuberay()["RayJob"]
    assert job["apiVersion"] == "ray.io/v1"
    spec = job["spec"]
    assert spec["rayClusterSpec"]["rayVersion"] == pinned_ray_version()
    config, args = sweep_entrypoint(spec["entrypoint"])
    assert config.is_file(), config
    load_sweep(config)
    assert args[args.index("--results") + 1].startswith(f"{SHARED}/")
    # The image holds the project where the entrypoint looks for it.
    dockerfile = (CLUSTER / "Dockerfile").read_text()
    assert f"WORKDIR {IMAGE_HOME}" in dockerfile
    assert "COPY --chown=ray:users cluster cluster" in dockerfile


def test_rayjob_has_a_cpu_head_gpu_workers_shared_volume_and_token_auth():
    documents = kuberay()
    cluster = documents["RayJob"]["spec"]["rayClusterSpec"]
    assert cluster["authOptions"] == {"mode": "token"}
    head = cluster["headGroupSpec"]
    assert head["rayStartParams"]["num-cpus"] == "0"
    (workers,) = cluster["workerGroupSpecs"]
    (container,) = workers["template"]["spec"]["containers"]
    gpus = int(container["resources"]["limits"]["nvidia.com/gpu"])
    sweep = load_sweep(CLUSTER / "del_7b.yaml")
    # A worker pod holds at least one whole trial.
    assert gpus >= sweep.resources.workers_per_trial * sweep.resources.gpus_per_worker
    cpus = int(container["resources"]["limits"]["cpu"])
    assert cpus >= sweep.resources.workers_per_trial * sweep.resources.cpus_per_worker
    claim = documents["PersistentVolumeClaim"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    for group in (head, workers):
        pod = group["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        shared = [
            m for c in pod["containers"] for m in c["volumeMounts"] if m["mountPath"] == SHARED
        ]
        assert shared, group
        (mount,) = shared
        source = volumes[mount["name"]]["persistentVolumeClaim"]["claimName"]
        assert source == claim["metadata"]["name"]


def test_the_image_copies_every_package_the_install_names():
    """`pip install .` in the image installs the packages pyproject's packages.find includes; a
    package not copied in is silently missing there (records/ and compat/ were: every import of
    numsweep on a cluster node failed). Each included package's folder has its COPY line."""
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    packages = [pattern.rstrip("*") for pattern in find["find"]["include"]]
    dockerfile = (CLUSTER / "Dockerfile").read_text()
    missing = [p for p in packages if f"COPY --chown=ray:users {p} {p}" not in dockerfile]
    assert packages and not missing, f"cluster/Dockerfile copies no {missing}"
