"""What quantization costs in quality: the demo translator's BLEU and the GPT example's
validation loss, float32 against int8 and int4.

Loads the models the examples saved, evaluates each as saved, then after
`quantize(mode)` on a fresh load, on the data the examples evaluate on:

- `--translator RUN` (`examples/translate.py --output RUN`, e.g. `make demo`'s
  `runs/demo`): sacreBLEU of `Translator.translate` (beam 4) on the message
  split and the new-programs split, next to copying the source.
- `--gpt RUN` (`examples/gpt.py --output RUN`): loss and perplexity on the
  validation split of the standard library's sources.

    KERAS_BACKEND=jax python benchmarks/quantized_quality.py --translator runs/demo --gpt runs/gpt
"""

import argparse
import os
import time

import keras

import keras_transformer as kt

MODES = ("float32", "int8", "int4")


def load(path, mode):
    task = keras.saving.load_model(path, safe_mode=True)
    if mode != "float32":
        task.model.quantize(mode)
    return task


def translator_figures(run, modes, beam_size, max_tokens):
    import sacrebleu

    splits, _ = kt.data.gettext_splits("de")
    path = os.path.join(run, "translator.keras")
    translator = load(path, "float32")
    rows = {}
    for split in ("test", "new_programs"):
        pairs = [(s, t) for (s, t), s_ids, t_ids in zip(
            splits[split], translator.tokenize([s for s, _ in splits[split]]),
            translator.tokenize([t for _, t in splits[split]]))
            if max(len(s_ids), len(t_ids)) < max_tokens]  # as examples/translate.py evaluates
        sources, references = [s for s, _ in pairs], [t for _, t in pairs]
        rows[split, "copy"] = (sacrebleu.corpus_bleu(sources, [references]).score, 0.0, len(pairs))
        for mode in modes:
            translator = load(path, mode)
            start = time.perf_counter()
            hypotheses = translator.translate(sources, beam_size=beam_size, batch_size=128,
                                              progress=False)
            seconds = time.perf_counter() - start
            rows[split, mode] = (sacrebleu.corpus_bleu(hypotheses, [references]).score, seconds,
                                 len(pairs))
    print(f"\nTranslator {path}: sacreBLEU, beam {beam_size} (decode seconds)")
    print("| split | messages | copy | " + " | ".join(modes) + " |")
    print("|---|---:|---:|" + "---:|" * len(modes))
    for split in ("test", "new_programs"):
        cells = [f"{rows[split, mode][0]:.2f} ({rows[split, mode][1]:.0f} s)" for mode in modes]
        print(f"| {split} | {rows[split, 'copy'][2]:,} | {rows[split, 'copy'][0]:.2f} | "
              + " | ".join(cells) + " |")


def gpt_figures(run, modes, sequence_length, batch_size):
    path = os.path.join(run, "gpt.keras")
    splits = kt.data.load_python_sources()
    print(f"\nGPT {path}: validation loss (perplexity), {sequence_length}-token windows")
    print("| mode | loss | perplexity | seconds |")
    print("|---|---:|---:|---:|")
    for mode in modes:
        generator = load(path, mode)
        validation = kt.data.language_model_dataset(
            splits["validation"], tokenizer=generator.tokenizer, sequence_length=sequence_length,
            batch_size=batch_size, shuffle=False)
        generator.model.compile()
        start = time.perf_counter()
        figures = generator.model.evaluate(validation, return_dict=True, verbose=0)
        print(f"| {mode} | {figures['loss']:.5f} | {figures['perplexity']:.3f} | "
              f"{time.perf_counter() - start:.0f} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--translator", help="a run folder of examples/translate.py")
    parser.add_argument("--gpt", help="a run folder of examples/gpt.py")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--eval-max-length", type=int, default=64,
                        help="as examples/translate.py: longer test pairs are left out")
    parser.add_argument("--sequence-length", type=int, default=128,
                        help="as examples/gpt.py's default")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)
    print(f"backend {keras.backend.backend()}")
    if args.translator:
        translator_figures(args.translator, args.modes, args.beam_size, args.eval_max_length)
    if args.gpt:
        gpt_figures(args.gpt, args.modes, args.sequence_length, args.batch_size)


if __name__ == "__main__":
    main()
