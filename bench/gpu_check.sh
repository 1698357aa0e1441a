#!/usr/bin/env bash
# numsweep's GPU path, checked in one device call on a lent GPU machine without network (issue 44;
# docs/gpu.md says how to run it). The call carries the kit that `python bench/gpu_kit.py` built
# (numsweep's run-time packages the image lacks, pre-installed, one tar.xz); no venv, make, pip
# or uv: the image's Python runs `python -m orchestrator` with the kit on PYTHONPATH. In order,
# each part with its own time cap, a failed part not stopping the others, logs written to $OUT:
#   unpack       the kit into $GPU_CHECK_SITE
#   env          nvidia-smi, versions, torch.cuda and its bf16 support
#   sweep-zero2  bench/gpu/sweep.yaml: mle and del, preset l, precision auto, torch's fused AdamW
#                (train.optimizer: torch_adamw, nothing compiled), ZeRO-2, NCCL
#   sweep-zero3  the same with ZeRO-3, only if the time left allows
#   report       always: tokens/s, step time, peak memory, bf16, the process-group backend line,
#                each loss's step time as a ratio to mle's, the compacted store tarred
#
# $OUT receives: summary.md, unpack.log, env.log, sweep-zero2.log, sweep-zero3.log,
# results.tar.gz (the compacted Parquet store and the manifests).
#
# Environment (defaults in brackets):
#   OUT                 where the files go [bench/out/gpu-check]
#   GPU_CHECK_DEVICE    cuda, or cpu for the CPU proof: the same run with the overrides of
#                       bench/gpu/cpu_proof.yaml (tiny model, a handful of steps) [cuda]
#   GPU_CHECK_PYTHON    the Python with torch [/opt/torch/.venv/bin/python3, the image's, else
#                       python3]
#   GPU_CHECK_KIT       the kit [.gpu-kit/numsweep-kit-cp312.tar.xz]
#   GPU_CHECK_SITE      where the kit is unpacked [/tmp/numsweep-kit]
#   GPU_CHECK_WORK      scratch: results, caches [/tmp/numsweep-gpu-check]
#   GPU_CHECK_PARTS     the parts to run [unpack env sweep-zero2 sweep-zero3]
#   GPU_CHECK_DEADLINE  seconds from the start by which everything, the report included, ends
#                       [420 on cuda, so a rerun fits 15 minutes of device time; 3600 on cpu]
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

DEVICE=${GPU_CHECK_DEVICE:-cuda}
if [[ -n ${GPU_CHECK_PYTHON:-} ]]; then
  PY=$GPU_CHECK_PYTHON
elif [[ -x /opt/torch/.venv/bin/python3 ]]; then
  PY=/opt/torch/.venv/bin/python3
else
  PY=python3
fi
KIT=${GPU_CHECK_KIT:-.gpu-kit/numsweep-kit-cp312.tar.xz}
SITE=${GPU_CHECK_SITE:-/tmp/numsweep-kit}
WORK=${GPU_CHECK_WORK:-/tmp/numsweep-gpu-check}
PARTS=${GPU_CHECK_PARTS:-unpack env sweep-zero2 sweep-zero3}
OUT=${OUT:-$ROOT/bench/out/gpu-check}
case $DEVICE in
  cuda) DEADLINE=${GPU_CHECK_DEADLINE:-420}; SLOW=1 ;;
  # The project machine's 2 shared cores run the same steps many times slower.
  cpu) DEADLINE=${GPU_CHECK_DEADLINE:-3600}; SLOW=6 ;;
  *) echo "error: GPU_CHECK_DEVICE=$DEVICE: give cuda or cpu" >&2; exit 2 ;;
esac
if ! [[ $DEADLINE =~ ^[0-9]+$ ]]; then
  echo "error: GPU_CHECK_DEADLINE=$DEADLINE: give whole seconds" >&2
  exit 2
fi
for p in $PARTS; do
  case $p in
    unpack | env | sweep-zero2 | sweep-zero3) ;;
    *) echo "error: GPU_CHECK_PARTS: unknown part $p (parts: unpack env sweep-zero2 sweep-zero3)" >&2
      exit 2 ;;
  esac
done
[[ $KIT = /* ]] || KIT=$ROOT/$KIT
if [[ " $PARTS " == *" unpack "* && ! -f $KIT ]]; then
  echo "error: GPU_CHECK_KIT=$KIT: no such file; build it with python bench/gpu_kit.py" >&2
  exit 2
fi
command -v "$PY" >/dev/null || { echo "error: GPU_CHECK_PYTHON=$PY: not found" >&2; exit 2; }
RESULTS=$WORK/results
REPORT_RESERVE=45
mkdir -p "$OUT" "$WORK"
SUMMARY=$OUT/summary.md
export DEVICE PY KIT SITE WORK RESULTS OUT ROOT
# The kit's packages after the checkout (numsweep itself); Ray's workers inherit it.
export PYTHONPATH=$ROOT:$SITE${PYTHONPATH:+:$PYTHONPATH}
# No network there: nothing may wait on a hub, a package index or Ray's usage report.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0 PYTHONUNBUFFERED=1
[[ $DEVICE = cpu ]] && export DS_ACCELERATOR=cpu
# NCCL says its version once per communicator: the report quotes it.
export NCCL_DEBUG=${NCCL_DEBUG:-VERSION}
export TORCH_EXTENSIONS_DIR=$WORK/torch_extensions

START=$SECONDS
FAILED=0
{
  echo "# numsweep GPU check ($DEVICE)"
  echo
  echo "$(date -u +%FT%TZ), $(uname -n), git $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $PY"
  echo
  echo "| part | result | seconds | log |"
  echo "|---|---|---|---|"
} >"$SUMMARY"

# ---- the parts ------------------------------------------------------------------------------

do_unpack() {
  set -e
  ls -l "$KIT"
  rm -rf "$SITE" && mkdir -p "$SITE"
  # Python's tarfile, not tar -J: the image's Python is the one thing sure to be there.
  "$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' \
    "$KIT" "$SITE"
  echo "unpacked: $(du -sm "$SITE" | cut -f1) MiB in $SITE"
}

do_env() {
  nvidia-smi || true
  "$PY" - <<'PYEOF'
import importlib.metadata as md
import sys
import torch
print("python", sys.version.split()[0], sys.executable)
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    props = torch.cuda.get_device_properties(0)
    print("device", torch.cuda.get_device_name(0), f"{props.total_memory / 2**30:.0f} GiB",
          "capability", f"{props.major}.{props.minor}",
          "bf16 supported", torch.cuda.is_bf16_supported(),
          "native bf16", torch.cuda.is_bf16_supported(including_emulation=False))
for name in ("ray", "deepspeed", "transformers", "optuna", "polars", "pydantic", "numpy",
             "pyarrow", "scipy"):
    module = md.distribution(name)
    print(name, module.version, "from", module.locate_file(""))
PYEOF
}

# The CPU proof's overrides for a sweep file of bench/gpu (bench/gpu/cpu_proof.yaml).
overrides() {
  [[ $DEVICE = cpu ]] || return 0
  "$PY" - "$1" <<'PYEOF'
import sys
import yaml
proof = yaml.safe_load(open("bench/gpu/cpu_proof.yaml"))
print("\n".join(proof["all"] + proof[sys.argv[1]]))
PYEOF
}

sweep() {  # sweep FILE [OVERRIDE ...] [--name E]
  local file=$1; shift
  local extra
  mapfile -t extra < <(overrides "$file")
  "$PY" -m orchestrator sweep "bench/gpu/$file" "cache_dir=$WORK/cache" "${extra[@]}" "$@" \
    --results "$RESULTS"
}
do_sweep_zero2() { sweep sweep.yaml; }
do_sweep_zero3() { sweep sweep.yaml train.zero_stage=3 --name gpu-zero3; }

export -f do_unpack do_env overrides sweep do_sweep_zero2 do_sweep_zero3

# part NAME CAP_SECONDS MIN_SECONDS FUNCTION: run FUNCTION under `timeout` (its own process
# group, all of it killed at the cap, which the deadline may shorten), its output in
# $OUT/NAME.log, its result in the summary; not run where less than MIN_SECONDS are left.
part() {
  local name=$1 cap=$(($2 * SLOW)) least=$(($3 * SLOW)) fn=$4 log=$OUT/$1.log
  [[ " $PARTS " == *" $name "* ]] || return 0
  local left=$((DEADLINE - REPORT_RESERVE - (SECONDS - START)))
  ((cap > left)) && cap=$left
  local result began=$SECONDS
  if ((cap < least)); then
    result="NOT RUN: ${cap} s left before the deadline (${DEADLINE} s), ${least} s needed"
  else
    echo "== $name: cap ${cap} s, $(date -u +%T)" >>"$log"
    timeout --kill-after=10 "$cap" bash -c "$fn" >>"$log" 2>&1
    local rc=$?
    case $rc in
      0) result=ok ;;
      124 | 137) result="TIMED OUT at ${cap} s" FAILED=1 ;;
      *) result="FAILED (exit $rc)" FAILED=1 ;;
    esac
  fi
  echo "== $name: $result after $((SECONDS - began)) s" | tee -a "$log"
  echo "| $name | $result | $((SECONDS - began)) | $(basename "$log") |" >>"$SUMMARY"
}

part unpack 60 5 do_unpack
part env 45 5 do_env
# ZeRO-2 is the check; ZeRO-3 only in what remains of the deadline.
part sweep-zero2 240 60 do_sweep_zero2
part sweep-zero3 240 120 do_sweep_zero3

# ---- report: always ------------------------------------------------------------------------

report() {
  local e have=()
  for e in gpu-zero2 gpu-zero3; do
    if [[ -d $RESULTS/experiments/$e ]]; then
      have+=("$e")
      timeout 30 "$PY" -m orchestrator compact "$e" --results "$RESULTS"
    fi
  done
  {
    echo
    echo "## Machine"
    echo
    echo '```'
    if command -v nvidia-smi >/dev/null; then
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
    else
      echo "(no nvidia-smi)"
    fi
    grep -E '^(python|torch|device|ray|deepspeed|transformers|polars) ' "$OUT/env.log" 2>/dev/null
    echo '```'
    echo
    echo "## Process group (the sweeps' logs)"
    echo
    echo '```'
    for e in sweep-zero2 sweep-zero3; do
      [[ -f $OUT/$e.log ]] || continue
      # The trial's own line (trainables.worker.trial_setup.describe_engine) and NCCL's version line.
      grep -m1 -h 'numsweep: torch.distributed backend' "$OUT/$e.log" | sed "s/^.*numsweep:/$e:/"
      grep -m1 -h 'NCCL version' "$OUT/$e.log" | sed "s/^.*NCCL/$e: NCCL/" | cut -c1-200
    done
    echo '```'
    echo
    echo "## Per trial: the last logged interval"
    if ((${#have[@]})); then
      timeout 60 "$PY" -m bench.gpu_report "$RESULTS" "${have[@]}" 2>&1 || echo "(report failed: exit $?)"
    else
      echo
      echo "(no results)"
    fi
  } >>"$SUMMARY"
  if [[ -d $RESULTS/metrics ]]; then
    (cd "$RESULTS" && tar -czf "$OUT/results.tar.gz" metrics trials experiments/*/manifest.json)
  fi
  echo >>"$SUMMARY"
  echo "Total $((SECONDS - START)) s. Files: $(cd "$OUT" && ls | tr '\n' ' ')" >>"$SUMMARY"
}
report
cat "$SUMMARY"
exit $FAILED
