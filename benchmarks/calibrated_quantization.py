"""GPTQ and AWQ against int4 rounding to nearest: logit error and quantize time.

A 4-layer LLaMA-toggle `DecoderOnly` (d = 128, d_ff = 512, untied output) with
random weights, then trained briefly (150 steps by default) on a synthetic
sequence whose ids follow a noisy order-2 rule, is quantized to 4 bits in groups
of 128 three ways: int4 rounding to nearest, GPTQ and AWQ (both calibrated on
64 windows of 64 ids), the block projections only. Prints each one's largest
and mean |logit| error against float32 on 8 other windows, and its time.

    KERAS_BACKEND=torch python benchmarks/calibrated_quantization.py [STEPS]
"""
import os, sys, time, warnings
import numpy as np, keras
from keras import ops
import keras_transformer as kt
warnings.simplefilter("ignore")
G, V, L = 128, 256, 64
rng = np.random.default_rng(0)
# A toy "language": ids follow a noisy order-2 rule, so a trained model has peaked logits.
def stream(n, seed):
    r = np.random.default_rng(seed); s = list(r.integers(0, V, 2))
    for _ in range(n):
        s.append(int((s[-1] * 7 + s[-2] * 3 + (r.random() < 0.1) * r.integers(V)) % V))
    return np.array(s[2:], dtype="int32")
train = stream(65 * 3000, 1).reshape(-1, L + 1)
calib = stream(64 * L, 2).reshape(-1, L)
held = stream(8 * L, 3).reshape(-1, L)
def build():
    keras.utils.set_random_seed(0)
    return kt.DecoderOnly(vocab_size=V, num_layers=4, d_model=128, num_heads=4, d_ff=512, max_length=L,
                          position="rotary", norm="rms", feed_forward="swiglu", use_bias=False,
                          num_kv_heads=2, tie_embeddings=False, dropout=0.0)
in_blocks = lambda layer: isinstance(layer, keras.layers.Dense) and "block_" in layer.path
def run(label, weights):
    out = []
    ref = build(); ref.set_weights(weights); before = ops.convert_to_numpy(ref(held))
    for name, quantize in [
        ("int4 RTN", lambda m: m.quantize(config=keras.quantizers.Int4QuantizationConfig(block_size=G), filters=in_blocks)),
        ("gptq", lambda m: m.quantize("gptq", config=keras.quantizers.GPTQConfig(dataset=calib, tokenizer=object(), num_samples=64, sequence_length=L, group_size=G))),
        ("awq", lambda m: m.quantize("awq", config=keras.quantizers.AWQConfig(dataset=calib, tokenizer=object(), num_samples=64, sequence_length=L, group_size=G))),
    ]:
        m = build(); m.set_weights(weights)
        t = time.perf_counter(); quantize(m); dt = time.perf_counter() - t
        e = np.abs(ops.convert_to_numpy(m(held)) - before)
        out.append(f"{name}: max {e.max():.4f} ({100 * e.max() / np.abs(before).max():.1f}% of max |logit| {np.abs(before).max():.2f}), mean {e.mean():.5f}, {dt:.1f} s")
    print(f"[{keras.backend.backend()}] {label}:", *out, sep="\n  ", flush=True)
model = build()
run("random", model.get_weights())
model.compile(optimizer=keras.optimizers.Adam(1e-3))
t = time.perf_counter()
model.fit(train[:, :-1], train[:, 1:], batch_size=32, epochs=1, steps_per_epoch=int(sys.argv[1]) if len(sys.argv) > 1 else 150, verbose=0)
print(f"trained {time.perf_counter() - t:.0f} s, loss {model.evaluate(held[:, :-1], held[:, 1:], verbose=0)}")
run("trained", model.get_weights())
