"""English -> German (or any language) translation on the gettext catalogs, end to end.

Trains an `EncoderDecoder` on the translated program messages already on a
Linux machine (`/usr/share/locale/<lang>/LC_MESSAGES/*.mo`) with the 2017
paper's recipe: shared SentencePiece vocabulary, Adam(0.9, 0.98, 1e-9) on the
inverse-square-root warmup schedule, label smoothing 0.1, dropout 0.1, the mean of
the last 5 weight snapshots (the paper averaged its last 5 checkpoints), then
beam search (4 beams, length penalty 0.6) through `kt.Translator`, which keeps
each message's white space layout and placeholders. It prints, on the test
split and on the messages of whole programs held out of training, sacreBLEU
next to the BLEU of copying the source unchanged and how many translations
keep their placeholders and outer white space (ours and the human
references'), a table of sample translations, and writes into the output folder:

    translator.keras       a kt.Translator: model and vocabulary (keras.saving.load_model)
    tokenizer.spm          the shared SentencePiece vocabulary
    <program>.pot          one held-out program's catalog, empty, for translate-po
    cross_attention.png    one sentence's cross-attention, one panel per decoder layer
    results.json           the figures printed at the end

    KERAS_BACKEND=jax python examples/translate.py --minutes 8        # CPU-sized run
    KERAS_BACKEND=jax python examples/translate.py --preset transformer_base \\
        --mixed-precision --minutes 6 --tokens-per-batch 25000        # GPU run
    python examples/translate.py --smoke                              # seconds

The test split holds the messages whose English text hashes into it
(`keras_transformer.data.split_by_hash`), so no message is in two splits; the
new-programs split holds every message of the catalogs
`keras_transformer.data.hold_out_catalogs` picks, and none of their English
texts is trained on.
"""

import argparse
import json
import os
import time

import keras
import numpy as np

import keras_transformer as kt
from keras_transformer.messages.fidelity import fidelity
from keras_transformer.messages.placeholders import find_placeholders
from keras_transformer.messages.training_pairs import translation_pairs
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
    parser.add_argument("--steps", type=int, default=None,
                        help="train at most this many steps (equal training on any machine)")
    parser.add_argument("--vocabulary-size", type=int, default=4000)
    parser.add_argument("--tokens-per-batch", type=int, default=4096)
    parser.add_argument("--max-length", type=int, default=48,
                        help="longest source/target in tokens (longer pairs are left out)")
    parser.add_argument("--warmup", type=int, default=4000, help="warmup steps (paper: 4000)")
    parser.add_argument("--learning-rate-scale", type=float, default=1.0,
                        help="multiplies the paper's schedule")
    parser.add_argument("--bucket-width", type=int, default=16,
                        help="batches are padded to a multiple of this many tokens")
    parser.add_argument("--average-checkpoints", type=int, default=5,
                        help="end with the mean of the last N weight snapshots, as the paper "
                             "averaged its last 5 checkpoints (0: the last weights)")
    parser.add_argument("--average-every", type=int, default=60,
                        help="steps between the snapshots that --average-checkpoints averages")
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


def heatmap_sentence(sources, references, hypotheses, sacrebleu):
    """A short one-line test sentence the model translated well (best sentence BLEU)."""
    candidates = [i for i, source in enumerate(sources)
                  if 3 <= len(source.split()) <= 8 and source.strip() == source
                  and source != references[i]] or list(range(len(sources)))
    return max(candidates,
               key=lambda i: sacrebleu.sentence_bleu(hypotheses[i], [references[i]]).score)


def plot_cross_attention(translator, source, translation, path):
    """Head-averaged cross-attention of each decoder layer for one sentence."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model, tokenizer = translator.model, translator.tokenizer
    source_ids = translator.tokenize([source])[0] + [END_ID]
    target_ids = [START_ID] + translator.tokenize([translation])[0]
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


def write_template(catalog_path, path, keep_translated=None):
    """A `.pot`-like copy of a compiled catalog: its entries with empty translations.

    A `.mo` file has no flags, so entries with printf directives are flagged
    `c-format` (as xgettext does for C sources) and `msgfmt --check-format`
    checks them. `keep_translated(msgid)`, when given, says which entries keep
    their translations (a catalog a team has half translated).
    """
    import polib

    compiled = polib.mofile(catalog_path) if catalog_path.endswith(".mo") else polib.pofile(
        catalog_path)
    template = polib.POFile()  # written as UTF-8, and says so
    template.metadata = dict(compiled.metadata, **{
        "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit"})
    for entry in compiled:
        flags = ["c-format"] if any(p.startswith("%") and p != "%%" for p in
                                    find_placeholders(entry.msgid)) else []
        if keep_translated is not None and keep_translated(entry.msgid):
            msgstr, msgstr_plural = entry.msgstr, dict(entry.msgstr_plural)
        else:
            msgstr, msgstr_plural = "", {0: "", 1: ""}
        template.append(polib.POEntry(
            msgctxt=entry.msgctxt, msgid=entry.msgid, msgid_plural=entry.msgid_plural,
            msgstr=msgstr if not entry.msgid_plural else None,
            msgstr_plural=msgstr_plural if entry.msgid_plural else {}, flags=flags,
        ))
    template.save(path)
    return path


def evaluate(translator, pairs, args, sacrebleu):
    """BLEU, the copy baseline and the fidelity of references and of ours on `pairs`."""
    kept = [(s, t) for (s, t), s_ids, t_ids in zip(
        pairs, translator.tokenize([s for s, _ in pairs]), translator.tokenize([t for _, t in pairs]))
        if max(len(s_ids), len(t_ids)) < args.eval_max_length]
    sources, references = [s for s, _ in kept], [t for _, t in kept]
    start = time.time()
    hypotheses = translator.translate(sources, beam_size=args.beam_size,
                                      batch_size=args.eval_batch_size)
    seconds = time.time() - start
    ours, theirs = fidelity(sources, hypotheses), fidelity(sources,
                                                                                   references)
    return dict(
        pairs=len(kept), bleu=sacrebleu.corpus_bleu(hypotheses, [references]).score,
        copy_bleu=sacrebleu.corpus_bleu(sources, [references]).score, decode_seconds=seconds,
        placeholder_messages=ours.placeholder_messages,
        placeholders_kept=dict(ours=ours.placeholder_rate, references=theirs.placeholder_rate),
        whitespace_messages=ours.whitespace_messages,
        whitespace_kept=dict(ours=ours.whitespace_rate, references=theirs.whitespace_rate),
    ), sources, references, hypotheses


def report(name, figures, args):
    print(f"{name}: {figures['pairs']:,} messages (within {args.eval_max_length} tokens), "
          f"beam {args.beam_size}, alpha 0.6, coverage penalty "
          f"{kt.tasks.translator.COVERAGE_BETA}, decoded in {figures['decode_seconds']:.0f} s")
    print(f"  sacreBLEU, model:                  {figures['bleu']:6.2f}")
    print(f"  sacreBLEU, copying the source:     {figures['copy_bleu']:6.2f}")
    for key, what in (("placeholders_kept", "placeholder_messages"),
                      ("whitespace_kept", "whitespace_messages")):
        rates = figures[key]
        label = ("placeholders kept" if key == "placeholders_kept"
                 else "outer white space kept")
        print(f"  {label + ',':24s} of {figures[what]:4d} messages: ours "
              f"{100 * rates['ours']:5.1f}%, human references {100 * rates['references']:5.1f}%")


def main(argv=None):
    args = parse_args(argv)
    import sacrebleu

    started = time.time()
    keras.utils.set_random_seed(args.seed)
    if args.mixed_precision:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    os.makedirs(args.output, exist_ok=True)

    splits, held_out = kt.data.gettext_splits(args.language, paths=args.catalogs)
    if args.smoke:
        splits = {name: items[:400 if name == "train" else 40] for name, items in splits.items()}
        args.epochs, args.tokens_per_batch, args.max_length = 2, 256, 32
        args.eval_max_length, args.eval_batch_size, args.beam_size = 32, 16, 2
    print(f"English->{args.language} messages: "
          + ", ".join(f"{name} {len(items):,}" for name, items in splits.items())
          + f" (new_programs: {', '.join(sorted({kt.data.catalog_domain(p) for p in held_out}))}"
          ", held out of training)")

    # The translator translates each piece of a message's layout with its placeholders
    # replaced by slot symbols; it is trained on the same.
    train_pairs = translation_pairs(splits["train"])
    validation_pairs = translation_pairs(splits["validation"])
    texts = [text for pair in train_pairs for text in pair]
    vocabulary = 256 if args.smoke else args.vocabulary_size
    tokenizer = kt.data.train_sentencepiece(texts, vocab_size=vocabulary,
                                            placeholder_slots=True)
    kt.data.save_tokenizer(tokenizer, args.output)
    print(f"{len(train_pairs):,} training pieces; shared SentencePiece vocabulary: "
          f"{tokenizer.vocabulary_size():,} pieces")

    batching = dict(tokens_per_batch=args.tokens_per_batch, max_length=args.max_length,
                    bucket_width=args.bucket_width)
    train = kt.data.translation_dataset(train_pairs, tokenizer, seed=args.seed, **batching)
    validation = kt.data.translation_dataset(validation_pairs, tokenizer, shuffle=False,
                                             **batching)
    model = build_model(args, tokenizer.vocabulary_size())
    print(f"EncoderDecoder: {model.count_params():,} weights, "
          f"{model.config.num_encoder_layers}+{model.config.num_decoder_layers} layers, "
          f"d_model {model.config.d_model}, backend {keras.backend.backend()}")

    callbacks = []
    if args.minutes:
        callbacks.append(kt.training.TimeLimit(seconds=60 * args.minutes))
    if args.steps:
        callbacks.append(kt.training.StepLimit(args.steps))
    if args.average_checkpoints:
        callbacks.append(kt.training.CheckpointAveraging(args.average_checkpoints,
                                                         every_n_steps=args.average_every))
    train_start = time.time()
    history = model.fit(train, validation_data=validation, epochs=args.epochs,
                        shuffle=False,  # the dataset reshuffles itself each epoch
                        callbacks=callbacks, verbose=1 if not args.smoke else 2)
    train_seconds = time.time() - train_start

    translator = kt.Translator(model, tokenizer, source_language="en",
                               target_language=args.language)
    translator.save(os.path.join(args.output, "translator.keras"))
    figures, samples = {}, {}
    for name in ("test", "new_programs"):
        if splits[name]:
            figures[name], *samples[name] = evaluate(translator, splits[name], args, sacrebleu)

    sources, references, hypotheses = samples["test"]
    example = heatmap_sentence(sources, references, hypotheses, sacrebleu)
    plot_cross_attention(translator, sources[example], hypotheses[example],
                         os.path.join(args.output, "cross_attention.png"))
    template = None
    if held_out:  # the held-out program that make demo fills with translate-po
        catalog = min(held_out, key=lambda p: abs(len(kt.data.read_catalog(p)) - 250))
        template = write_template(catalog, os.path.join(
            args.output, kt.data.catalog_domain(catalog) + ".pot"))
    results = dict(
        backend=keras.backend.backend(), language=args.language,
        pairs={name: len(items) for name, items in splits.items()},
        training_pieces=len(train_pairs), **figures,
        epochs=len(history.history["loss"]),
        steps=int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
        train_seconds=train_seconds, total_seconds=time.time() - started,
        weights=model.count_params(), template=template,
        config={k: v for k, v in model.get_config().items() if not isinstance(v, dict)},
    )
    with open(os.path.join(args.output, "results.json"), "w") as f:
        json.dump(results, f, indent=2, default=str)
    print(f"\ntrained {results['steps']:,} steps in {train_seconds / 60:.1f} min; wrote "
          f"{args.output}/translator.keras, tokenizer.spm, cross_attention.png, results.json"
          + (f", {os.path.basename(template)}" if template else ""))

    print("\nSamples from the test split:")
    rng = np.random.default_rng(args.seed)
    for i in sorted(rng.choice(len(sources), size=min(8, len(sources)), replace=False)):
        print(f"  EN   {sources[i]!r}\n  REF  {references[i]!r}\n  OURS {hypotheses[i]!r}\n")
    report("Test split (messages of programs seen in training)", figures["test"], args)
    if "new_programs" in figures:
        report("New programs (whole catalogs held out of training)", figures["new_programs"],
               args)
    return results


if __name__ == "__main__":
    main()
