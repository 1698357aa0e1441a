"""What the sweep's driver imports: its checks before launch (`orchestrator.sweep.preflight`) and
the Tune driver read presets and tokenizers but never build a model or an engine, so neither the
driver nor each trial's Tune actor (which imports `orchestrator.run.driver`) pays for transformers'
modelling code, torch's compiler, DeepSpeed or MLflow (2-4 s of CPU each on the project
machine). A trial's Ray Train worker imports those itself."""

from __future__ import annotations

import subprocess
import sys

from tests.sweep_runs import ROOT

# LlamaConfig too: its module pulls in transformers' activations and DTensor (0.5 s).
HEAVY = (
    "transformers.modeling_utils",
    "transformers.models.llama",
    "torch._dynamo",
    "torch.distributed.tensor",
    "deepspeed",
    "mlflow",
)


def test_the_driver_checks_a_sweep_without_the_training_stack() -> None:
    code = (
        "import sys\n"
        "import orchestrator.cli, orchestrator.run.driver\n"
        "from orchestrator.sweep.sweep_file import load_sweep\n"
        "from orchestrator.sweep.preflight import preflight\n"
        "checks = preflight(load_sweep('orchestrator/configs/demo.yaml', []))\n"
        "assert checks['digit tokens'] == 'yes', checks\n"
        f"print(sorted(m for m in sys.modules if m.startswith({HEAVY!r})))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == "[]"
