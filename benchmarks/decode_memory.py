"""Peak host memory of generation: how much a decode grows the process, against its cache.

A DecoderOnly (4 layers, d_model 256, batch 8, prompt 16 by default) generates
N new tokens greedily in a fresh process per N; the growth of peak RSS over the
process's peak after a warm-up call is printed next to the size of the
key/value cache the decode needs (layers x batch x 2 x positions x d_model).
An eager torch loop that keeps the autograd graph grows by gigabytes; one that
does not stays near the cache:

    KERAS_BACKEND=torch python benchmarks/decode_memory.py --new-tokens 256 1024
"""

import argparse
import json
import os
import resource
import subprocess
import sys


def measure(layers, d_model, batch, prompt, new_tokens):
    """One decode in this process: `{peak_growth_mib, cache_mib, requires_grad}`."""
    import keras
    import numpy as np

    import keras_transformer as kt

    model = kt.DecoderOnly(vocab_size=1000, num_layers=layers, d_model=d_model,
                           num_heads=4, d_ff=4 * d_model, position="sinusoidal", dropout=0.0)
    requires_grad = []
    step = model.call_with_cache

    def recording(ids, caches, index, **kwargs):  # what every decode step hands on
        logits, caches = step(ids, caches, index, **kwargs)
        tensors = [logits] + [cache.self_attention for cache in caches]
        requires_grad.append(any(getattr(t, "requires_grad", False) for t in tensors))
        return logits, caches

    model.call_with_cache = recording
    ids = np.random.default_rng(0).integers(1, 1000, size=(batch, prompt))
    model.generate(ids[:, : prompt // 2], max_new_tokens=4)  # warm-up: kernels, allocator
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = model.generate(ids, max_new_tokens=new_tokens)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert out.shape == (batch, prompt + new_tokens)
    cache_bytes = model.cache_bytes(batch, prompt + new_tokens)  # float32, every layer dense
    return dict(backend=keras.backend.backend(), new_tokens=new_tokens,
                peak_growth_mib=(after - before) / 1024, cache_mib=cache_bytes / 2**20,
                requires_grad=any(requires_grad))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--prompt", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--one", action="store_true", help="measure in this process (internal)")
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args(argv)
    shape = (args.layers, args.d_model, args.batch, args.prompt)
    if args.one:
        print(json.dumps(measure(*shape, args.new_tokens[0])))
        return None
    results = []
    for new in args.new_tokens:  # a fresh process each: peak RSS never goes down
        command = [sys.executable, os.path.abspath(__file__), "--one", "--new-tokens", str(new),
                   "--layers", str(args.layers), "--d-model", str(args.d_model),
                   "--batch", str(args.batch), "--prompt", str(args.prompt)]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        result = json.loads(out.strip().splitlines()[-1])
        results.append(result)
        print(f"backend={result['backend']} layers={args.layers} d_model={args.d_model} "
              f"batch={args.batch} prompt={args.prompt} new={new}: peak RSS +"
              f"{result['peak_growth_mib']:.0f} MiB, cache {result['cache_mib']:.0f} MiB "
              f"({result['peak_growth_mib'] / result['cache_mib']:.2f}x), "
              f"graph kept: {result['requires_grad']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return results


if __name__ == "__main__":
    main()
