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
import re

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


_NPLURALS = re.compile(r"\bnplurals\s*=\s*([0-9]+)")
_PLURAL = re.compile(r"\bplural\s*=\s*([^;]*)")
_EXPRESSION_TOKEN = re.compile(r"[ \t]*(?:([0-9]+)|(n)|(\|\||&&|==|!=|<=|>=|[-+*/%<>!?:()]))")
_CHECKED_COUNTS = range(1001)
"""The counts a rule is checked on and its forms described by, as msgfmt does (0 to 1000)."""
_BINARY = [  # C precedence, loosest first
    {"||": lambda a, b: int(bool(a) or bool(b))},
    {"&&": lambda a, b: int(bool(a) and bool(b))},
    {"==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b)},
    {"<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b),
     "<=": lambda a, b: int(a <= b), ">=": lambda a, b: int(a >= b)},
    {"+": lambda a, b: (a + b) % 2**64, "-": lambda a, b: (a - b) % 2**64},
    {"*": lambda a, b: (a * b) % 2**64, "/": lambda a, b: a // b, "%": lambda a, b: a % b},
]


class _Parser:
    """Recursive descent over the C expression gettext accepts (its plural.y grammar)."""

    def __init__(self, text):
        self.text = text
        self.tokens = []
        position = 0
        while position < len(text.rstrip(" \t")):
            match = _EXPRESSION_TOKEN.match(text, position)
            if not match:
                raise ValueError(f"unexpected {text[position:].strip()[:10]!r}")
            number, variable, operator = match.groups()
            self.tokens.append(("number", int(number)) if number else
                               ("n", None) if variable else ("op", operator))
            position = match.end()
        self.position = 0

    def peek(self):
        return self.tokens[self.position] if self.position < len(self.tokens) else (None, None)

    def take(self, operator):
        if self.peek() == ("op", operator):
            self.position += 1
            return True
        return False

    def parse(self):
        node = self.conditional()
        if self.position != len(self.tokens):
            raise ValueError(f"unexpected {self.peek()[1]!r}")
        return node

    def conditional(self):
        test = self.binary(0)
        if not self.take("?"):
            return test
        then = self.conditional()
        if not self.take(":"):
            raise ValueError("'?' without ':'")
        otherwise = self.conditional()
        return lambda n: then(n) if test(n) else otherwise(n)

    def binary(self, level):
        if level == len(_BINARY):
            return self.unary()
        node = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in _BINARY[level]:
            operation = _BINARY[level][self.tokens[self.position][1]]
            self.position += 1
            node = (lambda f, a, b: lambda n: f(a(n), b(n)))(operation, node, self.binary(level + 1))
        return node

    def unary(self):
        if self.take("!"):
            operand = self.unary()
            return lambda n: int(not operand(n))
        if self.take("("):
            node = self.conditional()
            if not self.take(")"):
                raise ValueError("'(' without ')'")
            return node
        kind, value = self.peek()
        self.position += 1
        if kind == "number":
            return lambda n: value
        if kind == "n":
            return lambda n: n
        raise ValueError("an operand is missing" if kind is None else f"unexpected {value!r}")


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
        count, expression = _NPLURALS.search(value), _PLURAL.search(value)
        if not count or int(count.group(1)) < 1:
            raise ValueError(f"Plural-Forms {value!r} has no valid nplurals=N (N >= 1)")
        if not expression or not expression.group(1).strip():
            raise ValueError(f"Plural-Forms {value!r} has no plural=EXPRESSION")
        return cls.from_parts(int(count.group(1)), expression.group(1).strip(), value)

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
            evaluate = _Parser(expression).parse()
        except ValueError as error:
            raise ValueError(f"Plural-Forms {value!r}: its expression cannot be read ({error})") from None
        forms = []
        for n in _CHECKED_COUNTS:
            try:
                form = evaluate(n)
            except ZeroDivisionError:
                raise ValueError(f"Plural-Forms {value!r} divides by zero for n = {n}") from None
            if form >= nplurals:
                raise ValueError(f"Plural-Forms {value!r} gives form {form} for n = {n}, but "
                                 f"nplurals={nplurals} allows 0 to {nplurals - 1}")
            forms.append(form)
        return cls(nplurals, expression, tuple(forms))

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
        evaluate = _Parser(self.expression).parse()

        def takes(n):
            try:
                return evaluate(n) == form
            except ZeroDivisionError:
                return False

        return sum(1 for n in range(low, high + 1) if takes(n))

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
