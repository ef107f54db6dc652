#!/usr/bin/env bash
# Every GPU figure of docs/benchmarks.md in one go: training throughput (JAX and torch
# backends against keras-hub and plain PyTorch), the longest trainable GPT-2 sequence, and
# decoding. Each part can be skipped: PARTS="train maxlen decode" (the default).
#
#   bash benchmarks/gpu_suite.sh results/          # writes results/*.txt and *.json
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-benchmark-results}
parts=${PARTS:-train maxlen decode}
python=${PYTHON:-python}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
status=0
for part in $parts; do
  case $part in
    train)
      $python benchmarks/train_throughput.py --backends jax,torch --json "$out/train.json" \
        | tee "$out/train.txt" || status=1 ;;
    maxlen)
      $python benchmarks/train_throughput.py --backends jax \
        --max-length-sweep "${LENGTHS:-16384,32768,65536}" --json "$out/maxlen.json" \
        | tee "$out/maxlen.txt" || status=1 ;;
    decode)
      for backend in jax torch; do
        KERAS_BACKEND=$backend $python benchmarks/decode.py | tee "$out/decode_$backend.txt" || status=1
      done ;;
    *) echo "unknown part $part (train, maxlen, decode)"; exit 2 ;;
  esac
done
exit $status
