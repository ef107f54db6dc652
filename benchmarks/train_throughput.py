"""Training throughput through `model.fit`: ours vs keras-hub vs plain PyTorch, side by side.

Workloads (random token ids; each runner in its own process, so every backend
and peer starts cold and gets the whole device):

* `gpt2`:         GPT-2 small (124,439,808 weights), batch 16 x 1024, dropout 0;
* `gpt2-dropout`: the same with GPT-2's dropout 0.1 (ours: residual and
                  embedding dropout, fused attention kept; keras-hub: also on
                  the attention probabilities, as it ties them);
* `transformer`:  Transformer base (6 + 6 layers, 512 wide, vocabulary 37,000),
                  batch 128 x 128 source and 128 target tokens, dropout 0.1.

Runners: `ours` (`model.fit`, `jit_compile=True` on every backend: XLA on JAX
and TensorFlow, `torch.compile` on torch), `keras-hub` (`model.fit`, Keras'
default `jit_compile`), `torch` (plain PyTorch: nanoGPT-style GPT-2 or
`torch.nn.Transformer`, `torch.compile`, fused Adam). Both sides run bf16
mixed precision (`--precision`). Each runner trains `--warmup` steps (timed
apart as compile time), then `--repeats` fits of `--steps` steps, the fastest
of which counts; printed are tokens/s,
MFU (nanoGPT's FLOP count: 6 N + 12 L d T per token, N without the position
table, over 989 TFLOP/s, the dense bf16 peak of an H100/H200) and the ratios
ours / peer from this one run.

`--max-length-sweep 16384,32768,65536` instead finds the longest sequence
GPT-2 small trains one step at batch 1 (dropout 0 and 0.1), ours and keras-hub's.

    python benchmarks/train_throughput.py                       # GPU: all workloads, JAX + torch
    python benchmarks/train_throughput.py --tiny                # CPU smoke run, float32, tiny shapes
    python benchmarks/train_throughput.py --backends jax --workloads gpt2
    python benchmarks/train_throughput.py --backends jax --max-length-sweep 16384,32768,65536
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
PEAK_FLOPS = 989e12  # dense bf16 datasheet peak of an H100/H200

SHAPES = {
    # name: (full shape, tiny shape)
    "gpt2": (
        dict(family="gpt2", layers=12, d_model=768, heads=12, vocab=50257, max_length=1024,
             batch=16, length=1024),
        dict(family="gpt2", layers=2, d_model=64, heads=4, vocab=1000, max_length=64,
             batch=4, length=64),
    ),
    "transformer": (
        dict(family="transformer", layers=6, d_model=512, heads=8, d_ff=2048, vocab=37000,
             batch=128, length=128),
        dict(family="transformer", layers=2, d_model=64, heads=4, d_ff=256, vocab=1000,
             batch=8, length=16),
    ),
}
WORKLOADS = {"gpt2": ("gpt2", 0.0), "gpt2-dropout": ("gpt2", 0.1), "transformer": ("transformer", 0.1)}


def shape_of(name, tiny):
    """The full or tiny shape dict of `SHAPES[name]`."""
    return SHAPES[name][1 if tiny else 0]


def flops_per_token(shape, length):
    """Training FLOPs per (target) token: nanoGPT's count, also for the encoder-decoder."""
    d, layers, vocab = shape["d_model"], shape["layers"], shape["vocab"]
    if shape["family"] == "gpt2":
        weights = vocab * d + layers * (12 * d * d + 13 * d) + 2 * d  # no position table
        return 6 * weights + 12 * layers * d * length
    f = shape["d_ff"]
    attention, ffn, norm = 4 * d * d + 4 * d, 2 * d * f + f + d, 2 * d
    encoder = layers * (attention + ffn + 2 * norm)  # post-LN: no final norm
    decoder = layers * (2 * attention + ffn + 3 * norm)
    # encoder weights see source tokens, decoder weights and the tied output
    # projection see target tokens (same length here); three attentions
    return 6 * (encoder + decoder + d * vocab) + 18 * layers * d * length


# --- one runner, in its own process --------------------------------------------


def random_batches(shape, rows, length, seed=0):
    """The training data every runner gets: fresh random ids in every batch, the same
    arrays for every runner (`{"ids", "labels"}` or `{"source", "target", "labels"}`,
    each `(rows, length)` int32), fed to `fit` or moved batch by batch by plain PyTorch."""
    import numpy as np

    rng = np.random.default_rng(seed)
    names = ("ids", "labels") if shape["family"] == "gpt2" else ("source", "target", "labels")
    return {name: rng.integers(1, shape["vocab"], size=(rows, length)).astype("int32")
            for name in names}


def _keras_model(runner, shape, length, dropout, padding_masks=True):
    """(model, weight count, input adapter) for `ours` or `keras-hub`."""
    if runner == "keras-hub":
        from peers import keras_hub_models

        if shape["family"] == "gpt2":
            model, count = keras_hub_models.gpt2(shape, length, dropout)
            return model, count, keras_hub_models.gpt2_inputs
        model, count = keras_hub_models.transformer(shape, length, dropout)
        return model, count, lambda inputs: inputs

    import keras_transformer as kt

    if shape["family"] == "gpt2":
        # GPT-2 has no padding token: pad_id=None, as our conversions use.
        model = kt.DecoderOnly.from_preset(
            "gpt2_small", num_layers=shape["layers"], d_model=shape["d_model"],
            num_heads=shape["heads"], d_ff=4 * shape["d_model"], vocab_size=shape["vocab"],
            max_length=max(length, shape["max_length"]), dropout=dropout, pad_id=None,
        )
    else:
        model = kt.EncoderDecoder.from_preset(
            "transformer_base", num_layers=shape["layers"], d_model=shape["d_model"],
            num_heads=shape["heads"], d_ff=shape["d_ff"], vocab_size=shape["vocab"],
            dropout=dropout, pad_id=0 if padding_masks else None,
        )
    return model, None, lambda inputs: inputs


def compiled_runner(runner, shape, length, dropout, rows, precision, jit="auto",
                    padding_masks=True):
    """`(model, weight count, inputs, labels)`: a Keras runner (`ours` or `keras-hub`),
    compiled as this benchmark compiles it, with `rows` fresh examples (`random_batches`)
    to `fit` on. `step_profile.py` takes its step apart."""
    import keras

    keras.mixed_precision.set_global_policy(precision)
    if runner == "keras-hub":
        try:
            keras.config.enable_flash_attention()
        except Exception:  # noqa: BLE001 - older Keras: its default choice stands
            pass
    model, count, adapt = _keras_model(runner, shape, length, dropout,
                                       padding_masks=padding_masks)
    data = random_batches(shape, rows, length)
    if shape["family"] == "gpt2":
        inputs = adapt(data["ids"])
    else:
        inputs = {name: data[name] for name in ("source", "target")}
    jit = {"auto": "auto", "0": False, "1": True}[jit]
    if runner == "ours":
        jit = True if jit == "auto" else jit
        model.compile(optimizer=keras.optimizers.AdamW(3e-4), loss="auto", metrics=[],
                      jit_compile=jit)
    else:
        from peers import keras_hub_models

        keras_hub_models.compile_model(model, jit)
    return model, count or model.count_params(), inputs, data["labels"]


def run_keras(args, shape):
    import keras

    model, count, inputs, labels = compiled_runner(
        args.runner, shape, args.length, args.dropout, args.batch * (args.warmup + args.steps),
        args.precision, args.jit, padding_masks=not args.no_padding_masks,
    )

    def fit(first, number):
        part = lambda a: a[first * args.batch:(first + number) * args.batch]  # noqa: E731
        x = {k: part(v) for k, v in inputs.items()} if isinstance(inputs, dict) else part(inputs)
        history = model.fit(x, part(labels), batch_size=args.batch, epochs=1, verbose=0,
                            shuffle=False)
        return history.history["loss"][-1]  # a Python float: the device has finished

    def first_batch_loss():
        """The compiled loss of an eager inference call: nothing more to compile."""
        x = {k: v[:args.batch] for k, v in inputs.items()} if isinstance(inputs, dict) else (
            inputs[:args.batch])
        if keras.backend.backend() == "torch":
            import torch

            no_grad = torch.no_grad()
        else:
            no_grad = contextlib.nullcontext()
        with no_grad:
            logits = model(x, training=False)
            loss = model.compute_loss(x=x, y=labels[:args.batch], y_pred=logits,
                                      training=False)
        return float(keras.ops.convert_to_numpy(loss))

    result = measure(args, fit, count, first_batch_loss)
    return dict(result, jit=str(model.jit_compile))


def run_torch(args, shape):
    from peers import torch_models

    data = random_batches(shape, args.batch * (args.warmup + args.steps), args.length)
    run, count = torch_models.make_step(
        shape, data, args.batch, compile_model=args.jit != "0", dropout=args.dropout,
        bf16=args.precision == "mixed_bfloat16",
    )
    result = measure(args, run, count, lambda: run.loss(0))
    return dict(result, jit=str(args.jit != "0"))


def measure(args, train, weights, first_batch_loss=None):
    """Times `train(first_batch, number_of_steps) -> loss`: the `--warmup` steps that
    compile, then the fastest of `--repeats` fits of `--steps` steps (less noise).

    With `first_batch_loss() -> loss` (the first batch's, in inference mode: no
    dropout, no update), the result's `first_batch_loss` holds it before any step and
    after the timed fits, both untimed. The labels are random, so the loss of a
    batch not trained on stays at log V however well a runner trains; the first
    batch was trained on (the first warmup step), and a runner whose steps update
    nothing gives the same figure twice.
    """
    before = first_batch_loss() if first_batch_loss and args.steps else None
    start = time.perf_counter()
    train(0, args.warmup)
    result = dict(weights=weights, compile_s=time.perf_counter() - start)
    if not args.steps:  # the max-length sweep: training at all is the result
        return result
    result["step_s"] = float("inf")
    for _ in range(args.repeats):
        start = time.perf_counter()
        result["loss"] = train(args.warmup, args.steps)
        result["step_s"] = min(result["step_s"], (time.perf_counter() - start) / args.steps)
    if before is not None:
        result["first_batch_loss"] = [float(before), float(first_batch_loss())]
    return result


def child(args):
    """Runs one runner and prints its result as one `RESULT {json}` line."""
    sys.path.insert(0, BENCHMARKS)
    shape = shape_of(args.shape, args.tiny)
    try:
        result = (run_torch if args.runner == "torch" else run_keras)(args, shape)
        result["ok"] = True
    except Exception as error:  # noqa: BLE001 - out of memory is a result here
        result = dict(ok=False, error=f"{type(error).__name__}: {str(error)[:300]}")
    print("RESULT " + json.dumps(result), flush=True)


# --- the side-by-side driver ----------------------------------------------------


def launch(options, runner, backend, workload, batch, length, steps, warmup):
    """Runs one runner in a fresh process; its result dict (or the failure)."""
    shape_name, dropout = WORKLOADS[workload]
    command = [
        sys.executable, os.path.abspath(__file__), "--child", runner, "--shape", shape_name,
        "--dropout", str(dropout), "--batch", str(batch), "--length", str(length),
        "--steps", str(steps), "--warmup", str(warmup), "--precision", options.precision,
        "--jit", options.jit, "--repeats", str(options.repeats),
    ] + (["--tiny"] if options.tiny else []) + (
        ["--no-padding-masks"] if options.no_padding_masks else [])
    environment = dict(os.environ, KERAS_BACKEND=backend or "torch")
    started = time.perf_counter()
    try:
        finished = subprocess.run(command, capture_output=True, text=True, env=environment,
                                  timeout=options.timeout)
        lines = [l for l in finished.stdout.splitlines() if l.startswith("RESULT ")]
        if lines:
            result = json.loads(lines[-1][len("RESULT "):])
        else:
            tail = (finished.stderr or finished.stdout).strip().splitlines()[-3:]
            result = dict(ok=False, error=f"exit {finished.returncode}: {' | '.join(tail)}")
    except subprocess.TimeoutExpired:
        result = dict(ok=False, error=f"did not finish in {options.timeout} s")
    result.update(runner=runner, backend=backend or "-", workload=workload, batch=batch,
                  length=length, wall_s=time.perf_counter() - started)
    if result.get("step_s"):
        shape = shape_of(shape_name, options.tiny)
        result["tokens_per_s"] = batch * length / result["step_s"]
        result["mfu"] = flops_per_token(shape, length) * result["tokens_per_s"] / PEAK_FLOPS
    return result


def write_json(path, rows):
    """Writes `rows` to `path` (if given), replacing what an earlier call wrote; through a
    temporary file, so a run killed while writing leaves the previous complete file."""
    if path:
        with open(path + ".partial", "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(path + ".partial", path)


def plan(options):
    """(runner, backend, workload) triples of a throughput run, peers included."""
    runs = []
    for workload in options.workloads:
        for backend in options.backends:
            runs.append(("ours", backend, workload))
            if "keras-hub" in options.peers:
                runs.append(("keras-hub", backend, workload))
        if "torch" in options.peers and workload != "gpt2-dropout":
            runs.append(("torch", None, workload))
    return runs


def print_table(results, out=sys.stdout):
    rounds = any(r.get("round") for r in results)  # a round column only when there are several
    header = f"{'workload':<13} {'runner':<10} {'backend':<10} {'tokens/s':>11} {'MFU':>6} " \
             f"{'step ms':>9} {'compile s':>9} {'loss':>7}  jit" + ("    round" if rounds else "")
    print(header, file=out)
    print("-" * len(header), file=out)
    for r in results:
        if not r.get("ok"):
            print(f"{r['workload']:<13} {r['runner']:<10} {r['backend']:<10} FAILED: "
                  f"{r.get('error', '')[:120]}", file=out)
            continue
        print(f"{r['workload']:<13} {r['runner']:<10} {r['backend']:<10} "
              f"{r['tokens_per_s']:>11,.0f} {100 * r['mfu']:>5.1f}% {1e3 * r['step_s']:>9.1f} "
              f"{r['compile_s']:>9.1f} {r['loss']:>7.3f}  {r['jit']:<5}"
              + (f" {r.get('round', 0) + 1:>5}" if rounds else ""), file=out)


def ratios(results):
    """`(workload, backend, peer, [ours / peer of each round])` for every pair measured.

    With `--rounds` every runner ran once per round, the rounds one after the other, so
    each round's ratio compares runs made minutes apart rather than a whole run apart.
    """
    done = {(r.get("round", 0), r["runner"], r["backend"], r["workload"]): r
            for r in results if r.get("ok")}
    pairs = {}
    for (round_, runner, backend, workload), ours in done.items():  # in the order they ran
        if runner != "ours":
            continue
        for peer_key, label in (
            ((round_, "keras-hub", backend, workload), f"keras-hub[{backend}]"),
            ((round_, "torch", "-", workload), "plain PyTorch"),
        ):
            if peer_key in done:
                ratio = ours["tokens_per_s"] / done[peer_key]["tokens_per_s"]
                pairs.setdefault((workload, backend, label), []).append(ratio)
    return [key + (values,) for key, values in pairs.items()]


def print_ratios(results, out=sys.stdout):
    """One line per pair: the median ratio, and with several rounds their range."""
    for workload, backend, peer, values in ratios(results):
        line = f"{workload:<13} {'ours[' + backend + ']':<16} / {peer:<22} = " \
               f"{statistics.median(values):.2f}x"
        if len(values) > 1:
            line += f"  (median of {len(values)} rounds; range {min(values):.2f} to " \
                    f"{max(values):.2f}x)"
        print(line, file=out)


def max_length_sweep(options):
    """The longest length that trains one step at batch 1, per runner, backend and dropout."""
    lengths = sorted(int(n) for n in options.max_length_sweep.split(","))
    rows = []
    for workload in ("gpt2", "gpt2-dropout"):
        for backend in options.backends:
            for runner in ["ours"] + (["keras-hub"] if "keras-hub" in options.peers else []):
                longest, failure = None, ""
                for length in lengths:
                    result = launch(options, runner, backend, workload, 1, length, 0, 1)
                    if not result.get("ok"):
                        failure = f"{length}: {result.get('error', '')[:100]}"
                        break
                    longest = length
                rows.append((workload, runner, backend, longest, failure))
                print(f"{workload:<13} {runner:<10} {backend:<10} longest that trains: "
                      f"{longest or 'none'}   {('first failure ' + failure) if failure else ''}",
                      flush=True)
                write_json(options.json, rows)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="tiny shapes, float32, seconds on a CPU")
    parser.add_argument("--workloads", default="gpt2,gpt2-dropout,transformer")
    parser.add_argument("--backends", default="jax,torch",
                        help="Keras backends for ours and keras-hub (tensorflow runs on CPU)")
    parser.add_argument("--peers", default="keras-hub,torch", help="comma list, or 'none'")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per fit (default 20; tiny 200)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps that compile")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed fits of --steps steps each; the fastest counts")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every runner this many times, round after round, and print "
                             "each ratio's median and range (a busy machine drifts)")
    parser.add_argument("--batch", type=int, default=None, help="override the workload's batch")
    parser.add_argument("--precision", default=None,
                        help="Keras dtype policy (default mixed_bfloat16; tiny float32)")
    parser.add_argument("--jit", default="auto", choices=("auto", "0", "1"),
                        help="auto: ours and plain PyTorch compiled, keras-hub Keras' default")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per runner")
    parser.add_argument("--max-length-sweep", default=None, help="e.g. 16384,32768,65536")
    parser.add_argument("--json", default=None, help="also write every result to this file")
    parser.add_argument("--no-padding-masks", action="store_true",
                        help="our Transformer with pad_id=None, as the peers run it: no padding "
                             "masks (to see what the masks cost)")
    # one runner (internal: the driver starts these)
    parser.add_argument("--child", default=None, choices=("ours", "keras-hub", "torch"))
    parser.add_argument("--shape", default="gpt2", choices=tuple(SHAPES))
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--length", type=int, default=None)
    options = parser.parse_args()
    options.precision = options.precision or ("float32" if options.tiny else "mixed_bfloat16")
    if options.rounds < 1 or options.repeats < 1:
        parser.error("--rounds and --repeats must be at least 1")
    if options.child:
        options.runner = options.child
        return child(options)

    options.workloads = [w for w in options.workloads.split(",") if w]
    options.backends = [b for b in options.backends.split(",") if b]
    options.peers = [] if options.peers == "none" else options.peers.split(",")
    unknown = sorted(set(options.workloads) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {sorted(WORKLOADS)}")
    print(f"python {sys.version.split()[0]}, precision {options.precision}, "
          f"{'tiny shapes' if options.tiny else 'full shapes'}, runners in separate processes",
          flush=True)
    if options.max_length_sweep:
        max_length_sweep(options)
        return 0

    # tiny steps take milliseconds: longer fits keep Keras' per-fit setup out of the figure
    steps = options.steps if options.steps is not None else (200 if options.tiny else 20)
    results = []
    for round_ in range(options.rounds):
        for runner, backend, workload in plan(options):
            shape = shape_of(WORKLOADS[workload][0], options.tiny)
            batch = options.batch or shape["batch"]
            results.append(dict(launch(options, runner, backend, workload, batch,
                                       shape["length"], steps, options.warmup), round=round_))
            r = results[-1]
            status = f"{r['tokens_per_s']:,.0f} tok/s" if r.get("ok") else "FAILED"
            prefix = f"round {round_ + 1}: " if options.rounds > 1 else ""
            print(f"  {prefix}{workload} {runner}[{r['backend']}]: {status} "
                  f"({r['wall_s']:.0f} s)", flush=True)
            write_json(options.json, results)  # after every runner: a cut-off run keeps them
    print()
    print_table(results)
    print()
    print_ratios(results)
    return 0 if all(r.get("ok") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
