#!/usr/bin/env bash
# numsweep's GPU path, checked in one run on a lent GPU machine that has no network (issue 15).
#
# The last of the device `run` calls that `bench/gpu_stage.py` prints runs this; the calls
# before it left their parts of the staged wheels in $GPU_CHECK_STAGE. In order, each part with
# its own time cap, a failed part not stopping the others, logs written to $OUT as it goes:
#   install      reassemble the wheels; a venv that sees the image's CUDA torch; `make venv
#                smollm` offline from the staged wheels (docs/gpu.md)
#   env          nvidia-smi, versions, DeepSpeed's op report, DeepSpeed's FusedAdam built (JIT)
#   sweep-zero2  bench/gpu/sweep.yaml: mle and del, preset l, bf16 (precision auto), ZeRO-2
#   sweep-zero3  the same with ZeRO-3
#   smollm2      bench/gpu/smollm2.yaml: SmolLM2-135M-Instruct fine-tuned with mle and del
#   bench        bench/trial.py: plain PyTorch loop vs a numsweep trial, per-loss step times
#   report       always: compacted Parquet tarred, analysis tables and a summary in $OUT
#
# $OUT receives at most 8 files (what the device tool brings back): summary.md, install.log,
# env.log, sweep-zero2.log, sweep-zero3.log, smollm2.log, bench.log, results.tar.gz (the
# compacted Parquet store, the manifests and bench/trial.py's JSON).
#
# Environment (defaults in brackets):
#   OUT                where the files go [bench/out/gpu-check]
#   GPU_CHECK_DEVICE   cuda, or cpu for the CPU proof: the same run with the overrides of
#                      bench/gpu/cpu_proof.yaml (tiny models, a handful of steps) [cuda]
#   GPU_CHECK_PYTHON   the image's Python, the one with torch [python3]
#   GPU_CHECK_STAGE    where earlier calls copied their parts [/tmp/numsweep-gpu]
#   GPU_CHECK_CHUNKS   the staging folder in this checkout (parts carried by this call) [.gpu]
#   GPU_CHECK_VENV     the venv to make [.venv]
#   GPU_CHECK_WORK     scratch: wheels, results, caches [/tmp/numsweep-gpu-check]
#   GPU_CHECK_PARTS    the parts to run, e.g. "smollm2 bench" for a rerun [all]
#   GPU_CHECK_DEADLINE seconds from the start by which every part but the report must end
#                      [500 on cuda: with the report at most 9 min; 7200 on cpu]
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

DEVICE=${GPU_CHECK_DEVICE:-cuda}
IMAGE_PYTHON=${GPU_CHECK_PYTHON:-python3}
STAGE=${GPU_CHECK_STAGE:-/tmp/numsweep-gpu}
CHUNKS=${GPU_CHECK_CHUNKS:-.gpu}
VENV=${GPU_CHECK_VENV:-.venv}
WORK=${GPU_CHECK_WORK:-/tmp/numsweep-gpu-check}
PARTS=${GPU_CHECK_PARTS:-install env sweep-zero2 sweep-zero3 smollm2 bench}
OUT=${OUT:-$ROOT/bench/out/gpu-check}
case $DEVICE in
  cuda) DEADLINE=${GPU_CHECK_DEADLINE:-500}; SLOW=1 ;;
  # The project machine's 2 shared cores run the same steps many times slower.
  cpu) DEADLINE=${GPU_CHECK_DEADLINE:-7200}; SLOW=8 ;;
  *) echo "error: GPU_CHECK_DEVICE=$DEVICE: give cuda or cpu" >&2; exit 2 ;;
esac
[[ $VENV = /* ]] || VENV=$ROOT/$VENV
[[ $CHUNKS = /* ]] || CHUNKS=$ROOT/$CHUNKS
RESULTS=$WORK/results
WHEELS=$WORK/wheels
REPORT_RESERVE=40
mkdir -p "$OUT" "$WORK"
SUMMARY=$OUT/summary.md
export DEVICE IMAGE_PYTHON STAGE CHUNKS VENV WORK RESULTS WHEELS OUT ROOT
# No network there: nothing may wait on a hub, a package index or Ray's usage report.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0 PYTHONUNBUFFERED=1
export PIP_NO_INDEX=1 PIP_FIND_LINKS=$WHEELS PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1
# = --no-compile (pip reads a --no-X switch's variable inverted): imports compile what they use.
export PIP_NO_COMPILE=0
export PATH=$VENV/bin:$PATH
[[ $DEVICE = cpu ]] && export DS_ACCELERATOR=cpu
# DeepSpeed's just-in-time op builds, ours alone: the env part builds FusedAdam, the trials load it.
export TORCH_EXTENSIONS_DIR=$WORK/torch_extensions

START=$SECONDS
FAILED=0
{
  echo "# numsweep GPU check ($DEVICE)"
  echo
  echo "$(date -u +%FT%TZ), $(uname -n), git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo
  echo "| part | result | seconds | log |"
  echo "|---|---|---|---|"
} >"$SUMMARY"

# ---- the parts ------------------------------------------------------------------------------

do_install() {
  set -e
  local sums=""
  for f in "$STAGE"/parts.sha256 "$CHUNKS"/c*/parts.sha256; do [[ -f $f ]] && sums=$f && break; done
  [[ -n $sums ]] || { echo "no parts.sha256 in $STAGE or $CHUNKS/c*: stage with bench/gpu_stage.py"; return 1; }
  if ! cmp -s "$sums" "$WORK/parts.sha256" || [[ ! -f $WHEELS/manifest.json ]]; then
    rm -rf "$WORK/parts" "$WHEELS" && mkdir -p "$WORK/parts"
    for f in "$STAGE"/wheels.tar.* "$CHUNKS"/c*/wheels.tar.*; do [[ -f $f ]] && cp -f "$f" "$WORK/parts/"; done
    (cd "$WORK/parts" && grep -E '\.[0-9]{3}$' "$sums" | sha256sum -c -)
    cat "$WORK"/parts/wheels.tar.* >"$WORK/wheels.tar"
    (cd "$WORK" && grep -E ' wheels\.tar$' "$sums" | sha256sum -c -)
    tar -xf "$WORK/wheels.tar" -C "$WORK" && rm -rf "$WORK/parts" "$WORK/wheels.tar"
    cp "$sums" "$WORK/parts.sha256"
  fi
  echo "staged: $(ls "$WHEELS" | wc -l) files, $(du -sh "$WHEELS" | cut -f1)"
  # The venv sees exactly what the image's Python sees, through a .pth file naming that
  # Python's site-packages, after the venv's own (what is installed into the venv wins). Not
  # --system-site-packages: the image's Python is itself a venv (/opt/torch/.venv), and a venv
  # made from a venv would see the base interpreter's packages instead of the image's.
  [[ -x $VENV/bin/python ]] || "$IMAGE_PYTHON" -m venv "$VENV"
  local purelib
  purelib=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$IMAGE_PYTHON" -c 'import site; print("\n".join(site.getsitepackages()))' >"$purelib/numsweep-image.pth"
  "$VENV/bin/python" -c 'import torch; print("torch", torch.__version__, "from", torch.__file__)'
  local make=make
  if ! command -v make >/dev/null; then
    dpkg -x "$WHEELS"/make_*_amd64.deb "$WORK/make-root"
    make=$WORK/make-root/usr/bin/make
    echo "no make on this machine: using Debian's from the stage"
  fi
  # The GPU path of docs/gpu.md: torch (here the image's CUDA build) is importable in the venv, so
  # `make` installs the project around it; offline, from the staged wheels (PIP_* above).
  "$make" venv smollm VENV="$VENV" PYTHON="$IMAGE_PYTHON"
  "$VENV/bin/python" -m pip list --format=freeze
  "$VENV/bin/python" -m pip check || echo "(pip check above also sees the image's packages)"
}

do_env() {
  nvidia-smi || true
  python - <<'EOF'
import importlib.metadata as md
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    props = torch.cuda.get_device_properties(0)
    print("device", torch.cuda.get_device_name(0), f"{props.total_memory / 2**30:.0f} GiB",
          "capability", f"{props.major}.{props.minor}",
          "native bf16", torch.cuda.is_bf16_supported(including_emulation=False))
for name in ("ray", "deepspeed", "transformers", "optuna", "polars", "pydantic", "numpy"):
    print(name, md.version(name))
EOF
  ds_report || true
  # DeepSpeed compiles its FusedAdam op on first use: once here, timed, so the trials load it.
  python - <<'EOF'
import time
began = time.perf_counter()
from deepspeed.ops.op_builder import FusedAdamBuilder
FusedAdamBuilder().load()
print(f"DeepSpeed FusedAdam ready in {time.perf_counter() - began:.1f} s")
EOF
}

# The CPU proof's overrides for a sweep file of bench/gpu (bench/gpu/cpu_proof.yaml).
overrides() {
  [[ $DEVICE = cpu ]] || return 0
  python - "$1" <<'EOF'
import sys
import yaml
proof = yaml.safe_load(open("bench/gpu/cpu_proof.yaml"))
print("\n".join(proof["all"] + proof[sys.argv[1]]))
EOF
}

sweep() {  # sweep FILE [OVERRIDE ...] [--name E]
  local file=$1; shift
  local extra
  mapfile -t extra < <(overrides "$file")
  numsweep sweep "bench/gpu/$file" "cache_dir=$WORK/cache" "${extra[@]}" "$@" --results "$RESULTS"
}
do_sweep_zero2() { sweep sweep.yaml; }
do_sweep_zero3() { sweep sweep.yaml train.zero_stage=3 --name gpu-zero3; }
do_smollm2() { sweep smollm2.yaml; }

do_bench() {
  if [[ ! -f bench/trial.py ]]; then
    echo "bench/trial.py (issue 12) is not in this checkout: nothing to run"
    return 3
  fi
  local size=(--presets l --steps 200 --loss-preset l --loss-steps 100)
  [[ $DEVICE = cpu ]] && size=(--presets tiny --steps 20 --loss-preset tiny --loss-steps 10)
  # Each loss's step time inside a real training step as a ratio to mle's (issue 12's target 5).
  python -m bench.trial --device "$DEVICE" "${size[@]}" --losses del compensated ntl_was dist2 \
    --skip fixed --json "$WORK/trial.json"
}

export -f do_install do_env overrides sweep do_sweep_zero2 do_sweep_zero3 do_smollm2 do_bench

# part NAME CAP_SECONDS LOG FUNCTION: run FUNCTION under `timeout` (its own process group, all
# of it killed at the cap), append its output to $OUT/LOG and its result to the summary.
part() {
  local name=$1 cap=$(($2 * SLOW)) log=$OUT/$3 fn=$4
  [[ " $PARTS " == *" $name "* ]] || return 0
  local left=$((DEADLINE - REPORT_RESERVE - (SECONDS - START)))
  ((cap > left)) && cap=$left
  local result began=$SECONDS
  if ((cap < 15)); then
    result="NOT RUN: the deadline (${DEADLINE} s) is near" FAILED=1
  else
    echo "== $name: cap ${cap} s, $(date -u +%T)" >>"$log"
    timeout --kill-after=15 "$cap" bash -c "$fn" >>"$log" 2>&1
    local rc=$?
    case $rc in
      0) result=ok ;;
      124 | 137) result="TIMED OUT at ${cap} s" FAILED=1 ;;
      3) result="skipped (see log)" ;;
      *) result="FAILED (exit $rc)" FAILED=1 ;;
    esac
  fi
  echo "== $name: $result after $((SECONDS - began)) s" | tee -a "$log"
  echo "| $name | $result | $((SECONDS - began)) | $(basename "$log") |" >>"$SUMMARY"
}

part install 120 install.log do_install
part env 150 env.log do_env
part sweep-zero2 150 sweep-zero2.log do_sweep_zero2
part sweep-zero3 150 sweep-zero3.log do_sweep_zero3
part smollm2 180 smollm2.log do_smollm2
part bench 120 bench.log do_bench

# ---- report: always ------------------------------------------------------------------------

analysis() {  # analysis TITLE EXPERIMENT... -- ANALYSIS-ARGS...
  local title=$1; shift
  local args=() have=()
  while [[ $1 != -- ]]; do
    [[ -d $RESULTS/experiments/$1 ]] && have+=(--experiment "$1")
    shift
  done
  shift
  {
    echo
    echo "## $title"
    echo
    if ((${#have[@]})); then
      timeout 60 python -m analysis ablation "$RESULTS" "${have[@]}" "$@" 2>&1 || echo "(analysis failed: exit $?)"
    else
      echo "(no results)"
    fi
  } >>"$SUMMARY"
}

report() {
  local e
  for e in gpu-zero2 gpu-zero3 gpu-smollm2; do
    [[ -d $RESULTS/experiments/$e ]] && timeout 60 numsweep compact "$e" --results "$RESULTS"
  done
  {
    echo
    echo "## Machine"
    echo
    echo '```'
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
    grep -E '^(torch|device|ray|deepspeed|transformers) ' "$OUT/env.log" 2>/dev/null
    grep -E 'FusedAdam ready' "$OUT/env.log" 2>/dev/null
    echo '```'
  } >>"$SUMMARY"
  # One experiment per table: `ablation` over several experiments that share losses stops with
  # a polars DuplicateError on 'experiment' (analysis/arms.py; see the issue 15 report).
  local stage
  for stage in 2 3; do
    analysis "From scratch, ZeRO-$stage: perf over the last evaluation interval" \
      "gpu-zero$stage" -- --metric 'perf/*' --value final
    analysis "From scratch, ZeRO-$stage: held-out, step 0 -> last" \
      "gpu-zero$stage" -- --metric eval/test/digit_acc,eval/test/ce,gen/macc --value step:0,final
  done
  analysis "SmolLM2-135M-Instruct: before (step 0) -> after" \
    gpu-smollm2 -- --metric gen/mathgen/exact_match,eval/test/digit_acc,eval/test/ce --value step:0,final
  analysis "SmolLM2-135M-Instruct: perf over the last evaluation interval" \
    gpu-smollm2 -- --metric 'perf/*' --value final
  if [[ -s $OUT/bench.log ]]; then
    { echo; echo "## bench/trial.py (tail)"; echo; echo '```'; tail -n 40 "$OUT/bench.log"; echo '```'; } >>"$SUMMARY"
  fi
  if [[ -d $RESULTS/metrics ]]; then
    [[ -f $WORK/trial.json ]] && mkdir -p "$RESULTS/bench" && cp "$WORK/trial.json" "$RESULTS/bench/"
    (cd "$RESULTS" && tar -czf "$OUT/results.tar.gz" metrics trials experiments/*/manifest.json $(ls -d bench 2>/dev/null))
  fi
  # What comes back: 8 files at most, 16 MiB each; keep a long log's head and tail.
  local f
  for f in "$OUT"/*.log; do
    if (($(stat -c %s "$f") > 15 * 2 ** 20)); then
      { head -c $((2 * 2 ** 20)) "$f"; echo; echo "[... cut ...]"; tail -c $((12 * 2 ** 20)) "$f"; } >"$f.cut"
      mv "$f.cut" "$f"
    fi
  done
  echo >>"$SUMMARY"
  echo "Total $((SECONDS - START)) s. Files: $(cd "$OUT" && ls | tr '\n' ' ')" >>"$SUMMARY"
}
report
cat "$SUMMARY"
exit $FAILED
