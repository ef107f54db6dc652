"""The Lisp, Scheme and Java format-string parsers against their versions of commit
`REFERENCE` (before they ran on an explicit stack, with lists kept as runs and frozen lists of
lists): on random strings nested at most about 20 levels deep (which that version judged),
the same arguments (every element of the normalized lists, every type), the same reasons, the
same strings left unchecked (`Undefined`), and the same comparisons of two strings.

The reference is read from git (skipped where the repository's history lacks it). By hand,
with more strings: `python tests/messages/test_format_strings_differential.py COUNT SEED`."""

import collections
import contextlib
import importlib
import pathlib
import random
import shutil
import subprocess
import sys
import time

import pytest

from keras_transformer.messages.format_strings import arglists
from keras_transformer.messages.format_strings import java
from keras_transformer.messages.format_strings import lisp
from keras_transformer.messages.format_strings import scheme
from keras_transformer.messages.format_strings.common import Invalid

REFERENCE = "dd43fbf"  # the last commit before issue 32's nesting work on these parsers
MODULES = ("__init__", "arglists", "common", "lisp", "scheme", "java")
# Port slips of the reference fixed since, applied to it: make_repeated_list took the loop's
# length after unfolding it (gettext reads it before), so `~{~a~a~a~}` read past its source.
REFERENCE_FIXES = {"arglists": [(
    "        unfold_loop(sublist, m)\n        p = m * sublist.repeated_length\n",
    "        loop = sublist.repeated_length\n        unfold_loop(sublist, m)\n"
    "        p = m * loop\n")]}
ROOT = pathlib.Path(__file__).resolve().parents[2]

SIMPLE = ["~a", "~s", "~d", "~b", "~o", "~x", "~r", "~p", "~:p", "~@p", "~c", "~f", "~e", "~g", "~$",
          "~%", "~&", "~|", "~~", "~\n", "~t", "~*", "~:*", "~@*", "~2*", "~?", "~@?", "~^", "~5d",
          "~v,'0d", "~'xd", "~v*", "~1@*", "~:^", "~#*", "~va", "~,vd", "~v^", "~3:*", "~0*", "~i",
          "~_", "~w", "~/f/", "~y", "~k", "~q", "~!", "~/", "~,c", "~1,2,'xt", "~v[", "~#[", "~1[",
          "~2@*", "~1,2^", "~v,v^", "~#^", "~v{", "~2{", "~:@{", "~@:[", "~v!", "~3!", "~:@p",
          "~10@*", "~@i"]
OPEN = ["~(", "~[", "~:[", "~@[", "~{", "~:{", "~@{", "~:@{", "~1{", "~<", "~#[", "~v[", "~@("]
CLOSE = ["~)", "~]", "~}", "~>", "~:}", "~@]", "~;", "~:;"]
JAVA = ["{0}", "{1}", "{0,number}", "{0,number,#.##}", "{0,number,integer}", "{0,date}",
        "{0,time,short}", "{1,date,yyyy}", "'", "''", "'{'", "{", "}", "|", "#", "<", "\\u2264",
        "\\", "x", "{0,choice,}", "{0,foo}", "{a}", "{0,number,0.#E0}"]


def nested(rng, depth, deepest):
    """A random string of directives, those that nest balanced (mostly) up to `deepest`."""
    pieces = []
    for _ in range(rng.randint(0, 4)):
        roll = rng.random()
        if roll < 0.2:
            pieces.append(rng.choice(["x", " ", "é"]))
        elif roll < 0.6 or depth >= deepest:
            pieces.append(rng.choice(SIMPLE))
        elif roll < 0.97:
            def inner():
                return nested(rng, depth + 1, deepest)
            pieces.append(rng.choice([
                lambda: "~(" + inner() + "~)",
                lambda: rng.choice(["~:[", "~["]) + inner() + "~;" + inner() + "~]",
                lambda: "~@[" + inner() + "~]",
                lambda: ("~[" + "~;".join(inner() for _ in range(rng.randint(1, 3)))
                         + rng.choice(["", "~:;" + inner()]) + "~]"),
                lambda: rng.choice(["~{", "~:{", "~@{", "~:@{", "~1{", "~v{"]) + inner() + "~}",
                lambda: "~<" + inner() + rng.choice(["", "~;" + inner()]) + "~>",
            ])())
        else:
            pieces.append(rng.choice(OPEN + CLOSE))
    return "".join(pieces)


def repetitive(rng, deepest):
    """Pieces repeated (long runs of equal elements, equal lists of lists), maybe nested in a
    directive repeated: up to `deepest` + 12 levels."""
    blocks = []
    for _ in range(rng.randint(1, 3)):
        piece = (nested(rng, 0, rng.randint(0, min(deepest, 2))) if rng.random() < 0.5
                 else rng.choice(SIMPLE))
        blocks.append(piece * rng.randint(1, 12))
    text = "".join(blocks)
    if rng.random() < 0.5:
        opener, closer = rng.choice([("~{", "~}"), ("~:{", "~}"), ("~@{", "~}"), ("~(", "~)"),
                                     ("~[", "~]"), ("~:[", "~;~]"), ("~@[", "~]"), ("~<", "~>")])
        times = rng.randint(1, 12)
        text = opener * times + text + closer * times
    return text


def mutated(rng, text):
    """The text, or with a directive put in, two characters taken out, or its end cut."""
    if not text or rng.random() < 0.5:
        return text
    at = rng.randrange(len(text) + 1)
    return rng.choice([lambda: text[:at] + rng.choice(SIMPLE + OPEN + CLOSE) + text[at:],
                       lambda: text[:at] + text[at + 2:], lambda: text[:at]])()


def java_text(rng, depth=0):
    pieces = []
    for _ in range(rng.randint(0, 4)):
        if rng.random() < 0.6 or depth > 3:
            pieces.append(rng.choice(JAVA))
        else:
            choices = "|".join(rng.choice(["0", "1", "2.5", "-1", "", "x"])
                               + rng.choice(["#", "<", "\\u2264", ""]) + java_text(rng, depth + 1)
                               for _ in range(rng.randint(1, 3)))
            pieces.append("{" + rng.choice("012") + ",choice," + choices
                          + rng.choice(["}", "", "}}"]))
    text = "".join(pieces)
    if rng.random() < 0.3:
        times = rng.randint(1, 12)
        text = "{0,choice,0#" * times + text + "}" * times
    return text.replace("'", "''", 1) if rng.random() < 0.2 else text


def described(arglist, list_type):
    """A list as nested tuples of its C elements (repcount, presence, type, list), whichever
    way it keeps them."""
    if arglist is None:
        return None

    def elements(segment):
        if hasattr(segment, "runs"):
            return [(element[0], element[1], element[2], element[3])
                    for element, times in segment.runs for _ in range(times)]
        return [(element.repcount, element.presence, element.type, element.list)
                for element in segment]

    return tuple(tuple((count, presence, kind, described(sublist, list_type) if kind == list_type
                        else None) for count, presence, kind, sublist in elements(segment))
                 for segment in (arglist.initial, arglist.repeated))


def outcome(parse, text, invalid, undefined):
    try:
        return "arguments", parse(text)
    except invalid as error:
        return "invalid", error.args[0]
    except undefined:
        return "unchecked", None


def reference_modules(directory):
    """The format_strings modules of commit `REFERENCE`, imported from `directory` as the
    package `reference_format_strings`; None where git or that commit is missing."""
    git = shutil.which("git")
    if git is None:
        return None
    package = pathlib.Path(directory) / "reference_format_strings"
    package.mkdir(exist_ok=True)
    for module in MODULES:
        source = subprocess.run(
            [git, "-C", str(ROOT), "show",
             f"{REFERENCE}:keras_transformer/messages/format_strings/{module}.py"],
            capture_output=True, text=True)
        if source.returncode:
            return None
        text = source.stdout.replace("keras_transformer.messages.format_strings",
                                     "reference_format_strings")
        for slip, fix in REFERENCE_FIXES.get(module, ()):
            if slip not in text:
                raise AssertionError(f"the reference's {module}.py lacks {slip!r}")
            text = text.replace(slip, fix)
        (package / f"{module}.py").write_text(text, encoding="utf-8")
    sys.path.insert(0, str(directory))
    try:
        importlib.invalidate_caches()
        return {module: importlib.import_module(f"reference_format_strings.{module}")
                for module in ("arglists", "common", "lisp", "scheme", "java")}
    finally:
        sys.path.remove(str(directory))


def judge_both(new, old, text, reference):
    """(our outcome of `text`, the reference's, "same", "from the slots", "a rotated loop's
    array broken" or "different"). "from the slots": the reference left it unchecked where
    gettext reads past a union's list, and ours is judged from what the C array holds there
    (`arglists.stale_slots`), and without that is the reference's. "a rotated loop's array
    broken": ours is unchecked where gettext's rotate_loop leaves a wrong count or size
    (`arglists.array_broken`), and without that check is the reference's."""
    mine = outcome(new, text, Invalid, arglists.Undefined)
    old_one = outcome(old, text, reference["common"].Invalid, reference["arglists"].Undefined)
    if alike(mine, old_one, reference):
        return mine, old_one, "same"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(arglists, "stale_slots", lambda _: None)
        without_slots = outcome(new, text, Invalid, arglists.Undefined)
    if old_one[0] == "unchecked" and alike(without_slots, old_one, reference):
        return mine, old_one, "from the slots"
    with without_array_checks():
        without_the_check = outcome(new, text, Invalid, arglists.Undefined)
    if mine[0] == "unchecked" and alike(without_the_check, old_one, reference):
        return mine, old_one, "a rotated loop's array broken"
    return mine, old_one, "different"


@contextlib.contextmanager
def without_array_checks():
    """`arglists.array_broken` a no-op; what the lists computed meanwhile keep (frozen lists'
    intersections, unions, repeated lists) is forgotten after, so that no later reading
    reuses a result computed without the check."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(arglists, "array_broken", lambda reason: None)
        try:
            yield
        finally:
            for frozen in list(arglists._FROZEN.values()):
                frozen._memo.clear()


def alike(mine, old_one, reference):
    """Whether our outcome of a string is the reference's: the same kind, and the same lists
    element by element, or the same reason."""
    return mine[0] == old_one[0] and (
        described(mine[1], arglists.LIST) == described(old_one[1], reference["arglists"].LIST)
        if mine[0] == "arguments" else mine[1] == old_one[1])


def compare(reference, count, seed, deepest=8):
    """Parses `count` pairs of random strings per language with both versions, and compares
    each pair's lists: (the outcomes counted, the comparisons made, examples of differences)."""
    rng = random.Random(seed)
    ours = (Invalid, arglists.Undefined)
    theirs = (reference["common"].Invalid, reference["arglists"].Undefined)
    counts, compared, differences = collections.Counter(), 0, []
    # The lists as gettext computes them (`Undefined` even where a syntax error follows, which
    # `lisp_arguments` then reports: the reference left those unchecked).
    for language, new, old in (("lisp", lambda text: lisp.list_arguments(text, lisp.COMMON_LISP),
                                reference["lisp"].lisp_arguments),
                               ("scheme",
                                lambda text: lisp.list_arguments(text, scheme.GUILE_SCHEME),
                                reference["scheme"].scheme_arguments)):
        for _ in range(count):
            make = nested if rng.random() < 0.5 else (lambda rng, _, deepest: repetitive(rng, deepest))
            msgid = mutated(rng, make(rng, 0, rng.randint(0, deepest)))
            msgstr = (mutated(rng, msgid) if rng.random() < 0.6
                      else make(rng, 0, rng.randint(0, deepest)))
            results = []
            for text in (msgid, msgstr):
                mine, old_one, verdict = judge_both(new, old, text, reference)
                counts[language, old_one[0]] += 1
                counts[language, verdict] += 1
                if verdict == "different":
                    differences.append((language, text, mine, old_one))
                results.append((mine, old_one))
            if all(mine[0] == old_one[0] == "arguments" for mine, old_one in results):
                for strict in (True, False):
                    verdicts = []
                    for module, pair in ((arglists, [mine[1] for mine, _ in results]),
                                         (reference["arglists"], [old[1] for _, old in results])):
                        try:
                            verdicts.append(module.compare_lists(*pair, strict, ("msgid", "msgstr")))
                        except module.Undefined:
                            verdicts.append("unchecked")
                    compared += 1
                    if verdicts[0] == "unchecked" != verdicts[1]:
                        with without_array_checks():  # (see judge_both)
                            pair = [new(text) for text in (msgid, msgstr)]
                            if arglists.compare_lists(*pair, strict, ("msgid", "msgstr")) == verdicts[1]:
                                counts[language, "a rotated loop's array broken"] += 1
                                continue
                    if verdicts[0] != verdicts[1]:
                        differences.append((language, (msgid, msgstr, strict), *verdicts))
    for _ in range(2 * count):
        text = java_text(rng)
        mine = outcome(java.java_arguments, text, *ours)
        old_one = outcome(reference["java"].java_arguments, text, *theirs)
        counts["java", old_one[0]] += 1
        if mine != old_one:
            differences.append(("java", text, mine, old_one))
    return counts, compared, differences


def test_the_parsers_judge_shallow_strings_as_before(tmp_path):
    reference = reference_modules(tmp_path)
    if reference is None:
        pytest.skip(f"git or commit {REFERENCE} is missing")
    counts, compared, differences = compare(reference, 3000, seed=0)
    assert differences == []
    assert counts["lisp", "from the slots"] > 0 and counts["scheme", "from the slots"] > 0
    assert min(counts[language, kind] for language in ("lisp", "scheme")
               for kind in ("arguments", "invalid", "unchecked")) > 20
    assert counts["java", "arguments"] > 300 and counts["java", "invalid"] > 300
    assert compared > 500


# Pieces of long strings of exits (`~^` after many directives, which `arglists.unite_exit`
# unites without going over the list again) and of clauses (`~[`, whose lists the union takes
# from their first difference with the list before them).
EXITS = ["~a", "~d", "~s", "~c", "~f", "~*", "~:*", "~@*", "~2@*", "~1@*", "~^", "~^", "~^", "~:^",
         "~v^", "~#^", "~%", "x", "~{~a~}", "~{~a~^, ~}", "~:{~a~}", "~[~a~;~d~]", "~@[~a~]",
         "~(~a~^~)", "~<~a~^~>", "~?", "~v*"]
CLAUSES = [("~[~d", "~]"), ("~:[~a~;", "~]"), ("~@[", "~]"), ("~(", "~)"), ("~[~a~;", "~]")]


def exits(rng):
    """Up to 120 pieces of `EXITS` and of `CLAUSES` that nest, all closed but rarely; rarely
    a piece gettext's lists read unset memory on (`~{~^~a~}`)."""
    pieces, closers = [], []
    for _ in range(rng.randint(1, 120)):
        roll = rng.random()
        if roll < 0.15 and len(closers) < 40:
            opener, closer = rng.choice(CLAUSES)
            pieces.append(opener)
            closers.append(closer)
        elif roll < 0.22 and closers:
            pieces.append(closers.pop())
        else:
            pieces.append("~{~^~a~}" if roll > 0.997 else rng.choice(EXITS))
    return "".join(pieces) + "".join(reversed(closers[rng.random() < 0.1:]))


def test_long_strings_of_exits_and_clauses_judge_as_before(tmp_path):
    """1,500 strings of up to 120 pieces, mostly `~^` after directives and clauses nested
    up to 40 deep: the same lists (element by element), reasons and strings left unchecked as
    the reference, for Lisp and Scheme."""
    reference = reference_modules(tmp_path)
    if reference is None:
        pytest.skip(f"git or commit {REFERENCE} is missing")
    rng = random.Random(0)
    counts = collections.Counter()
    for _ in range(1500):
        text = exits(rng)
        for dialect, old in ((lisp.COMMON_LISP, reference["lisp"].lisp_arguments),
                             (scheme.GUILE_SCHEME, reference["scheme"].scheme_arguments)):
            _, old_one, verdict = judge_both(lambda text: lisp.list_arguments(text, dialect),
                                             old, text, reference)
            counts[old_one[0]] += 1
            assert verdict != "different", text
    assert min(counts.values()) > 100 and len(counts) == 3


if __name__ == "__main__":
    import tempfile

    count, seed = (int(argument) for argument in (sys.argv[1:] + ["20000", "1"])[:2])
    with tempfile.TemporaryDirectory() as directory:
        modules = reference_modules(directory)
        if modules is None:
            sys.exit(f"git or commit {REFERENCE} is missing")
        start = time.perf_counter()
        counts, compared, differences = compare(modules, count, seed)
        print(f"{sum(counts.values()):,} strings ({dict(sorted(counts.items()))}), {compared:,} "
              f"comparisons: {len(differences)} differences, {time.perf_counter() - start:.0f} s")
        for difference in differences[:10]:
            print(difference)
        sys.exit(1 if differences else 0)
