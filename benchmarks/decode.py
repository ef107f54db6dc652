"""Greedy decode speed: our cached loop vs no cache vs keras-hub and HF transformers.

GPT-2-shaped random-weight models, a prompt of P tokens and N new tokens, at
batch 1 and a large batch, all measured in this one run (absolute times drift
between machines; the ratios printed at the end are what to compare):

* ours-cached:   `DecoderOnly.generate` (KV cache, compiled loop; on torch with
                 `model.jit_compile = True`, so that each step is one graph
                 made by `torch.compile`: Keras' eager default on torch is
                 `jit_compile="auto"`, i.e. False; `--torch-eager` keeps it);
* ours-uncached: the same compiled loop re-running the whole sequence each step;
* keras-hub:     `GPT2CausalLM.generate` with its greedy sampler, same backend;
* hf:            HF transformers `GPT2LMHeadModel.generate` (torch), if installed;
* ours-gqa:      with `--kv-heads N`, the same model with N key/value heads
                 (grouped-query attention): its decode cache bytes and speed
                 next to the full-heads model's.

    KERAS_BACKEND=jax python benchmarks/decode.py            # gpt2_small, 32 + 256, batch 1 and 64
    KERAS_BACKEND=jax python benchmarks/decode.py --tiny     # seconds on a CPU
    KERAS_BACKEND=jax python benchmarks/decode.py --tiny --kv-heads 1 --skip uncached keras-hub hf
    KERAS_BACKEND=jax python benchmarks/decode.py --kv-heads 3 --skip uncached   # GPU: 12 -> 3 heads
"""

import argparse
import time

import keras
import numpy as np
from keras import ops

import keras_transformer as kt
from keras_transformer.generation.compiled import CompiledLoop
from train_throughput import write_json


def timed(fn, repeats):
    """Best wall time of `repeats` calls after one warm-up (compilation) call."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def ours(shape, batch, prompt, new, dtype, num_kv_heads=None, jit_compile=True):
    """(cached run, uncached run, decode cache bytes) of our model."""
    keras.config.set_dtype_policy(dtype)
    model = kt.DecoderOnly(
        vocab_size=shape["vocab"], num_layers=shape["layers"], d_model=shape["d_model"],
        num_heads=shape["heads"], d_ff=4 * shape["d_model"], max_length=1024, dropout=0.0,
        pad_id=None, num_kv_heads=num_kv_heads,
    )
    if keras.backend.backend() == "torch":
        model.jit_compile = jit_compile  # torch.compile for each decode step (not the default)
    ids = np.random.default_rng(0).integers(1, shape["vocab"], size=(batch, prompt))
    cached = lambda: model.generate(ids, max_new_tokens=new)  # noqa: E731

    total = prompt + new

    def no_cache(context, ids):  # a full pass per step: the context's switches do not apply
        del context
        buffer = ops.pad(ids, ((0, 0), (0, new)))

        def body(index, buffer):
            logits = model(buffer)  # (B, total, V): the whole sequence every step
            step_logits = ops.take(logits, index - 1, axis=1)
            chosen = ops.cast(ops.argmax(step_logits, axis=-1), buffer.dtype)
            return index + 1, ops.slice_update(buffer, (0, index), chosen[:, None])

        _, buffer = ops.while_loop(lambda i, b: i < total, body, (prompt, buffer))
        return buffer

    compiled = CompiledLoop(model, no_cache)
    tensor = ops.convert_to_tensor(ids.astype("int32"))
    uncached = lambda: ops.convert_to_numpy(compiled(tensor))  # noqa: E731
    return cached, uncached, model.cache_bytes(batch, total)


def keras_hub_peer(shape, batch, prompt, new, dtype):
    import keras_hub

    keras.config.set_dtype_policy(dtype)
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=shape["vocab"], num_layers=shape["layers"], num_heads=shape["heads"],
        hidden_dim=shape["d_model"], intermediate_dim=4 * shape["d_model"],
        max_sequence_length=1024, dropout=0.0,
    )
    lm = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
    lm.compile(sampler="greedy")
    ids = np.zeros((batch, prompt + new), "int32")
    ids[:, :prompt] = np.random.default_rng(0).integers(1, shape["vocab"], size=(batch, prompt))
    mask = np.zeros_like(ids, bool)
    mask[:, :prompt] = True
    inputs = {"token_ids": ids, "padding_mask": mask}
    return lambda: np.asarray(lm.generate(inputs, stop_token_ids=None)["token_ids"])


def hf_peer(shape, batch, prompt, new, dtype):
    import torch
    import transformers

    device = "cuda" if torch.cuda.is_available() else "cpu"
    config = transformers.GPT2Config(
        n_layer=shape["layers"], n_head=shape["heads"], n_embd=shape["d_model"],
        vocab_size=shape["vocab"], n_positions=1024,
    )
    torch_dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[dtype]
    model = transformers.GPT2LMHeadModel(config).to(device, torch_dtype).eval()
    ids = torch.randint(1, shape["vocab"], (batch, prompt), device=device)
    kwargs = dict(max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0)

    def run():
        with torch.no_grad():
            model.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)
        if device == "cuda":
            torch.cuda.synchronize()

    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tiny", action="store_true", help="small model, CPU smoke run")
    parser.add_argument("--batches", type=int, nargs="+")
    parser.add_argument("--dtype", choices=["bfloat16", "float32"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip", nargs="*", default=[], choices=["uncached", "keras-hub", "hf"])
    parser.add_argument("--kv-heads", type=int, default=None,
                        help="also run the model with this many key/value heads (GQA)")
    parser.add_argument("--torch-eager", action="store_true",
                        help="torch: run ours eagerly (jit_compile=False, the default) instead of "
                             "with model.jit_compile = True")
    parser.add_argument("--json", default=None,
                        help="also write every timing to this file (rewritten after each one)")
    args = parser.parse_args()
    if args.tiny:
        shape = dict(layers=2, d_model=64, heads=4, vocab=1000)
        prompt, new, batches = 8, 32, args.batches or [1, 8]
    else:
        shape = dict(layers=12, d_model=768, heads=12, vocab=50257)  # gpt2_small
        prompt, new, batches = 32, 256, args.batches or [1, 64]
    dtype = args.dtype or ("float32" if args.tiny else "bfloat16")
    print(
        f"backend={keras.backend.backend()} dtype={dtype} layers={shape['layers']} "
        f"d_model={shape['d_model']} vocab={shape['vocab']} prompt={prompt} new={new}"
    )
    jit_compile = not args.torch_eager
    if keras.backend.backend() == "torch":
        print(f"ours: model.jit_compile = {jit_compile} (torch.compile of each decode step: "
              f"{'yes' if jit_compile else 'no, eager'}; compile time excluded, as for every run)")
    rows = []
    for batch in batches:
        cached, uncached, cache_bytes = ours(shape, batch, prompt, new, dtype,
                                             jit_compile=jit_compile)
        runs = {"ours-cached": cached}
        caches = {"ours-cached": cache_bytes}
        if args.kv_heads:
            runs["ours-gqa"], _, caches["ours-gqa"] = ours(
                shape, batch, prompt, new, dtype, num_kv_heads=args.kv_heads,
                jit_compile=jit_compile,
            )
        if "uncached" not in args.skip:
            runs["ours-uncached"] = uncached
        if "keras-hub" not in args.skip:
            runs["keras-hub"] = keras_hub_peer(shape, batch, prompt, new, dtype)
        if "hf" not in args.skip:
            try:
                runs["hf"] = hf_peer(shape, batch, prompt, new, dtype)
            except ImportError as error:
                print(f"  hf skipped: {error}")
        speed = {}
        for name, fn in runs.items():
            seconds = timed(fn, args.repeats)
            speed[name] = batch * new / seconds
            cache = f" cache {caches[name] / 2**20:9.2f} MiB" if name in caches else ""
            print(f"  batch={batch:<3} {name:<14} {seconds:8.3f} s {speed[name]:12,.0f} tok/s"
                  f"{cache}", flush=True)
            rows.append(dict(backend=keras.backend.backend(), dtype=dtype, batch=batch,
                             prompt=prompt, new=new, runner=name, seconds=seconds,
                             tokens_per_s=speed[name], cache_bytes=caches.get(name)))
            write_json(args.json, rows)  # after every timing: a cut-off run keeps them
        for peer in ("ours-uncached", "keras-hub", "hf"):
            if peer in speed:
                print(f"  batch={batch:<3} ours-cached / {peer}: {speed['ours-cached'] / speed[peer]:.2f}x")
        if "ours-gqa" in speed:
            print(f"  batch={batch:<3} ours-gqa ({args.kv_heads} of {shape['heads']} K/V heads) / "
                  f"ours-cached: {speed['ours-gqa'] / speed['ours-cached']:.2f}x speed, "
                  f"{caches['ours-gqa'] / caches['ours-cached']:.2f}x cache")


if __name__ == "__main__":
    main()
