"""Greedy vs beam 4 vs beam 8 on a trained translator: BLEU and output length, side by side.

Translates the splits `examples/translate.py` evaluates on (`kt.data.gettext_splits`: the
test split of programs seen in training and the programs held out of it) with the
`kt.Translator` that `make demo` writes, once per search, exactly as a user would call it
(`Translator.translate`: layout kept, placeholders protected), and prints per split sacreBLEU,
the mean output length in characters, BLEU's length ratio (output tokens over reference
tokens: below 1 is what BLEU's brevity penalty punishes), how many outputs run away (over 3x
their reference's length) and the decode time of each search, with the references' mean
length and the copy baseline:

    KERAS_BACKEND=jax python benchmarks/beam_search_bleu.py --run runs/demo
    KERAS_BACKEND=jax python benchmarks/beam_search_bleu.py --run runs/demo --limit 500 --json out.json
"""

import argparse
import json
import os
import time

import keras
import numpy as np

import keras_transformer as kt


def kept_pairs(translator, pairs, max_tokens):
    """The pairs whose source and reference both tokenize to fewer than `max_tokens` (as
    `examples/translate.py` evaluates)."""
    sources = translator.tokenize([s for s, _ in pairs])
    targets = translator.tokenize([t for _, t in pairs])
    return [pair for pair, s, t in zip(pairs, sources, targets)
            if max(len(s), len(t)) < max_tokens]


def compare(translator, pairs, searches, alpha, beta, batch_size, sacrebleu):
    """`{search name: figures}` for the searches (`None`: greedy, else a beam width)."""
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    figures = {}
    for beam in searches:
        start = time.perf_counter()
        hypotheses = translator.translate(sources, beam_size=beam, alpha=alpha, beta=beta,
                                          batch_size=batch_size, progress=False)
        seconds = time.perf_counter() - start
        bleu = sacrebleu.corpus_bleu(hypotheses, [references])
        figures["greedy" if beam is None else f"beam {beam}"] = dict(
            bleu=bleu.score,
            length_ratio=bleu.sys_len / bleu.ref_len,  # BLEU's tokens, ours over the references'
            mean_characters=float(np.mean([len(h) for h in hypotheses])),
            runaway=sum(len(h) > 3 * max(len(r), 1) for h, r in zip(hypotheses, references)),
            seconds=seconds,
        )
    return figures


def report(name, pairs, figures, sacrebleu):
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    print(f"{name}: {len(pairs):,} pairs; references: mean "
          f"{np.mean([len(r) for r in references]):.1f} characters; copy-the-source BLEU "
          f"{sacrebleu.corpus_bleu(sources, [references]).score:.2f}")
    for search, f in figures.items():
        print(f"  {search:<8} BLEU {f['bleu']:6.2f}   mean length {f['mean_characters']:5.1f} "
              f"characters   length ratio {f['length_ratio']:.3f}   {f['runaway']:4d} over 3x "
              f"the reference   {f['seconds']:6.1f} s")
    if "greedy" in figures:
        greedy = figures["greedy"]
        for search, f in figures.items():
            if search != "greedy":
                print(f"  {search} - greedy: {f['bleu'] - greedy['bleu']:+.2f} BLEU, "
                      f"{f['mean_characters'] - greedy['mean_characters']:+.1f} characters")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", default="runs/demo", help="folder with translator.keras")
    parser.add_argument("--language", default="de")
    parser.add_argument("--catalogs", nargs="*", default=None,
                        help=".mo/.po files or folders instead of the system's catalogs")
    parser.add_argument("--splits", nargs="+", default=["test", "new_programs"],
                        choices=["test", "new_programs", "validation"])
    parser.add_argument("--searches", nargs="+", default=["greedy", "4", "8"],
                        help="'greedy' or beam widths")
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--beta", type=float, default=kt.tasks.translator.COVERAGE_BETA,
                        help="coverage penalty weight of the beams (default: Translator's)")
    parser.add_argument("--eval-max-length", type=int, default=64,
                        help="pairs of this many tokens or more are left out (as the demo does)")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--limit", type=int, default=None, help="first N pairs of each split")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    import sacrebleu

    translator = keras.saving.load_model(os.path.join(args.run, "translator.keras"))
    searches = [None if s == "greedy" else int(s) for s in args.searches]
    splits, _ = kt.data.gettext_splits(args.language, paths=args.catalogs)
    print(f"backend={keras.backend.backend()} alpha={args.alpha} beta={args.beta} "
          f"model={args.run}/translator.keras ({translator.model.count_params():,} weights)")
    results = {}
    for name in args.splits:
        pairs = kept_pairs(translator, splits[name], args.eval_max_length)[: args.limit]
        if not pairs:
            print(f"{name}: no pairs within {args.eval_max_length} tokens")
            continue
        figures = compare(translator, pairs, searches, args.alpha, args.beta, args.batch_size,
                          sacrebleu)
        report(name, pairs, figures, sacrebleu)
        results[name] = dict(pairs=len(pairs), searches=figures)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(dict(alpha=args.alpha, beta=args.beta, splits=results), out, indent=2)
    return results


if __name__ == "__main__":
    main()
