"""English -> German (or any language) translation on the gettext catalogs, end to end.

Trains an `EncoderDecoder` on the translated program messages already on a
Linux machine (`/usr/share/locale/<lang>/LC_MESSAGES/*.mo`) with the 2017
paper's recipe: shared SentencePiece vocabulary, Adam(0.9, 0.98, 1e-9) on the
inverse-square-root warmup schedule, label smoothing 0.1, dropout 0.1, then
beam search (4 beams, length penalty 0.6). It prints sacreBLEU on the test
split next to the BLEU of copying the source unchanged, a table of sample
translations, and writes into the output folder:

    translator.keras       the trained model (loads with keras.saving.load_model)
    tokenizer.spm          the shared SentencePiece vocabulary
    cross_attention.png    one sentence's cross-attention, one panel per decoder layer
    results.json           the figures printed at the end

    KERAS_BACKEND=jax python examples/translate.py --minutes 8        # CPU-sized run
    KERAS_BACKEND=jax python examples/translate.py --preset transformer_base \\
        --mixed-precision --minutes 6 --tokens-per-batch 25000        # GPU run
    python examples/translate.py --smoke                              # seconds

The test split holds the messages whose English text hashes into it
(`keras_transformer.data.split_by_hash`), so no message is in two splits.
"""

import argparse
import json
import os
import time

import keras
import numpy as np

import keras_transformer as kt
from keras_transformer.data import END_ID
from keras_transformer.data import PAD_ID
from keras_transformer.data import START_ID

# A model that trains in minutes on a 2-core CPU: the base model's shape, smaller.
CPU_SIZE = dict(num_layers=3, d_model=128, num_heads=4, d_ff=512)
SMOKE_SIZE = dict(num_layers=1, d_model=32, num_heads=2, d_ff=64)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default=None,
                        help="transformer_base, transformer_big or transformer_tiny; "
                             "default: a 3-layer d_model=128 model sized for a CPU")
    parser.add_argument("--num-layers", type=int, help="override the preset's depth")
    parser.add_argument("--d-model", type=int, help="override the preset's width")
    parser.add_argument("--language", default="de", help="target language code")
    parser.add_argument("--catalogs", nargs="*", default=None,
                        help=".mo/.po files or folders to read instead of the system's")
    parser.add_argument("--epochs", type=int, default=100, help="at most this many epochs")
    parser.add_argument("--minutes", type=float, default=None,
                        help="training time budget (compilation included)")
    parser.add_argument("--vocabulary-size", type=int, default=4000)
    parser.add_argument("--tokens-per-batch", type=int, default=4096)
    parser.add_argument("--max-length", type=int, default=48,
                        help="longest source/target in tokens (longer pairs are left out)")
    parser.add_argument("--warmup", type=int, default=4000, help="warmup steps (paper: 4000)")
    parser.add_argument("--learning-rate-scale", type=float, default=1.0,
                        help="multiplies the paper's schedule")
    parser.add_argument("--bucket-width", type=int, default=16,
                        help="batches are padded to a multiple of this many tokens")
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--eval-batch-size", type=int, default=128)
    parser.add_argument("--eval-max-length", type=int, default=64,
                        help="test pairs longer than this many tokens are left out")
    parser.add_argument("--mixed-precision", action="store_true", help="bfloat16 compute")
    parser.add_argument("--output", default="runs/translate", help="output folder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true",
                        help="a seconds-long run on a few hundred pairs (for tests)")
    return parser.parse_args(argv)


def build_model(args, vocabulary_size):
    overrides = dict(vocab_size=vocabulary_size, pad_id=PAD_ID)
    if args.preset is None:
        preset = "transformer_tiny"
        overrides.update(SMOKE_SIZE if args.smoke else CPU_SIZE)
    else:
        preset = args.preset
    if args.num_layers:
        overrides["num_layers"] = args.num_layers
    if args.d_model:
        overrides["d_model"] = args.d_model
    model = kt.EncoderDecoder.from_preset(preset, **overrides)
    model.compile(optimizer=kt.training.paper_optimizer(
        model.config.d_model, warmup=args.warmup, scale=args.learning_rate_scale
    ))  # the paper's loss (label smoothing 0.1) and metrics come with compile()
    return model


def token_ids(tokenizer, texts):
    """Lists of ids, one per text (no special tokens)."""
    return [list(np.asarray(ids)) for ids in tokenizer(list(texts))]


def translate(model, tokenizer, source_ids, max_length, batch_size, beam_size, pad_to=16,
              alpha=0.6):
    """Beam-search (or greedy, `beam_size=None`) translations of the sources' ids
    (lists, no special tokens).

    Sources are sorted by length and padded to a multiple of `pad_to`; every
    batch is filled to `batch_size` rows, so the decode loop compiles once
    per padded length.
    """
    ids = [row[: max_length - 1] + [END_ID] for row in source_ids]
    order = np.argsort([len(row) for row in ids], kind="stable")
    outputs = [None] * len(ids)
    for begin in range(0, len(ids), batch_size):
        chunk = order[begin:begin + batch_size]
        width = min(-(-max(len(ids[i]) for i in chunk) // pad_to) * pad_to, max_length)
        batch = np.full((batch_size, width), PAD_ID, dtype="int32")
        for row, i in enumerate(chunk):
            batch[row, :len(ids[i])] = ids[i]
        batch[len(chunk):, 0] = END_ID  # filler rows: one real token, discarded
        generated = model.generate(
            batch, start_id=START_ID, stop_ids=(END_ID,), beam_size=beam_size, alpha=alpha,
            max_length=width + 50,  # the paper: source length + 50
        )
        for row, i in enumerate(chunk):
            tokens = [t for t in generated[row].tolist() if t not in (PAD_ID,)]
            outputs[i] = tokens[: tokens.index(END_ID)] if END_ID in tokens else tokens
    return [_detokenize(tokenizer, tokens) for tokens in outputs]


def _detokenize(tokenizer, tokens):
    text = tokenizer.detokenize(np.asarray(tokens, dtype="int32"))
    text = text.numpy() if hasattr(text, "numpy") else text
    return text.decode("utf-8") if isinstance(text, bytes) else str(text)


def heatmap_sentence(sources, references, hypotheses, sacrebleu):
    """A short one-line test sentence the model translated well (best sentence BLEU)."""
    candidates = [i for i, source in enumerate(sources)
                  if 3 <= len(source.split()) <= 8 and source.strip() == source
                  and source != references[i]] or list(range(len(sources)))
    return max(candidates,
               key=lambda i: sacrebleu.sentence_bleu(hypotheses[i], [references[i]]).score)


def plot_cross_attention(model, tokenizer, source, translation, path):
    """Head-averaged cross-attention of each decoder layer for one sentence."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    source_ids = token_ids(tokenizer, [source])[0] + [END_ID]
    target_ids = [START_ID] + token_ids(tokenizer, [translation])[0]
    maps = model.cross_attention_probabilities(
        np.array([source_ids], dtype="int32"), np.array([target_ids], dtype="int32")
    )
    pieces = lambda ids: [tokenizer.id_to_token(int(i)) for i in ids]  # noqa: E731
    layers = len(maps)
    figure, axes = plt.subplots(1, layers, figsize=(3.2 * layers + 1, 4), squeeze=False)
    for layer, (axis, weights) in enumerate(zip(axes[0], maps)):
        weights = keras.ops.convert_to_numpy(weights)[0].mean(axis=0)  # (T, S)
        axis.imshow(weights, cmap="viridis", vmin=0, vmax=1)
        axis.set_xticks(range(len(source_ids)), pieces(source_ids), rotation=90, fontsize=7)
        axis.set_yticks(range(len(target_ids)), pieces(target_ids), fontsize=7)
        axis.set_title(f"decoder layer {layer + 1}", fontsize=9)
    axes[0][0].set_ylabel("target (decoder input)")
    figure.suptitle("Cross-attention, averaged over heads (rows: target, columns: source)",
                    fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main(argv=None):
    args = parse_args(argv)
    import sacrebleu

    started = time.time()
    keras.utils.set_random_seed(args.seed)
    if args.mixed_precision:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    os.makedirs(args.output, exist_ok=True)

    pairs = kt.data.load_gettext_pairs(args.language, paths=args.catalogs)
    splits = kt.data.split_by_hash(pairs)
    if args.smoke:
        splits = {name: items[:400 if name == "train" else 40] for name, items in splits.items()}
        args.epochs, args.tokens_per_batch, args.max_length = 2, 256, 32
        args.eval_max_length, args.eval_batch_size, args.beam_size = 32, 16, 2
    print(f"{len(pairs):,} unique English->{args.language} pairs: "
          + ", ".join(f"{name} {len(items):,}" for name, items in splits.items()))

    texts = [text for pair in splits["train"] for text in pair]
    vocabulary = 256 if args.smoke else args.vocabulary_size
    tokenizer = kt.data.train_sentencepiece(texts, vocabulary_size=vocabulary)
    kt.data.save_tokenizer(tokenizer, args.output)
    print(f"shared SentencePiece vocabulary: {tokenizer.vocabulary_size():,} pieces")

    batching = dict(tokens_per_batch=args.tokens_per_batch, max_length=args.max_length,
                    bucket_width=args.bucket_width)
    train = kt.data.translation_dataset(splits["train"], tokenizer, seed=args.seed, **batching)
    validation = kt.data.translation_dataset(splits["validation"], tokenizer, shuffle=False,
                                             **batching)
    model = build_model(args, tokenizer.vocabulary_size())
    print(f"EncoderDecoder: {model.count_params():,} weights, "
          f"{model.config.num_encoder_layers}+{model.config.num_decoder_layers} layers, "
          f"d_model {model.config.d_model}, backend {keras.backend.backend()}")

    callbacks = []
    if args.minutes:
        callbacks.append(kt.training.TimeLimit(seconds=60 * args.minutes))
    train_start = time.time()
    history = model.fit(train, validation_data=validation, epochs=args.epochs,
                        shuffle=False,  # the dataset reshuffles itself each epoch
                        callbacks=callbacks, verbose=1 if not args.smoke else 2)
    train_seconds = time.time() - train_start

    tokenized = zip(*(token_ids(tokenizer, side) for side in zip(*splits["test"])))
    test = [(pair, s) for pair, (s, t) in zip(splits["test"], tokenized)
            if max(len(s), len(t)) < args.eval_max_length]  # one token left for END
    sources = [s for (s, _), _ in test]
    references = [t for (_, t), _ in test]
    decode_start = time.time()
    hypotheses = translate(model, tokenizer, [ids for _, ids in test], args.eval_max_length,
                           args.eval_batch_size, args.beam_size)
    decode_seconds = time.time() - decode_start
    bleu = sacrebleu.corpus_bleu(hypotheses, [references]).score
    copy_bleu = sacrebleu.corpus_bleu(sources, [references]).score

    model.save(os.path.join(args.output, "translator.keras"))
    example = heatmap_sentence(sources, references, hypotheses, sacrebleu)
    plot_cross_attention(model, tokenizer, sources[example], hypotheses[example],
                         os.path.join(args.output, "cross_attention.png"))
    results = dict(
        backend=keras.backend.backend(), language=args.language, pairs=len(pairs),
        test_pairs=len(test), bleu=bleu, copy_bleu=copy_bleu,
        epochs=len(history.history["loss"]),
        steps=int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
        train_seconds=train_seconds, decode_seconds=decode_seconds,
        total_seconds=time.time() - started, weights=model.count_params(),
        config={k: v for k, v in model.get_config().items() if not isinstance(v, dict)},
    )
    with open(os.path.join(args.output, "results.json"), "w") as f:
        json.dump(results, f, indent=2, default=str)
    print(f"\ntrained {results['steps']:,} steps in {train_seconds / 60:.1f} min, "
          f"decoded the test split in {decode_seconds / 60:.1f} min; wrote "
          f"{args.output}/translator.keras, tokenizer.spm, cross_attention.png, results.json")

    print("\nSamples from the test split:")
    rng = np.random.default_rng(args.seed)
    for i in sorted(rng.choice(len(test), size=min(8, len(test)), replace=False)):
        print(f"  EN   {sources[i]!r}\n  REF  {references[i]!r}\n  OURS {hypotheses[i]!r}\n")
    print(f"Test split: {len(test):,} of {len(splits['test']):,} pairs "
          f"(those within {args.eval_max_length} tokens), beam {args.beam_size}, alpha 0.6")
    print(f"  sacreBLEU, model:                  {bleu:6.2f}")
    print(f"  sacreBLEU, copying the source:     {copy_bleu:6.2f}")
    return results


if __name__ == "__main__":
    main()
