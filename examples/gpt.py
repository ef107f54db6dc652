"""A GPT on real text every Python install has: the standard library's own sources.

Trains a `DecoderOnly` (GPT-2 layout: pre-LN, learned positions, GELU, tied
output) on the `.py` files of this interpreter's standard library with the
GPT recipe (AdamW, warmup + cosine, gradient clipping), then prints the
validation perplexity (per SentencePiece token) and a few continuations of
code prompts with top-k and with top-p (nucleus) sampling. The vocabulary
keeps every space, tab and newline, so the samples keep Python's indentation.

    KERAS_BACKEND=jax python examples/gpt.py --minutes 10    # CPU-sized run
    python examples/gpt.py --smoke                           # seconds

Writes into `--output`: `gpt.keras` (a `kt.TextGenerator`: model and vocabulary,
`keras.saving.load_model("gpt.keras").generate("def parse(")`), `tokenizer.spm`
and `results.json`.

The vocabulary is SentencePiece with every character kept (`keep_whitespace=True`:
no normalization, byte fallback), not GPT-2's byte-level BPE: both keep code
byte for byte, and SentencePiece is what the translation example trains, so
the two examples share one tokenizer path. `kt.TextGenerator` takes GPT-2's BPE
too (keras-hub's `GPT2Tokenizer`), for converted GPT-2 checkpoints.
"""

import argparse
import json
import os
import time

import keras
import numpy as np

import keras_transformer as kt
from keras_transformer.generation import Sampler

PROMPTS = ["def ", "import os\n\n\nclass ", "    for i in range(", '"""Return the ']
CPU_SIZE = dict(num_layers=4, d_model=192, num_heads=4, d_ff=768)
SMOKE_SIZE = dict(num_layers=1, d_model=32, num_heads=2, d_ff=64)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default=None,
                        help="a DecoderOnly preset (e.g. gpt2_small); default: a 4-layer "
                             "d_model=192 model sized for a CPU")
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--vocabulary-size", type=int, default=4000)
    parser.add_argument("--tokenizer-files", type=int, default=200,
                        help="train the vocabulary on this many training files")
    parser.add_argument("--epochs", type=int, default=100, help="at most this many epochs")
    parser.add_argument("--minutes", type=float, default=None, help="training time budget")
    parser.add_argument("--steps", type=int, default=None,
                        help="train at most this many steps (equal training on any machine)")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--new-tokens", type=int, default=64, help="tokens per sample")
    parser.add_argument("--mixed-precision", action="store_true", help="bfloat16 compute")
    parser.add_argument("--output", default="runs/gpt")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="a seconds-long run on a few files")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    keras.utils.set_random_seed(args.seed)
    if args.mixed_precision:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    os.makedirs(args.output, exist_ok=True)
    if args.smoke:
        args.epochs, args.sequence_length, args.batch_size = 1, 32, 8
        args.vocabulary_size, args.tokenizer_files, args.new_tokens = 400, 10, 8

    splits = kt.data.load_python_sources()
    if args.smoke:
        splits = {name: items[:10 if name == "train" else 2] for name, items in splits.items()}
    print("standard library sources: " + ", ".join(
        f"{name} {len(files)} files ({sum(map(len, files)) / 1e6:.1f} MB)"
        for name, files in splits.items()))
    tokenizer = kt.data.train_sentencepiece(
        splits["train"][:args.tokenizer_files], args.vocabulary_size, keep_whitespace=True
    )
    kt.data.save_tokenizer(tokenizer, args.output)

    lm_data = dict(tokenizer=tokenizer, sequence_length=args.sequence_length,
                   batch_size=args.batch_size)
    train = kt.data.language_model_dataset(splits["train"], seed=args.seed, **lm_data)
    validation = kt.data.language_model_dataset(splits["validation"], shuffle=False, **lm_data)
    steps_per_epoch = int(train.cardinality())
    print(f"vocabulary {tokenizer.vocabulary_size():,} pieces; {steps_per_epoch:,} batches "
          f"of {args.batch_size} x {args.sequence_length} tokens per epoch")

    # Our SentencePiece vocabulary has a padding id (the language-model batches pad the last
    # window with it) and an end id that separates files: the model's pad_id and end_id.
    overrides = dict(vocab_size=tokenizer.vocabulary_size(), max_length=args.sequence_length,
                     pad_id=kt.data.PAD_ID, end_id=kt.data.END_ID)
    if args.preset is None:
        overrides.update(SMOKE_SIZE if args.smoke else CPU_SIZE)
    model = kt.DecoderOnly.from_preset(args.preset or "gpt2_tiny", **overrides)
    total_steps = args.epochs * steps_per_epoch
    if args.minutes and not args.smoke:
        total_steps = min(total_steps, int(args.minutes * 60 * 3))  # a rough cap for the cosine
    if args.steps:
        total_steps = min(total_steps, args.steps)
    model.compile(optimizer=kt.training.gpt_optimizer(
        peak_learning_rate=args.learning_rate, warmup_steps=max(1, total_steps // 20),
        total_steps=max(2, total_steps),
    ))
    print(f"DecoderOnly: {model.count_params():,} weights, backend {keras.backend.backend()}")
    callbacks = [kt.training.TimeLimit(60 * args.minutes)] if args.minutes else []
    if args.steps:
        callbacks.append(kt.training.StepLimit(args.steps))
    start = time.time()
    model.fit(train, validation_data=validation, epochs=args.epochs, shuffle=False,
              callbacks=callbacks, verbose=2 if args.smoke else 1)
    train_seconds = time.time() - start
    evaluation = model.evaluate(validation, return_dict=True, verbose=0)
    print(f"\nvalidation perplexity: {evaluation['perplexity']:.2f} per token "
          f"(loss {evaluation['loss']:.3f}) after {train_seconds / 60:.1f} min")

    # The model and its vocabulary travel together: text in, text out.
    generator = kt.TextGenerator(model, tokenizer)
    samples = {}
    for name, sampler in (("top-k 40", Sampler(top_k=40, seed=args.seed)),
                          ("top-p 0.9", Sampler(top_p=0.9, seed=args.seed))):
        longest = max(len(ids) for ids in generator.tokenize(PROMPTS))
        samples[name] = generator.generate(  # the learned position table bounds the length
            PROMPTS, max_new_tokens=min(args.new_tokens, args.sequence_length - longest),
            sampler=sampler)
        print(f"\n===== samples, {name} =====")
        for text in samples[name]:
            print(text)
            print("-----")

    generator.save(os.path.join(args.output, "gpt.keras"))
    results = dict(backend=keras.backend.backend(), perplexity=evaluation["perplexity"],
                   loss=evaluation["loss"], train_seconds=train_seconds,
                   steps=int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
                   weights=model.count_params())
    with open(os.path.join(args.output, "results.json"), "w") as f:
        json.dump(results, f, indent=2, default=str)
    return results


if __name__ == "__main__":
    main()
