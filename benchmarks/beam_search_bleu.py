"""Greedy vs beam 4 vs beam 8 on a trained translator: BLEU and output length, side by side.

Decodes the test split of the gettext catalogs (the split `examples/translate.py`
evaluates on) with the model and vocabulary that `make demo` writes, once per
search, and prints sacreBLEU, the mean output length in characters and the
decode time of each, how many outputs run away (over 3x their reference's length), with the
references' mean length and the copy baseline:

    KERAS_BACKEND=jax python benchmarks/beam_search_bleu.py --run runs/demo
    KERAS_BACKEND=jax python benchmarks/beam_search_bleu.py --run runs/demo --limit 500 --json out.json
"""

import argparse
import json
import os
import sys
import time

import keras
import numpy as np

import keras_transformer as kt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from translate import token_ids  # noqa: E402
from translate import translate  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", default="runs/demo",
                        help="folder with translator.keras and tokenizer.spm")
    parser.add_argument("--language", default="de")
    parser.add_argument("--catalogs", nargs="*", default=None)
    parser.add_argument("--searches", nargs="+", default=["greedy", "4", "8"],
                        help="'greedy' or beam widths")
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--eval-max-length", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--limit", type=int, default=None, help="first N test pairs only")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    import sacrebleu

    model = keras.saving.load_model(os.path.join(args.run, "translator.keras"))
    tokenizer = kt.data.load_tokenizer(args.run)
    pairs = kt.data.load_gettext_pairs(args.language, paths=args.catalogs)
    test = kt.data.split_by_hash(pairs)["test"]
    tokenized = zip(*(token_ids(tokenizer, side) for side in zip(*test)))
    kept = [(pair, s) for pair, (s, t) in zip(test, tokenized)
            if max(len(s), len(t)) < args.eval_max_length][: args.limit]
    sources = [s for (s, _), _ in kept]
    references = [t for (_, t), _ in kept]
    ids = [s for _, s in kept]
    print(f"backend={keras.backend.backend()} test pairs={len(kept):,} alpha={args.alpha} "
          f"model={args.run}/translator.keras ({model.count_params():,} weights)")
    print(f"  references: mean {np.mean([len(r) for r in references]):.1f} characters; "
          f"copy-the-source BLEU {sacrebleu.corpus_bleu(sources, [references]).score:.2f}")
    figures = {}
    for search in args.searches:
        beam = None if search == "greedy" else int(search)
        start = time.perf_counter()
        hypotheses = translate(model, tokenizer, ids, args.eval_max_length, args.batch_size,
                               beam, alpha=args.alpha)
        seconds = time.perf_counter() - start
        name = "greedy" if beam is None else f"beam {beam}"
        figures[name] = dict(
            bleu=sacrebleu.corpus_bleu(hypotheses, [references]).score,
            mean_characters=float(np.mean([len(h) for h in hypotheses])),
            runaway=sum(len(h) > 3 * max(len(r), 1) for h, r in zip(hypotheses, references)),
            seconds=seconds,
        )
        f = figures[name]
        print(f"  {name:<8} BLEU {f['bleu']:6.2f}   mean length {f['mean_characters']:5.1f} "
              f"characters   {f['runaway']:4d} over 3x the reference   {seconds:6.1f} s")
    if "greedy" in figures:
        for name, f in figures.items():
            if name != "greedy":
                print(f"  {name} - greedy: {f['bleu'] - figures['greedy']['bleu']:+.2f} BLEU, "
                      f"{f['mean_characters'] - figures['greedy']['mean_characters']:+.1f} "
                      "characters")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(dict(test_pairs=len(kept), alpha=args.alpha, searches=figures), out,
                      indent=2)
    return figures


if __name__ == "__main__":
    main()
