"""Times the Lisp, Scheme and Java format-string checks on strings of up to 200 KB, nested in
each way and flat:

    python benchmarks/format_nesting.py [BUDGET] [WORD]

Each string is checked as msgfmt --check-format checks an entry whose msgid and msgstr are
that string (both parsed, then compared). A line gives the seconds, the length, the shape and
the verdict: None (accepted), a reason, or "unchecked" (gettext's list operations read memory
they never set: msgfmt's verdict cannot be known). With BUDGET (seconds), the strings that take longer are marked
and the script exits 1; with WORD, only the shapes whose name holds it are timed (an empty
BUDGET, `""`, sets none).

Three shapes take time quadratic in their length in msgfmt (gettext's lists whose
neighbouring elements all differ, copied and united at each directive) and are timed smaller.
Two of them, clauses nested thousands deep, do here too: `~[~d` nested 1,000, 2,000 and 4,000
deep takes 1.5, 5.8 and 24 s (msgfmt 0.21: 1.0 s at 2,000, 4.0 s at 4,000, 7.2 s and 2.4 GB at
10,000), random nesting 4,000 deep 11 s. The third, a `~^` after each directive, takes linear
time here (`arglists.unite_exit`): `~a~d~^` repeated to 20 KB, 1.9 s, as msgfmt. (Measured
side by side on 2 shared cores, msgid and msgstr both parsed.)

A loop of two arguments rotated to argument 10,000,000 (`~@{~a~d~}~10000000@*~a`, 22 bytes)
makes a list ten million elements long: 9.8 s and about 920 MB here, with a test run on the
other core (msgfmt 0.21: 0.54 s, 470 MB); to argument 100,000,000 the list would pass
`arglists.MAX_RUNS` and the arguments are left unchecked at once (msgfmt: 4.8 s, 4.7 GB)."""

import random
import sys
import time

from keras_transformer.messages.format_strings import java
from keras_transformer.messages.format_strings import lisp
from keras_transformer.messages.format_strings import scheme
from keras_transformer.messages.format_strings.arglists import TooLarge
from keras_transformer.messages.format_strings.arglists import Undefined
from keras_transformer.messages.format_strings.common import Invalid
from keras_transformer.messages.message_checks import message_problem
from keras_transformer.messages.po_file import PoEntry

SIZE = 200_000
PARSERS = {"lisp-format": lisp.lisp_arguments, "scheme-format": scheme.scheme_arguments,
           "java-format": java.java_arguments}
# Deeper than msgfmt 0.21 reads on its default 8 MiB stack (22,763 levels of Lisp, 23,814 of
# Scheme): it judges such strings on a larger stack.
DEEP = 30_000


def nest(depth, opener, inner, closer):
    return opener * depth + inner + closer * depth


def nest_to_size(opener, inner, closer, size=SIZE):
    return nest((size - len(inner)) // (len(opener) + len(closer)), opener, inner, closer)


def random_nest(rng, depth, levels):
    """A string nested `depth` levels deep, one of `levels` at random at each level."""
    chosen = [rng.choice(levels) for _ in range(depth)]
    return ("".join(opener + rng.choice(["", "~a", "x"]) for opener, _ in chosen) + "~a"
            + "".join(closer for _, closer in reversed(chosen)))


def repeated(piece, size=SIZE):
    return piece * (size // len(piece))


def cases():
    """(flag, name, text) of each shape."""
    rng = random.Random(0)
    for flag in ("lisp-format", "scheme-format"):
        levels = [("~(", "~)"), ("~[", "~]"), ("~:[", "~;~]"), ("~@[", "~]"), ("~{", "~}"),
                  ("~:{", "~}"), ("~@{", "~}")] + [("~<", "~>")] * (flag == "lisp-format")
        for opener, closer in levels:
            yield flag, f"{opener} nested {DEEP:,} deep", nest(DEEP, opener, "~a", closer)
            yield flag, f"{opener} nested to 200 KB", nest_to_size(opener, "~a", closer)
        for depth in (1_000, 2_000, 4_000):  # quadratic
            yield flag, f"random nesting {depth:,} deep (quadratic)", random_nest(rng, depth,
                                                                                 levels[:4])
        for piece in ("~a", "~a~d", "~a~^", "~[~a~]", "~{~a~}", "~:[~a~;~d~]", "~@{~a~}", "~(~a~)",
                      "~d~:*~a", "~{~a~^, ~}~%"):
            yield flag, f"{piece} repeated to 200 KB", repeated(piece)
        yield flag, "random directives to 200 KB", "".join(rng.choice(
            ["~a", "~d", "~s", "~c", "~f", "~*", "~:*", "x", "~%", "~^"]) for _ in range(SIZE // 2))
        for depth in (1_000, 2_000, 4_000):  # quadratic
            yield flag, f"~[~d nested {depth:,} deep (quadratic)", nest(depth, "~[~d", "~a", "~]")
        for far in (1_000_000, 10_000_000, 100_000_000):  # a long list from a short string
            yield flag, f"a loop of 2 rotated to argument {far:,}", f"~@{{~a~d~}}~{far}@*~a"
        for size in (5_000, 10_000, 20_000):  # quadratic in msgfmt
            yield flag, f"~a~d~^ repeated to {size // 1000} KB (quadratic in msgfmt)", repeated(
                "~a~d~^", size)
    yield "java-format", "choice nested to 200 KB", nest_to_size("{0,choice,0#", "x", "}")
    yield "java-format", "choice with quotes nested to 200 KB", nest_to_size("{0,choice,0#'a'",
                                                                              "x", "}")
    yield "java-format", "choice with '' nested to 200 KB", nest_to_size("{0,choice,0#''", "x", "}")
    yield "java-format", "choice of 2 clauses nested to 200 KB", nest_to_size("{0,choice,0#a|1#",
                                                                              "x", "}")
    yield "java-format", "{0} repeated to 200 KB", repeated("{0}")
    yield "java-format", "'{'' repeated to 200 KB", repeated("'{''")


def verdict(flag, text, problem):
    try:
        PARSERS[flag](text)
    except TooLarge:
        return "unchecked (too large)"
    except Undefined:
        return "unchecked"
    except Invalid:
        pass
    return problem


def main(budget=None, word=""):
    slow = 0
    for flag, name, text in cases():
        if word not in name:
            continue
        entry = PoEntry(msgid=text, msgstr=[text], flags=(flag,))
        start = time.perf_counter()
        problem = message_problem(entry)
        seconds = time.perf_counter() - start
        late = budget is not None and seconds > budget
        slow += late
        print(f"{seconds:7.3f} s  {flag:13}  {len(text):7,} chars  {name}: "
              f"{verdict(flag, text, problem)}" + ("  SLOW" if late else ""), flush=True)
    return slow


if __name__ == "__main__":
    arguments = sys.argv[1:]
    sys.exit(1 if main(float(arguments[0]) if arguments and arguments[0] else None,
                       arguments[1] if len(arguments) > 1 else "") else 0)
