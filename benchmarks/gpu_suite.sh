#!/usr/bin/env bash
# Every GPU figure of docs/benchmarks.md in one go, most valuable first, each part writing its
# table (.txt) and its figures (.json, rewritten after every runner) under the output folder as
# soon as it has them, so a run cut off at any point keeps what it measured:
#
#   1 jax-gpt2     GPT-2 small training on JAX, ours vs keras-hub vs plain PyTorch, dropout 0 and 0.1
#   2 torch-gpt2   the same on the torch backend, ours vs keras-hub
#   3 transformer  Transformer base on JAX vs torch.nn.Transformer (compiled)
#   4 decode       greedy decoding, 32 + 256 tokens at batch 1 and 64: JAX vs keras-hub, torch vs HF;
#                  on JAX also the same model with 3 of 12 key/value heads (GQA): cache and speed
#   5 maxlen       the longest GPT-2 small sequence that trains at batch 1, ours vs keras-hub
#   6 translate    transformer_base on the gettext pairs (bf16), its BLEU next to the CPU demo's
#   7 banded       one GPT-3 banded layer (bf16), blocked / windowed kernel vs dense-masked,
#                  T = 1k to 32k, on JAX (cuDNN local window) and torch (FlexAttention)
#
#   bash benchmarks/gpu_suite.sh results/                       # every part, 14-minute budget
#   PARTS="jax-gpt2 torch-gpt2 transformer" BUDGET=540 bash benchmarks/gpu_suite.sh results/
#   PARTS="decode maxlen translate" BUDGET=540 bash benchmarks/gpu_suite.sh results/
#
# BUDGET (seconds, default 840) is the time the whole call may take: a part starts only if its
# estimate (ESTIMATES below: guesses; times.txt records what each part took, to correct them)
# fits in what is left, runs under `timeout` for what is left, and the translation run trains
# for what remains of its 6 minutes. Split the parts over two calls, as above, to keep each
# command under 10 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-benchmark-results}
parts=${PARTS:-jax-gpt2 torch-gpt2 transformer decode maxlen translate banded}
budget=${BUDGET:-840}
python=${PYTHON:-python}
declare -A ESTIMATES=([jax-gpt2]=240 [torch-gpt2]=200 [transformer]=120 [decode]=150
                      [maxlen]=150 [translate]=300 [banded]=120)
export PYTHONUNBUFFERED=1
for part in $parts; do
  if [ -z "${ESTIMATES[$part]:-}" ]; then echo "unknown part $part (${!ESTIMATES[*]})"; exit 2; fi
done
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
# Short fits: compiling dominates a GPU runner's time, and the fastest of two 10-step fits of
# GPT-2 small (about a second each) is already steady.
train=(benchmarks/train_throughput.py --steps 10 --repeats 2 --timeout 240)
status=0
remaining() { local r=$((budget - SECONDS)); echo $(( r > 1 ? r : 1 )); }  # for timeout
for part in $parts; do
  estimate=${ESTIMATES[$part]}
  left=$((budget - SECONDS))
  if [ "$left" -lt "$estimate" ]; then
    echo "=== $part skipped: ${left} s left of ${budget}, it needs about ${estimate} s" \
      | tee -a "$out/skipped.txt"
    continue
  fi
  echo "=== $part (${left} s left)"
  started=$SECONDS
  case $part in
    jax-gpt2)
      timeout "$(remaining)" $python "${train[@]}" --backends jax --peers keras-hub,torch \
        --workloads gpt2,gpt2-dropout \
        --json "$out/1_jax_gpt2.json" | tee "$out/1_jax_gpt2.txt" || status=1 ;;
    torch-gpt2)
      timeout "$(remaining)" $python "${train[@]}" --backends torch --peers keras-hub \
        --workloads gpt2,gpt2-dropout \
        --json "$out/2_torch_gpt2.json" | tee "$out/2_torch_gpt2.txt" || status=1 ;;
    transformer)
      timeout "$(remaining)" $python "${train[@]}" --backends jax --peers torch --workloads transformer \
        --json "$out/3_transformer.json" | tee "$out/3_transformer.txt" || status=1 ;;
    decode)
      KERAS_BACKEND=jax timeout "$(remaining)" $python benchmarks/decode.py --repeats 2 \
        --skip uncached hf --kv-heads 3 \
        --json "$out/4_decode_jax.json" | tee "$out/4_decode_jax.txt" || status=1
      KERAS_BACKEND=torch timeout "$(remaining)" $python benchmarks/decode.py --repeats 2 \
        --skip uncached keras-hub \
        --json "$out/4_decode_torch.json" | tee "$out/4_decode_torch.txt" || status=1 ;;
    maxlen)
      timeout "$(remaining)" $python benchmarks/train_throughput.py --backends jax --timeout 120 \
        --max-length-sweep "${LENGTHS:-16384,32768,65536}" --json "$out/5_maxlen.json" \
        | tee "$out/5_maxlen.txt" || status=1 ;;
    banded)
      for backend in jax torch; do
        KERAS_BACKEND=$backend timeout "$(remaining)" $python benchmarks/banded_attention.py \
          --dtype bfloat16 --lengths 1024 2048 4096 8192 16384 32768 \
          --json "$out/7_banded_$backend.json" | tee "$out/7_banded_$backend.txt" || status=1
      done ;;
    translate)
      # needs TensorFlow (the tf.data pipeline), keras-hub, sentencepiece, polib, sacreBLEU
      # and the system's German gettext catalogs
      if ! $python -c "import tensorflow, keras_hub, sentencepiece, polib, sacrebleu
import keras_transformer.data as d; assert d.find_catalogs('de')" \
          >/dev/null 2>&1; then
        echo "=== translate skipped: needs the text and examples extras, TensorFlow and" \
          "German gettext catalogs" \
          | tee -a "$out/skipped.txt"; continue
      fi
      # what is left of the budget, less 2 minutes for evaluation, at most 6
      minutes=$(( (budget - SECONDS - 120) / 60 )); minutes=$(( minutes > 6 ? 6 : minutes ))
      if [ "$minutes" -lt 1 ]; then
        echo "=== translate skipped: under a minute of training left" | tee -a "$out/skipped.txt"
        continue
      fi
      KERAS_BACKEND=jax timeout "$(remaining)" $python examples/translate.py --preset transformer_base \
        --mixed-precision \
        --minutes "$minutes" --output "$out/translate" | tee "$out/6_translate.txt" || status=1 ;;
  esac
  echo "=== $part took $((SECONDS - started)) s (estimate ${estimate} s)" | tee -a "$out/times.txt"
done
exit $status
