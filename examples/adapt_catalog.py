"""Adapt a trained translator to a program's own translations, then fill the rest of its catalog.

A translation team rarely starts from nothing: part of a program's catalog is
translated, and those translations show the program's own words better than
any general training data. This takes the program that `examples/translate.py`
held out of training (its catalog is in the run folder as `<program>.pot`;
the translator never saw any of its messages), keeps the human translations
of half of its messages (chosen by a hash of the English text) and empties the
other half, then, as a user would, with the `keras-transformer` command:

1. fills the empty half with the translator as it is (`translate-po`),
2. adapts the translator to the translated half (`adapt-po`: LoRA on the
   attention projections, a few minutes of CPU),
3. fills the empty half again with the adapted translator (`translate-po`),

and prints the sacreBLEU of both fillings against the human translations of
that half, next to the BLEU of copying the English, and whether `msgfmt
--check-format` accepts each filled catalog. Writes into the run folder:

    <program>.half.po        the half-translated catalog
    <program>.before.po      filled by the translator as it was
    <program>.adapted.keras  the adapted translator (adapters merged)
    <program>.after.po       filled by the adapted translator
    adaptation.json          the figures printed at the end

    python examples/adapt_catalog.py --run runs/demo      # after examples/translate.py
"""

import argparse
import json
import os
import subprocess
import sys
import time

import keras_transformer as kt
from keras_transformer.data.gettext_catalogs import hash_fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from translate import write_template  # noqa: E402  (the sibling example)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", default="runs/demo",
                        help="the output folder of examples/translate.py")
    parser.add_argument("--rank", type=int, default=8, help="LoRA rank")
    parser.add_argument("--epochs", type=int, default=12, help="passes over the translated half")
    parser.add_argument("--beam-size", type=int, default=4)
    return parser.parse_args(argv)


def held_out_catalog(template, language):
    """The compiled catalog (with its human translations) that `template` was made from."""
    domain = os.path.basename(template)[:-len(".pot")]
    for path in kt.data.find_catalogs(language):
        if kt.data.catalog_domain(path) == domain:
            return path
    raise SystemExit(f"no {language} catalog of {domain} on this machine")


def command(*arguments):
    """Runs `keras-transformer ARGUMENTS` as a user would; returns its seconds."""
    start = time.time()
    subprocess.run([sys.executable, "-m", "keras_transformer", *arguments], check=True)
    return time.time() - start


def keyed_pairs(path):
    """{(context, msgid, English text): translation} of a catalog's translated texts (a
    plural message gives its singular and its plural, as `Message.pairs`)."""
    return {(message.context, message.source, english): text
            for message in kt.data.read_catalog(path) for english, text in message.pairs()}


def bleu_of(filled, references, sacrebleu):
    """sacreBLEU of the `filled` texts of `references`' keys against the references."""
    keys = sorted(references, key=str)
    return sacrebleu.corpus_bleu([filled.get(key, "") for key in keys],
                                 [[references[key] for key in keys]]).score


def accepted_by_msgfmt(path):
    check = subprocess.run(["msgfmt", "--check-format", "--use-fuzzy", "-o", os.devnull, path],
                           capture_output=True, text=True)
    return check.returncode == 0


def main(argv=None):
    args = parse_args(argv)
    import sacrebleu

    with open(os.path.join(args.run, "results.json")) as f:
        results = json.load(f)
    if not results.get("template"):
        raise SystemExit(f"{args.run}: no program was held out of training; nothing to adapt to")
    catalog = held_out_catalog(results["template"], results["language"])
    domain = kt.data.catalog_domain(catalog)
    name = lambda suffix: os.path.join(args.run, domain + suffix)  # noqa: E731
    known = lambda msgid: hash_fraction(msgid) < 0.5  # noqa: E731
    half = write_template(catalog, name(".half.po"), keep_translated=known)

    # The references: the human translations of the emptied half.
    every = keyed_pairs(catalog)
    references = {key: text for key, text in every.items() if not known(key[1])}
    model = os.path.join(args.run, "translator.keras")
    beam = ["--beam-size", str(args.beam_size)]
    seconds = dict(
        before=command("translate-po", half, "--model", model, "-o", name(".before.po"), *beam),
        adapt=command("adapt-po", half, "--model", model, "-o", name(".adapted.keras"),
                      "--rank", str(args.rank), "--epochs", str(args.epochs)),
        after=command("translate-po", half, "--model", name(".adapted.keras"), "-o",
                      name(".after.po"), *beam),
    )
    copy = {key: key[2] for key in references}
    figures = dict(
        program=domain, catalog=catalog, texts=len(every),
        translated_half=len(every) - len(references), filled_half=len(references),
        bleu=dict(copy=bleu_of(copy, references, sacrebleu),
                  before=bleu_of(keyed_pairs(name(".before.po")), references, sacrebleu),
                  after=bleu_of(keyed_pairs(name(".after.po")), references, sacrebleu)),
        msgfmt_accepts=dict(before=accepted_by_msgfmt(name(".before.po")),
                            after=accepted_by_msgfmt(name(".after.po"))),
        seconds=seconds, rank=args.rank, epochs=args.epochs,
    )
    with open(os.path.join(args.run, "adaptation.json"), "w") as f:
        json.dump(figures, f, indent=2)
    print(f"\n{domain}: {figures['translated_half']} translations kept, "
          f"{figures['filled_half']} texts filled; sacreBLEU of the filled half against its human "
          "translations:")
    print(f"  copying the English:               {figures['bleu']['copy']:6.2f}")
    print(f"  translator as trained:             {figures['bleu']['before']:6.2f}")
    print(f"  adapted to the translated half:    {figures['bleu']['after']:6.2f}"
          f"   (adapt-po: {seconds['adapt']:.0f} s)")
    for stage in ("before", "after"):
        verdict = "accepts" if figures["msgfmt_accepts"][stage] else "REFUSES"
        print(f"msgfmt --check-format --use-fuzzy {verdict} {name(f'.{stage}.po')}")
    return figures


if __name__ == "__main__":
    main()
