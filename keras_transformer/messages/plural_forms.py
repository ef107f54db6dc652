r"""Plural forms of gettext catalogs: the standard `Plural-Forms` of languages, and their rules.

A catalog's header says how many forms a plural message has and which form a
count takes, as a C expression of `n`:
`Plural-Forms: nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);`.
`PluralRule` evaluates that expression as GNU gettext does (unsigned
arithmetic, C precedence), so a form is known by the counts it serves, not by
how its expression is spelled: `n != 1`, `(n == 1 ? 0 : 1)` and `n>1?1:0`
differ in text, and the first two are one rule.

Example:
>>> rule = PluralRule.parse("nplurals=2; plural=(n == 1 ? 0 : 1);")
>>> rule.nplurals, rule.form(1), rule.form(5), rule.serves_only_one(0)
(2, 0, 1, True)
"""

import dataclasses
import functools
import re

import numpy as np

_GETTEXT_ONE = "nplurals=1; plural=0;"
_GETTEXT_TWO = "nplurals=2; plural=(n != 1);"
_GETTEXT_TWO_FRENCH = "nplurals=2; plural=(n > 1);"
_GETTEXT_SLAVIC = (
    "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
    "(n%100<10 || n%100>=20) ? 1 : 2);"
)

PLURAL_FORMS = {
    # One form.
    "ja": _GETTEXT_ONE,
    "ko": _GETTEXT_ONE,
    "vi": _GETTEXT_ONE,
    "zh": _GETTEXT_ONE,  # not in plural-table.c; CLDR has only "other" for Chinese
    # Two forms, singular for n == 1 only.
    "bg": _GETTEXT_TWO,
    "da": _GETTEXT_TWO,
    "de": _GETTEXT_TWO,
    "el": _GETTEXT_TWO,
    "en": _GETTEXT_TWO,
    "eo": _GETTEXT_TWO,
    "es": _GETTEXT_TWO,
    "et": _GETTEXT_TWO,
    "fi": _GETTEXT_TWO,
    "fo": _GETTEXT_TWO,
    "he": _GETTEXT_TWO,
    "hu": _GETTEXT_TWO,
    "it": _GETTEXT_TWO,
    "nb": _GETTEXT_TWO,
    "nl": _GETTEXT_TWO,
    "nn": _GETTEXT_TWO,
    "no": _GETTEXT_TWO,
    "pt": _GETTEXT_TWO,
    "sv": _GETTEXT_TWO,
    "tr": _GETTEXT_TWO,
    # Two forms, singular for n == 0 and n == 1.
    "fr": _GETTEXT_TWO_FRENCH,
    "pt_BR": _GETTEXT_TWO_FRENCH,
    # Three or four forms.
    "lv": "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n != 0 ? 1 : 2);",
    "ga": "nplurals=3; plural=n==1 ? 0 : n==2 ? 1 : 2;",
    "ro": "nplurals=3; plural=n==1 ? 0 : (n==0 || (n%100 > 0 && n%100 < 20)) ? 1 : 2;",
    "lt": (
        "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && "
        "(n%100<10 || n%100>=20) ? 1 : 2);"
    ),
    "be": _GETTEXT_SLAVIC,
    "hr": _GETTEXT_SLAVIC,
    "ru": _GETTEXT_SLAVIC,
    "sr": _GETTEXT_SLAVIC,
    "uk": _GETTEXT_SLAVIC,
    "cs": "nplurals=3; plural=(n==1) ? 0 : (n>=2 && n<=4) ? 1 : 2;",
    "sk": "nplurals=3; plural=(n==1) ? 0 : (n>=2 && n<=4) ? 1 : 2;",
    "pl": (
        "nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && "
        "(n%100<10 || n%100>=20) ? 1 : 2);"
    ),
    "sl": "nplurals=4; plural=(n%100==1 ? 0 : n%100==2 ? 1 : n%100==3 || n%100==4 ? 2 : 3);",
}
"""GNU `Plural-Forms` header values of common languages, by gettext language code.

Copied from GNU gettext 0.21's `gettext-tools/src/plural-table.c` (the table
`msginit` uses; the strings are the ones the gettext manual lists under
"Plural forms"), plus Chinese (`zh`, one form, as in the Unicode CLDR plural
rules and the Translation Project's `zh_CN`/`zh_TW` catalogs). Look codes up
with `plural_forms`, which also accepts `de_DE`, `zh_CN` or `pt-BR`.
"""

def _language_tag(language):
    """`de_DE.UTF-8@euro` -> `de_DE`; `pt-BR` -> `pt_BR`."""
    return re.split(r"[.@]", language.strip(), maxsplit=1)[0].replace("-", "_")


def primary_subtag(language):
    """The language without its region, script or encoding, in lower case.

    Args:
        language: a gettext or BCP 47 language code, e.g. `"de_DE"`, `"pt-BR"`,
            `"sr@latin"`.

    Returns:
        The primary subtag, e.g. `"de"`.

    Example:
    >>> primary_subtag("de_DE.UTF-8"), primary_subtag("pt-BR"), primary_subtag("sr@latin")
    ('de', 'pt', 'sr')
    """
    return _language_tag(language).split("_")[0].lower()


def plural_forms(language):
    """The standard GNU `Plural-Forms` header value of a language.

    Looks up the full code first (so `pt_BR` differs from `pt`), then its
    primary subtag (`de_AT` -> `de`, `zh_CN` -> `zh`).

    Args:
        language: a gettext or BCP 47 language code (`"de"`, `"de_DE"`, `"pt-BR"`).

    Returns:
        The header value, e.g. `"nplurals=2; plural=(n != 1);"`.

    Raises:
        ValueError: the language is not in `PLURAL_FORMS`.

    Example:
    >>> plural_forms("de_AT")
    'nplurals=2; plural=(n != 1);'
    >>> plural_forms("pt-BR")
    'nplurals=2; plural=(n > 1);'
    """
    if isinstance(language, str) and language.strip():
        tag = _language_tag(language)
        by_lower = {code.lower(): value for code, value in PLURAL_FORMS.items()}
        for key in (tag.lower(), primary_subtag(language)):
            if key in by_lower:
                return by_lower[key]
    raise ValueError(
        f"language={language!r} has no built-in Plural-Forms (known: "
        f"{', '.join(sorted(PLURAL_FORMS))}); pass a catalog whose header has Plural-Forms."
    )


_EXPRESSION_TOKEN = re.compile(
    r"[ \t]*(?:(?P<number>[0-9]+)|(?P<n>n)|(?P<operator>\|\||&&|==|!=|<=|>=|[-+*/%<>!?:()])"
    r"|(?P<end>[;\n\0]|\Z)|(?P<other>.))", re.DOTALL)
_CHECKED_COUNTS = range(1001)
"""The counts a rule is checked on and its forms described by, as msgfmt does (0 to 1000)."""
_ULONG = 2**64  # gettext evaluates in unsigned long: 64 bits
_NEGATIVE = 2**63  # msgfmt --check refuses a form that is negative as a long
_STACK_LIMIT = 10000
"""Bison's YYMAXDEPTH: plural.y's parser stack holds fewer states than this (one per symbol
it holds, and one more), or gettext finds the expression invalid."""
_PRECEDENCE = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, ">": 4, "<=": 4, ">=": 4,
               "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}  # C's, loosest first; '?:' is 0
_ARITHMETIC = {
    "==": np.equal, "!=": np.not_equal, "<": np.less, ">": np.greater, "<=": np.less_equal,
    ">=": np.greater_equal, "+": np.add, "-": np.subtract, "*": np.multiply,
    "/": np.floor_divide, "%": np.remainder,
}


def c_number(digits, saturate=False):
    """The number ASCII `digits` make in a C unsigned long, whatever their count (Python's
    int() refuses more than 4,300 digits): wrapping, as plural.y's lexer reads it, or
    `saturate`d at ULONG_MAX, as strtoul reads nplurals."""
    digits = digits.lstrip("0") or "0"
    if saturate:
        return _ULONG - 1 if len(digits) > 20 else min(int(digits), _ULONG - 1)
    value = 0
    for start in range(0, len(digits), 1000):
        chunk = digits[start:start + 1000]
        value = (value * 10 ** len(chunk) + int(chunk)) % _ULONG
    return value


def header_parts(text):
    """(what follows the first `nplurals=` after C's white space, the expression after the
    first `plural=` up to `;` or a newline) of a header's text, as gettext finds them; None for
    one that is not there."""
    count_at, expression_at = text.find("nplurals="), text.find("plural=")
    count = (text[count_at + len("nplurals="):].lstrip(" \t\n\v\f\r") if count_at >= 0
             else None)
    expression = (re.split(r"[;\n]", text[expression_at + len("plural="):], maxsplit=1)[0]
                  if expression_at >= 0 else None)
    return count, expression


def _tokens(text):
    """(kind, value) of each token of a plural expression, as plural.y's yylex reads them:
    spaces and tabs between them, `;`, a newline or a NUL ends it."""
    position = 0
    while True:
        match = _EXPRESSION_TOKEN.match(text, position)
        kind = match.lastgroup
        if kind == "other":
            raise ValueError(f"unexpected {text[match.start(kind):].strip()[:10]!r}")
        if kind == "number":
            yield kind, c_number(match.group(kind))  # an unsigned long wraps
        else:
            yield kind, match.group(kind)
        if kind == "end":
            return
        position = match.end()


def _compile(text):
    """The expression as a program in postfix order, read as plural.y's parser reads it: a
    shift-reduce parser with C's precedences, whose stack (the symbols bison's holds) is
    refused at bison's limit: 10,000 nested parentheses are too many for gettext.

    Instructions: ("n",), ("number", value), ("!",), (operator,) of two operands, ("?:",)."""
    program, stack = [], []  # stack: "exp", "(", "!", "?", ":", ")" or a binary operator

    def push(symbol):
        stack.append(symbol)
        if len(stack) + 1 >= _STACK_LIMIT:
            raise ValueError(f"nested too deeply: gettext's parser stack holds {_STACK_LIMIT} "
                             "states")

    for kind, value in _tokens(text):
        if stack[-1:] != ["exp"]:  # an operand is expected
            if kind in ("number", "n"):
                program.append(("number", value) if kind == "number" else ("n",))
                push("exp")
            elif value in ("(", "!"):
                push(value)
            else:
                raise ValueError("an operand is missing" if kind == "end" else f"unexpected {value!r}")
            continue
        if kind != "end" and (kind != "operator" or value in ("(", "!")):
            raise ValueError(f"unexpected {value!r}")
        while len(stack) > 1:  # reduce what the lookahead ends
            below = stack[-2]
            if below == "!":
                program.append(("!",))
                del stack[-2]
            elif below in _PRECEDENCE and not _PRECEDENCE.get(value, 0) > _PRECEDENCE[below]:
                program.append((below,))
                del stack[-2:]
            elif below == ":" and value not in _PRECEDENCE and value != "?":  # '?:' is right-associative
                program.append(("?:",))
                del stack[-4:]
            else:
                break
        below = stack[-2] if len(stack) > 1 else None
        if value in _PRECEDENCE or value == "?" or value == ":" and below == "?":
            push(value)
        elif value == ")" and below == "(":
            push(value)
            stack[-3:] = ["exp"]
        elif kind == "end" and below is None:
            return program
        else:
            raise ValueError({"(": "'(' without ')'", "?": "'?' without ':'"}.get(
                below, "an operand is missing" if kind == "end" else f"unexpected {value!r}"))


def _union(*masks):
    """The counts any of the masks marks (None marks none)."""
    masks = [mask for mask in masks if mask is not None]
    return functools.reduce(np.logical_or, masks) if masks else None


def _both(mask, faults):
    return None if faults is None else mask & faults


def _evaluate(program, counts):
    """(values, faults) of a compiled expression for each count (a uint64 array), as
    gettext's plural_eval gives them: unsigned 64-bit arithmetic, `&&`, `||` and `?:`
    evaluating only what C does. faults: the counts for which it divides by zero (None:
    none)."""
    stack = []
    with np.errstate(all="ignore"):  # unsigned arithmetic wraps, as in C
        return _run(program, counts, stack)


def _run(program, counts, stack):
    for operator, *value in program:
        if operator == "n":
            stack.append((counts, None))
        elif operator == "number":
            stack.append((np.uint64(value[0]), None))
        elif operator == "!":
            operand, faults = stack.pop()
            stack.append(((operand == 0).astype(np.uint64), faults))
        elif operator == "?:":
            (test, faults), (yes, yes_faults), (no, no_faults) = stack[-3:]
            del stack[-3:]
            true = test != 0
            stack.append((np.where(true, yes, no).astype(np.uint64),
                          _union(faults, _both(true, yes_faults), _both(~true, no_faults))))
        else:
            (left, faults), (right, right_faults) = stack[-2:]
            del stack[-2:]
            if operator in ("&&", "||"):
                left = left != 0
                taken = left if operator == "&&" else ~left  # the counts C evaluates right for
                value = (left & (right != 0)) if operator == "&&" else (left | (right != 0))
                stack.append((value.astype(np.uint64), _union(faults, _both(taken, right_faults))))
                continue
            zero = None
            if operator in ("/", "%"):
                zero = right == 0
                right = np.where(zero, np.uint64(1), right).astype(np.uint64)
                zero = zero if zero.any() else None
            value = _ARITHMETIC[operator](left, right)
            stack.append((np.asarray(value).astype(np.uint64), _union(faults, right_faults, zero)))
    values, faults = stack.pop()
    return np.broadcast_to(values, counts.shape), faults


@dataclasses.dataclass(frozen=True)
class PluralRule:
    """A catalog's plural rule: how many forms, and which form each count takes.

    Build it with `PluralRule.parse(header_value)`.

    Args:
        nplurals: the number of forms.
        expression: the C expression of `n` giving a count's form.
        forms: the form of each count from 0 to 1000.

    Example:
    >>> rule = PluralRule.parse(plural_forms("fr"))
    >>> rule.nplurals, rule.form(0), rule.form(1), rule.form(2), rule.serves_only_one(0)
    (2, 0, 0, 1, False)
    """

    nplurals: int
    expression: str
    forms: tuple = dataclasses.field(repr=False)

    @classmethod
    def parse(cls, value):
        """Reads a `Plural-Forms` header value.

        Args:
            value: e.g. `"nplurals=2; plural=(n != 1);"`.

        Returns:
            A `PluralRule`.

        Raises:
            ValueError: no `nplurals=N` with N >= 1, no `plural=` expression,
                an expression gettext cannot read, or one that divides by zero
                or gives a form >= nplurals for some count from 0 to 1000
                (both refused by `msgfmt --check`).

        Example:
        >>> PluralRule.parse("nplurals=2; plural=n>1 ? 1 : 2;")
        Traceback (most recent call last):
        ...
        ValueError: Plural-Forms 'nplurals=2; plural=n>1 ? 1 : 2;' gives form 2 for n = 0, but nplurals=2 allows 0 to 1
        """
        if not isinstance(value, str):
            raise ValueError(f"Plural-Forms must be a string, got {value!r}")
        return cls.from_header(value, value)

    @classmethod
    def from_header(cls, text, value=None):
        """The rule of a header's text (or a Plural-Forms value) as gettext reads it: the
        first `nplurals=` (its digits, after C's white space; strtoul's value) and the first
        `plural=` (up to `;` or a newline).

        Args:
            text: the header entry's msgstr, or a Plural-Forms value.
            value: the text to name in messages; default: made from the two parts.
        """
        count, expression = header_parts(text)
        digits = re.match(r"[0-9]*", count).group() if count is not None else ""
        if not digits or c_number(digits, saturate=True) < 1:
            raise ValueError(f"Plural-Forms {value or text!r} has no valid nplurals=N (N >= 1)")
        if expression is None or not expression.strip(" \t"):
            raise ValueError(f"Plural-Forms {value or text!r} has no plural=EXPRESSION")
        if value is None:
            value = f"nplurals={digits}; plural={expression.strip(' ')};"
        return cls.from_parts(c_number(digits, saturate=True), expression.strip(" \t"), value)

    @classmethod
    def from_parts(cls, nplurals, expression, value=None):
        """A rule from its number of forms and its C expression (the checks of `parse`).

        Args:
            nplurals: the number of forms, >= 1.
            expression: the C expression of `n`; gettext skips only spaces and tabs in it.
            value: the Plural-Forms text to name in messages; default: made from the two.

        Example:
        >>> PluralRule.from_parts(3, "n==1 ? 0 : n==2 ? 1 : 2").form(2)
        1
        """
        value = value if value is not None else f"nplurals={nplurals}; plural={expression};"
        if nplurals < 1:
            raise ValueError(f"Plural-Forms {value!r} has no valid nplurals=N (N >= 1)")
        try:
            program = _compile(expression)
        except ValueError as error:
            raise ValueError(f"Plural-Forms {value!r}: its expression cannot be read ({error})") from None
        values, faults = _evaluate(program, np.arange(len(_CHECKED_COUNTS), dtype=np.uint64))
        bad = _union(faults, values >= np.uint64(min(nplurals, _NEGATIVE)))
        if bad is not None and bad.any():  # msgfmt stops at the first count that fails
            n = int(np.argmax(bad))
            form = int(values[n])
            if faults is not None and np.broadcast_to(faults, values.shape)[n]:
                raise ValueError(f"Plural-Forms {value!r} divides by zero for n = {n}")
            if form >= _NEGATIVE:
                raise ValueError(f"Plural-Forms {value!r} gives a negative form ({form - _ULONG}, "
                                 f"as a C long) for n = {n}")
            raise ValueError(f"Plural-Forms {value!r} gives form {form} for n = {n}, but "
                             f"nplurals={nplurals} allows 0 to {nplurals - 1}")
        return cls(nplurals, expression, tuple(int(form) for form in values))

    def form(self, n):
        """The form a count takes.

        Args:
            n: a count from 0 to 1000.

        Example:
        >>> PluralRule.parse(plural_forms("ru")).form(21)
        0
        """
        return self.forms[n]

    def counts_taking(self, form, low=0, high=1000):
        """How many counts from `low` to `high` take this form, as gettext counts them for a
        `range:` flag (at most the 1001 counts from `low`; a negative `low` counts from 0).

        Args:
            form: a form index.
            low: the first count.
            high: the last count.

        Example:
        >>> PluralRule.parse("nplurals=2; plural=(n != 1);").counts_taking(0, 0, 5000)
        1
        """
        low = max(low, 0)
        high = min(high, low + 1000)
        if high <= 1000:
            return self.forms[low:high + 1].count(form)
        if low > high:
            return 0
        values, faults = _evaluate(_compile(self.expression),
                                   np.arange(low, high + 1, dtype=np.uint64))
        taken = values == np.uint64(form)
        if faults is not None:  # a count that divides by zero takes no form
            taken &= ~faults
        return int(np.count_nonzero(taken))

    def serves_only_one(self, form):
        """Whether exactly one count from 0 to 1000 takes this form (English's form 0 takes 1).

        Such a form may leave out the count's directive (`"One file"` for `"%d files"`):
        `msgfmt --check-format` allows that in a form few counts take (it relaxes its check
        for forms taken by fewer than 5 of the counts 0 to 1000); `translate_catalog`
        takes msgid for a form only when one count takes it.

        Args:
            form: a form index, from 0 to nplurals - 1.

        Example:
        >>> PluralRule.parse("nplurals=2; plural=(n != 1);").serves_only_one(0)
        True
        """
        return self.forms.count(form) == 1
