"""Peak memory and time of one training step with and without `remat=True` (JAX, CPU).

A small GPT (`DecoderOnly`: 4 layers, d_model 256, 4 heads, d_ff 1024, vocabulary 4096,
no dropout, batch 1) trains at T = 2,048 and 8,192 positions. Every layer attends to a
sliding window of `--window` positions (Mistral's layout; `--window 0`: dense attention),
so that the model without remat fits a small machine at T = 8,192: dense attention keeps
`(heads, T, T)` tensors per layer, several GiB each at that length. The step is Keras' own
`model.train_step` (forward, backward, Adam update), jitted as `fit` jits it (the state
donated). Memory, two ways:

* XLA's `memory_analysis()` of the compiled step: arguments + outputs + temporaries, less
  the outputs that reuse donated arguments ("XLA total"); the temporaries hold what the
  backward pass keeps of the forward pass, which is what rematerialization shrinks;
* the peak resident memory (`ru_maxrss`) of a fresh process per setting that builds the
  model, compiles the step and runs it once: everything the process held, Python, JAX and
  the compiler included ("+ step": that peak less the peak before compiling).

XLA on CPU (jaxlib 0.10) removes the optimization barriers `jax.checkpoint` puts around
each recomputation (its `cse_barrier_expander` pass) before a later common-subexpression
pass merges the recomputation back into the forward pass: the compiled step is then the
one without remat. The script compiles with that pass disabled (the compile option
`xla_disable_hlo_passes`, which `XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander`
sets for a whole process), and also reports XLA's figures under the default passes
("remat, XLA default"), compiled only.

Per length, one process compiles the three steps (XLA's figures) and times the two
settings: the median of `--steps` steps, alternating, after a warm-up step each. It prints
a table and, per length, the ratios remat / no remat.

    python benchmarks/remat_memory.py                   # T = 2048 and 8192, minutes
    python benchmarks/remat_memory.py --lengths 2048 --window 0 --steps 5   # dense
    python benchmarks/remat_memory.py --tiny            # a smoke run

`--tiny` (2 layers, d_model 32, T = 256) is the test suite's: its XLA figures and times
come from the script's own process and one fresh process measures the resident memory of
the remat setting alone (the no-remat row shows none, nor do the ratios).
"""

import os

os.environ["KERAS_BACKEND"] = "jax"  # memory_analysis() is XLA's: JAX only, children too
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

BARRIER_PASS = "cse_barrier_expander"
"""The XLA pass without which XLA on CPU keeps `jax.checkpoint`'s recomputation."""

FULL = dict(layers=4, d_model=256, heads=4, vocab=4096, window=512, lengths=[2048, 8192],
            steps=3)
TINY = dict(layers=2, d_model=32, heads=2, vocab=128, window=64, lengths=[256], steps=2)
SETTINGS = (False, True)  # remat off, on


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def build(options, length, remat):
    """The model (the same weights for both settings), compiled, and one batch `(x, y)`."""
    import keras
    import numpy as np

    import keras_transformer as kt

    keras.utils.set_random_seed(0)
    window = dict(attention_window=options.window, banded_layers="all") if options.window else {}
    model = kt.DecoderOnly(vocab_size=options.vocab, num_layers=options.layers,
                           d_model=options.d_model, num_heads=options.heads,
                           d_ff=4 * options.d_model, max_length=length, dropout=0.0,
                           remat=remat, **window)
    model.compile(optimizer=keras.optimizers.Adam(1e-4),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.optimizer.build(model.trainable_variables)
    ids = np.random.default_rng(0).integers(0, options.vocab, size=(options.batch, length + 1))
    return model, (ids[:, :-1].astype("int32"), ids[:, 1:].astype("int32"))


def disabled_passes(keep_barriers):
    """The compile option `xla_disable_hlo_passes`: those `XLA_FLAGS` disables, with or
    without `BARRIER_PASS` (an option replaces the flag's list)."""
    passes = [name for flag in os.environ.get("XLA_FLAGS", "").split()
              if flag.startswith("--xla_disable_hlo_passes=")
              for name in flag.split("=", 1)[1].split(",") if name and name != BARRIER_PASS]
    return ",".join(passes + [BARRIER_PASS] if keep_barriers else passes)


class Step:
    """Keras' `train_step` for one model, jitted as `fit` jits it; `run()` times one step.

    `keep_barriers`: compiled without `BARRIER_PASS`, so that XLA:CPU keeps the remat."""

    def __init__(self, model, data, keep_barriers=True):
        import jax

        self.data = data
        jax.eval_shape(model.train_step, self._state(model), data)  # builds the loss trackers
        self.state = self._state(model)
        self.compiled = jax.jit(model.train_step, donate_argnums=0).lower(
            self.state, data).compile(
                compiler_options={"xla_disable_hlo_passes": disabled_passes(keep_barriers)})
        analysis = self.compiled.memory_analysis()
        self.temp_bytes = analysis.temp_size_in_bytes
        self.total_bytes = (analysis.argument_size_in_bytes + analysis.output_size_in_bytes
                            + analysis.temp_size_in_bytes - analysis.alias_size_in_bytes)
        self.loss = None

    @staticmethod
    def _state(model):
        return tuple([v.value for v in variables] for variables in (
            model.trainable_variables, model.non_trainable_variables,
            model.optimizer.variables, model.metrics_variables))

    def run(self):
        import jax

        start = time.perf_counter()
        logs, self.state = self.compiled(self.state, self.data)
        jax.block_until_ready(self.state)
        self.loss = float(logs["loss"])
        return time.perf_counter() - start


def side_by_side(options, length):
    """In one process: XLA's figures of both settings and of remat under XLA's default
    passes (compiled only), and the median step times of both settings."""
    steps = {remat: Step(*build(options, length, remat)) for remat in SETTINGS}
    default = Step(*build(options, length, True), keep_barriers=False)
    times = {remat: [] for remat in SETTINGS}
    for remat in SETTINGS:
        steps[remat].run()  # warm-up
    for _ in range(options.steps):
        for remat in SETTINGS:
            times[remat].append(steps[remat].run())
    return [{"remat": remat, "xla_temp_bytes": step.temp_bytes,
             "xla_total_bytes": step.total_bytes,
             "step_seconds": statistics.median(step_times) if step_times else None,
             "loss": step.loss}
            for remat, step, step_times in ((False, steps[False], times[False]),
                                            (True, steps[True], times[True]),
                                            (True, default, []))]  # default: compiled only


def resident(options, length, remat):
    """In a fresh process: its peak resident memory around compiling and one step."""
    model, data = build(options, length, remat)
    before = peak_rss_bytes()
    Step(model, data).run()
    return {"rss_peak_bytes": peak_rss_bytes(), "rss_step_bytes": peak_rss_bytes() - before}


def in_process(options, task, length, remat=False):
    """Runs `task` ("side_by_side" or "resident") in a fresh process."""
    command = [sys.executable, os.path.abspath(__file__), "--task", task, str(length),
               str(int(remat)), *_shape_arguments(options)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{task} at T={length} (remat={remat}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(options):
    """Rows, per length: no remat, remat, and remat under XLA's default CPU passes.

    Each setting's resident memory comes from a fresh process of its own (`--tiny`: the
    remat setting's alone), all started before this process compiles anything: on Linux a
    process starts with the peak of the one that started it (`ru_maxrss` survives `exec`).
    A full run compiles and times in a fresh process per length; `--tiny`, in this one."""
    resident_memory = {(length, remat): in_process(options, "resident", length, remat=remat)
                       for length in options.lengths
                       for remat in ((True,) if options.tiny else SETTINGS)}
    rows = []
    for length in options.lengths:
        if options.tiny:
            plain, remat, default = side_by_side(options, length)
        else:
            plain, remat, default = in_process(options, "side_by_side", length)
        for row, setting in ((plain, "no remat"), (remat, "remat"),
                             (default, "remat, XLA default")):
            row.update(length=length, setting=setting, rss_peak_bytes=None, rss_step_bytes=None)
            if row is not default:
                row.update(resident_memory.get((length, row["remat"]), {}))
        rows += [plain, remat, default]
    return rows


def _shape_arguments(options):
    return ["--layers", str(options.layers), "--d-model", str(options.d_model),
            "--heads", str(options.heads), "--vocab", str(options.vocab),
            "--window", str(options.window), "--batch", str(options.batch),
            "--steps", str(options.steps)]


def _cell(value, scale, digits, width):
    return f"{'-':>{width}}" if value is None else f"{value / scale:>{width}.{digits}f}"


def print_table(rows):
    print(f"{'T':>6}  {'setting':<18} {'XLA temp MiB':>12} {'XLA total MiB':>13} "
          f"{'peak RSS MiB':>12} {'+ step MiB':>10} {'s/step':>7} {'loss':>7}")
    for row in rows:
        cells = [_cell(row[name], 2**20, 1, width) for name, width in (
            ("xla_temp_bytes", 12), ("xla_total_bytes", 13), ("rss_peak_bytes", 12),
            ("rss_step_bytes", 10))]
        cells += [_cell(row["step_seconds"], 1, 3, 7), _cell(row["loss"], 1, 4, 7)]
        print(f"{row['length']:>6}  {row['setting']:<18} " + " ".join(cells))


def print_ratios(plain, remat, default):
    """The line the smoke test reads: remat / no remat at one length ("-": not measured)."""
    def ratio(name, row=remat):
        if row[name] is None or plain[name] is None:
            return "-"
        return f"{row[name] / (plain[name] or 1):.2f}"

    print(f"ratio remat/no-remat at T={plain['length']}: XLA total "
          f"{ratio('xla_total_bytes')} (XLA's default CPU passes: "
          f"{ratio('xla_total_bytes', default)}), peak RSS {ratio('rss_peak_bytes')}, "
          f"+ step {ratio('rss_step_bytes')}, step time {ratio('step_seconds')}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true",
                        help="a smoke run: 2 layers, T = 256, d_model 32, window 64, "
                        "vocabulary 128; resident memory of the remat setting alone")
    parser.add_argument("--lengths", type=int, nargs="+")
    parser.add_argument("--layers", type=int)
    parser.add_argument("--d-model", type=int)
    parser.add_argument("--heads", type=int)
    parser.add_argument("--vocab", type=int)
    parser.add_argument("--window", type=int, help="sliding window of every layer; 0: dense")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--steps", type=int, help="timed steps per setting (median)")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--task", nargs=3, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    for name, value in (TINY if options.tiny else FULL).items():
        if getattr(options, name) is None:
            setattr(options, name, value)
    if options.task:  # a child process
        task, length, remat = options.task[0], int(options.task[1]), bool(int(options.task[2]))
        if task == "resident":
            print(json.dumps(resident(options, length, remat)))
        else:
            print(json.dumps(side_by_side(options, length)))
        return None
    import jax

    attention = f"window {options.window}" if options.window else "dense attention"
    print(f"DecoderOnly: {options.layers} layers, d_model {options.d_model}, {options.heads} "
          f"heads, d_ff {4 * options.d_model}, vocabulary {options.vocab}, {attention}, batch "
          f"{options.batch}, no dropout; one train step (forward, backward, Adam); JAX "
          f"{jax.__version__} on {jax.devices()[0].platform.upper()}, {os.cpu_count()} cores "
          f"({platform.machine()}); XLA flags: {os.environ.get('XLA_FLAGS', '')}, compile "
          f"option xla_disable_hlo_passes={disabled_passes(True)}")
    rows = measure(options)
    print_table(rows)
    for length in options.lengths:
        print_ratios(*(row for row in rows if row["length"] == length))
    if options.json:
        with open(options.json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
