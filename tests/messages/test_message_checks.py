"""The checks msgfmt --check makes of existing translations, against msgfmt itself."""

import collections
import random
import re
import resource
import shutil
import signal
import subprocess

import pytest

from keras_transformer.messages.catalog_translation import catalog_problems
from keras_transformer.messages.catalog_translation import check_catalog
from keras_transformer.messages.catalog_translation import translate_catalog
from keras_transformer.messages.format_strings import arglists
from keras_transformer.messages.format_strings import java
from keras_transformer.messages.format_strings import lisp
from keras_transformer.messages.format_strings import scheme
from keras_transformer.messages.format_strings.arglist_segments import Segment
from keras_transformer.messages.format_strings.arglists import TooLarge
from keras_transformer.messages.format_strings.arglists import Undefined
from keras_transformer.messages.format_strings.common import Invalid
from keras_transformer.messages.message_checks import message_problem
from keras_transformer.messages.plural_forms import PluralRule
from keras_transformer.messages.po_file import PoEntry
from keras_transformer.messages.po_file import PoSyntaxError
from keras_transformer.messages.po_file import parse_po
from keras_transformer.messages.po_file import read_po

MSGFMT = shutil.which("msgfmt") or "/usr/bin/msgfmt"
HEADER = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'

# Pieces of format strings per language: valid and invalid directives, and the cases where
# gettext's reading is not the obvious one ({0:>8} is not {0}; %2$s %1$d is %d %s).
PIECES = {
    "c-format": ["%d", "%s", "%٥d", "%١$d", "%5d", "%ld", "%u", "%x", "%lu", "%c", "%lc", "%C", "%S", "%ls", "%f",
                 "%Lf", "%lf", "%e", "%p", "%n", "%hhn", "%%", "%m", "%1$s", "%2$d", "%1$d", "%2$s",
                 "%3$s", "%*d", "%.*s", "%*1$d", "%-10s", "% d", "%'d", "%Id", "%<PRIu64>",
                 "%<PRId32>", "%<PRIx>", "%0$s", "%q", "%zu", "%jd", "%td", "%hd", "%hhd", "%lld",
                 "%qd", "% ", "%", "%5", "%$", "%I", "%@", "%1$*2$d", "%5%", "%<PRIdFAST16>",
                 "%4294967297$d"],  # C's unsigned int wraps: argument 1
    "objc-format": ["%@", "%d", "%s", "%%"],
    "python-format": ["%s", "%d", "%(a)s", "%(b)d", "%(a)d", "%r", "%.0s", "%(a).0s", "%*d", "%%",
                      "%(a)%", "%i", "%f", "%F", "%a", "%c", "%(x", "%", "%5.2f", "%ld", "%(a)r"],
    "python-brace-format": ["{0}", "{1}", "{a}", "{a.b}", "{a[0]}", "{0:>8}", "{0:{1}}", "{}",
                            "{0!r}", "{{", "}}", "{", "}", "{a:x}", "{0[x]}", "{0:d}", " {b} "],
    "sh-format": ["$A", "${A}", "$B", "${B}", "$1", "${}", "$", "${A-x}", "$é", "x$ ", "$_x"],
    "php-format": ["%s", "%d", "%1$s", "%2$d", "%0$s", "%'*10s", "%'é", "%-5.2f", "%.f", "%ld", "%b",
                   "%%", "%", "%q", "%2$s", "%1$d", "%e", "%c", "%u"],
    "javascript-format": ["%s", "%d", "%j", "%1$s", "%2$d", "%0$s", "%%", "%", "%I5.2f", "%q", "%2$j",
                          "%1$d", "%c", "%b"],
    "lua-format": ["%s", "%d", "%q", "%5.2f", "%%", "%", "%z", "%c", "%i", "%-d"],
    "qt-format": ["%1", "%2", "%L1", "%10", "%0", "%%1", "%99", "%a", "%", "%3"],
    "qt-plural-format": ["%n", "%Ln", "%%n", "%1", "%"],
    "kde-format": ["%1", "%2", "%3", "%4", "%0", "%10", "%", "%%1"],
    "kde-kuit-format": ["%1", "%2", "%3", "%0", "%", "<b>", "</b>", "<b>%1</b>", "<i/>", "<gt:x>", "<a b='1'>",
                        "&", "&amp;", "&#65;", "&#x41;", "&#x;", "&#0;", "&#", "&lt;", "<", ">", "</c>",
                        "<é>", "<1>", "<a b>", "]]>", "<![CDATA[x]]>", "<!-- c -->", "<?pi?>"],
    "perl-brace-format": ["{a}", "{b}", "{a b}", "{{a}", "{1}", "{_x9}", "{", "}"],
    "smalltalk-format": ["%1", "%2", "%9", "%%", "%0", "%a", "%", "%é"],
    "ycp-format": ["%1", "%2", "%%", "%0", "%a", "%"],
    "csharp-format": ["{0}", "{1}", "{0,5}", "{0,-5:x}", "{0:N2}", "{{", "}}", "{", "}", "{a}", "{0,}",
                      "{0x}", "{0:", "{12}"],
    "java-printf-format": ["%s", "%d", "%1$s", "%2$d", "%<s", "%<d", "%0$s", "%n", "%%", "%-5%", "%#d",
                           "%,x", "%(a", "%5n", "%.2c", "%tY", "%Tq", "%t", "%5.f", "%.", "%-10.3f",
                           "%b", "%S", "%2$s", "%3$c", "%'d", "%é", "%4294967296$s"],
    "perl-format": ["%s", "%d", "%1$s", "%2$d", "%vd", "%*vd", "%*2$vd", "%*d", "%.*f", "%*1$d", "%.*2$f",
                    "%lld", "%hf", "%lf", "%Lf", "%I64d", "%I32d", "%Id", "%Vd", "%D", "%U", "%_", "%p",
                    "%n", "%%", "%0$d", "%05.2f", "%", "%q", "%2$s", "%ld", "%v0d", "%*v05d"],
    "tcl-format": ["%s", "%d", "%1$s", "%2$d", "%0$d", "%*d", "%.*f", "%hd", "%ld", "%hs", "%%", "%5%",
                   "%u", "%hu", "%c", "%", "%q", "%2$*d", "%-5.2e", "%4294967297$s"],
    "awk-format": ["%s", "%d", "%1$s", "%2$d", "%0$d", "%*d", "%*0$d", "%.*0$f", "%*2$d", "%.*1$f", "%%",
                   "%u", "%i", "%c", "%", "%q", "%5.2e", "%ld"],
    "boost-format": ["%s", "%d", "%1%", "%2%", "%1$s", "%2$d", "%|1$s|", "%|s|", "%||", "%|x", "%|2$|",
                     "%*d", "%*1$d", "%t", "%Tx", "%T", "%n", "%p", "%%", "%", "%q", "%lld", "%S",
                     "%0%", "%'_=5d", "%|1%|", "%4294967296%", "%4294967297$s"],
    "object-pascal-format": ["%s", "%d", "%0:s", "%1:d", "%:s", "%*:d", "%*d", "%.*f", "%-5.2F", "%x",
                             "%P", "%%", "%", "%q", "%.", "%.x", "%2:m", "%n", "%é"],
    "elisp-format": ["%s", "%S", "%d", "%1$s", "%2$d", "%0$d", "%*d", "%.*f", "%c", "%%", "%", "%q",
                     "%i", "%5.2e", "%1$*d", "%4294967296$s"],
    "librep-format": ["%s", "%S", "%d", "%1$s", "%2$d", "%0$d", "%^5d", "%*d", "%c", "%%", "%", "%i",
                      "%x", "%.2s"],
    "ruby-format": ["%s", "%d", "%1$s", "%2$d", "%<a>s", "%<b>d", "%{a}", "%{b}", "%<a>{b}", "%*d", "%.*f",
                    "%*1$d", "%.*2$f", "%0$s", "%*0$d", "%1$2$s", "%5 d", "%.2-d", "%.2*d", "%5*d", "%.1.2f",
                    "%<a", "%{a", "%%", "%\n", "%", "%q", "%p", "%B", "%a", "%-+#05.3e", "%<é>s", "%<a>d",
                    "%9999999999$s"],
    "gcc-internal-format": ["%s", "%d", "%1$s", "%2$d", "%0$s", "%<", "%>", "%'", "%%", "%m", "%qs", "%qqs",
                            "%lld", "%llld", "%wd", "%lwd", "%+#D", "%.5s", "%.5d", "%.*s", "%2$.*1$s",
                            "%1$.*s", "%2$.*2$s", "%.*1s", "%.x", "%.", "%H", "%J", "%K", "%F", "%T",
                            "%E", "%A", "%C", "%L", "%O", "%P", "%Q", "%V", "%u", "%lu", "%", "%y"],
    "gfc-internal-format": ["%s", "%d", "%1$s", "%2$d", "%3$d", "%0$s", "%C", "%L", "%c", "%i", "%u",
                            "%li", "%lu", "%ls", "%%", "%", "%q", "%2$C"],
    # No backslash ends a style: format-java.c would read past its end.
    "java-format": ["{0}", "{1}", "{2}", "{0,number}", "{0,number,#,##0.00}", "{1,number,integer}", "{1,date}",
                    "{1,time,short}", "{0,date,yyyy}", "{0,choice,0#no files|1#one file|1<{0,number} files}",
                    "{0,choice,#x}", "{0,choice,1x}", "{0,choice,1|2#a}", "{0,number,x}", "{0,numberx}",
                    "{0,foo}", "{x}", "{", "}", "'{0}'", "''", "'", "{0,choice,1\\u2264a}", "{0,number,0E0}",
                    "{0,number,#;(#)}", "{0,number,}", "{0,choice,}", "{0,choice,1#{1,date}|2#{1}}", "{0,time",
                    "{1,number,'#'0}", "{0,number,\\u0030}", "{0,number,é}", "{1,choice,1#'|'|2#}",
                    "{0,choice,1#{0,date}}", "{0,date,}", "{0,number,0.0E}", "{0,number,\\x#}", "{4294967296}"],
    "lisp-format": ["~a", "~S", "~d", "~b", "~o", "~X", "~r", "~p", "~:p", "~@P", "~c", "~f", "~e", "~g", "~$",
                    "~%", "~&", "~|", "~~", "~\n", "~t", "~*", "~:*", "~@*", "~2*", "~-1*", "~?", "~@?", "~(",
                    "~)", "~[", "~;", "~:;", "~]", "~:[", "~@[", "~:@[", "~{", "~:{", "~@{", "~}", "~<", "~>",
                    "~^", "~5d", "~v,'0d", "~'xd", "~,,'.:d", "~+", "~#[", "~1,2,3,4,5a", "~v*", "~w", "~/f/",
                    "~/x", "~@:a", "~q", "~", "~{~a~^, ~}", "~:[no~;~d~]", "~@[~a~]", "~[zero~;one~:;many~]",
                    "~(~a~)", "~<~a~;~a~>", "~:{~a~d~}", "~@{~s~}", "~{~}", "~i", "~_", "~3,va", "~#d", "~!"],
    "scheme-format": ["~a", "~S", "~d", "~b", "~o", "~X", "~r", "~p", "~:p", "~@P", "~c", "~,c", "~5c", "~f",
                      "~e", "~g", "~$", "~i", "~y", "~k", "~q", "~%", "~&", "~_", "~/", "~!", "~|", "~~", "~\n",
                      "~t", "~1,2,'xt", "~*", "~:*", "~@*", "~2*", "~-1*", "~?", "~@?", "~(", "~)", "~[", "~;",
                      "~:;", "~]", "~:[", "~@[", "~{", "~:{", "~@{", "~}", "~<", "~>", "~^", "~5d", "~v,'0d",
                      "~'xd", "~+", "~#[", "~1,2,3,4,5a", "~v*", "~w", "~", "~{~a~^, ~}", "~:[no~;~d~]",
                      "~@[~a~]", "~[zero~;one~:;many~]", "~(~a~)", "~:{~a~d~}", "~@{~s~}", "~{~}", "~3,vf"],
}
def undefined_in_gettext(dialect):
    """Whether gettext's Lisp or Scheme parser reads or writes memory it has not set on a
    string, or aborts, before any syntax error (msgfmt may crash there; our checker judges
    the string's syntax only)."""
    def test(text):
        try:
            lisp.list_arguments(text.partition("\0")[0], dialect)
        except Undefined:
            return True
        except Invalid:
            pass
        return False
    return test


# Strings msgfmt 0.21 cannot be compared on: format-pascal.c grows its array by the wrong
# count for a `.*` precision, and writes past it after a numbered `%n:` directive; format-lisp.c
# and format-scheme.c read and write past their arrays in some iterations (`~{~s ~s~^, ~}`).
MSGFMT_OVERFLOWS = {"object-pascal-format": lambda text: re.search(r"%[0-9]*:", text) and ".*" in text,
                    "lisp-format": undefined_in_gettext(lisp.COMMON_LISP),
                    "scheme-format": undefined_in_gettext(scheme.GUILE_SCHEME)}
TEXT = ["a", " b", "c ", "\n", "é", "x y", "50", "", "\0", "٥"]  # NUL ends a C string
RULES = [None, "nplurals=2; plural=(n != 1);", "nplurals=1; plural=0;", "nplurals=2; plural=n>1;",
         "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
         "(n%100<10 || n%100>=20) ? 1 : 2);"]


def quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace(
        "\0", "\\0") + '"'


def random_catalog(rng, count, plural_forms):
    """A catalog of random translated entries, some fuzzy, with every kind of flag: several
    `#,` lines (the last counts), `range:` before any word, flags apart by spaces."""
    lines = [HEADER + (quote(f"Plural-Forms: {plural_forms}\n") + "\n" if plural_forms else "")]
    nplurals = PluralRule.parse(plural_forms).nplurals if plural_forms else 0

    def text(language, source=False):  # a NUL would make msgids alike (msgfmt cuts there)
        words = [word for word in TEXT if not (source and "\0" in word)]
        while True:
            value = "".join(rng.choice(PIECES[language]) if rng.random() < 0.55 else rng.choice(words)
                            for _ in range(rng.randint(0, 4)))
            if not MSGFMT_OVERFLOWS.get(language, lambda text: False)(value):
                return value

    def flag_line(language):
        flags = [rng.choice([language, language, "possible-" + language, "no-" + language])]
        flags += ["fuzzy"] * (rng.random() < 0.1)
        if rng.random() < 0.05:
            flags.append(f"range: {rng.choice(['0..5', '1..2', '3..1', '٢..٢', 'fuzzy', language])}")
        rng.shuffle(flags)
        return "#, " + rng.choice([", ", " "]).join(flags) + "\n"

    for k in range(count):
        language = rng.choice(list(PIECES))
        msgid = f"{text(language, source=True)} #{k}"
        lines.append("".join(flag_line(language) for _ in range(1 + (rng.random() < 0.1))))
        lines.append(f"msgid {quote(msgid)}\n")
        if nplurals and rng.random() < 0.4:
            msgid_plural = msgid if rng.random() < 0.3 else f"{text(language, source=True)} #{k}"
            lines.append(f"msgid_plural {quote(msgid_plural)}\n")
            for form in range(nplurals):
                value = text(language) if rng.random() < 0.5 else rng.choice([msgid, msgid_plural])
                lines.append(f"msgstr[{form}] {quote(value or 'x' * (form == 0))}\n")
        else:
            value = text(language) if rng.random() < 0.4 else msgid
            if rng.random() < 0.3:
                value = msgid.replace("%d", "%i").replace("{0}", "{1}")
            lines.append(f"msgstr {quote(value or 'y')}\n")
        lines.append("\n")
    return "".join(lines)


def msgfmt_problems(path):
    """{line: [messages]} of `msgfmt --check`'s errors (warnings left out)."""
    result = subprocess.run([MSGFMT, "--check", "-o", "/dev/null", str(path)], capture_output=True)
    problems = collections.defaultdict(list)
    for line in result.stderr.decode("utf-8", "replace").splitlines():
        match = re.match(re.escape(str(path)) + r":(\d+): (.*)", line)
        if match and "warning:" not in match.group(2):
            problems[int(match.group(1))].append(match.group(2))
    return problems


def same_message(ours, theirs):
    """msgfmt prints a character in a reason as one byte (cut at NUL, half of an é): compare
    those up to their reason."""
    if ours == theirs:
        return True
    garbled = not theirs.isascii() or "\ufffd" in theirs or theirs.endswith("'")
    return garbled and ours.split("Reason:")[0] == theirs.split("Reason:")[0]


@pytest.mark.parametrize("seed,plural_forms", list(enumerate(RULES)))
def test_every_problem_msgfmt_finds_is_found_in_its_words_and_no_other(tmp_path, seed, plural_forms):
    """100 random translated entries per language and plural rule: the lines msgfmt --check
    refuses are exactly ours, with msgfmt's message."""
    count = 100 * len(PIECES)
    text = random_catalog(random.Random(seed), count, plural_forms)
    path = tmp_path / "t.po"
    path.write_text(text, encoding="utf-8")
    theirs = msgfmt_problems(path)
    ours = dict(catalog_problems(parse_po(text, str(path))))  # what translate-po refuses
    assert len(theirs) > count / 15  # the catalog exercises the check
    assert set(ours) == set(theirs)
    assert all(any(same_message(ours[line], message) for message in theirs[line]) for line in ours)


@pytest.mark.parametrize("msgid,msgstr,flags,problem", [
    ("%d files in %s", "%d Dateien", "c-format",
     "number of format specifications in 'msgid' and 'msgstr' does not match"),
    ("%d of %s", "%2$s von %1$d", "c-format", None),  # numbered arguments in another order
    ("%d files", "%5d Dateien", "c-format", None),  # a width takes no argument
    ("%ld files", "%d Dateien", "c-format",
     "format specifications in 'msgid' and 'msgstr' for argument 1 are not the same"),
    ("%s", "%S", "c-format", "format specifications in 'msgid' and 'msgstr' for argument 1 are not the same"),
    ("%d%%", "%d %", "c-format", "'msgstr' is not a valid C format string, unlike 'msgid'. "
     "Reason: The string ends in the middle of a directive."),
    ("%(a)s and %(b)d", "%(a)s", "python-format",
     "a format specification for argument 'b' doesn't exist in 'msgstr'"),
    ("{a} q", "q", "python-brace-format", "a format specification for argument 'a' doesn't exist in 'msgstr'"),
    ("$HOME", "x", "sh-format", "a format specification for argument 'HOME' doesn't exist in 'msgstr'"),
    ("%d files", "Dateien", "no-c-format", None),
    ("%d files", "Dateien", "fuzzy c-format", None),  # msgfmt does not compile fuzzy entries
    ("50% of %s", "50 % von %s", "", None),  # no flag: no format
    ("line\n", "Zeile", "", "'msgid' and 'msgstr' entries do not both end with '\\n'"),
    ("%1$s of %2$d", "%2$d: %1$s", "perl-format", None),
    ("%d files", "%#d Dateien", "java-printf-format", "'msgstr' is not a valid Java printf format string, "
     "unlike 'msgid'. Reason: In the directive number 1, the flag '#' is invalid for the conversion 'd'."),
    ("{0} files", "{0} {1} Dateien", "java-format",
     "a format specification for argument {1}, as in 'msgstr', doesn't exist in 'msgid'"),
    ("%<a>s and %<b>d", "%<a>s", "ruby-format", "a format specification for argument 'b' doesn't exist in 'msgstr'"),
    ("%qs: %m", "%qs", "gcc-internal-format", "'msgid' uses %m but 'msgstr' doesn't"),
    ("~a and ~d", "~a", "lisp-format", "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~{~a~^, ~}", "~{~a~^; ~}", "lisp-format", None),
    # an iteration of 3 or more arguments (left unchecked before: make_repeated_list took
    # its loop's length after unfolding it)
    ("~{~a ~a ~a~}", "~a", "lisp-format", "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~a", "~{~a ~a ~a~}", "lisp-format", "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~{~a~a~a~}", "~{~a~a~}", "lisp-format", "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~{~a ~a ~a~}", "~{~a ~a ~a~}", "lisp-format", None),
    ("~{~a ~a ~a~}", "~a", "scheme-format", "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    # a loop of two elements rotated far (rotate_loop): 100,000 copies of it
    ("~a", "~@{~a~d~}~100000@*~a", "lisp-format",
     "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~@{~a~d~}~100000@*~d", "~@{~a~d~}~100000@*~a", "lisp-format",
     "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~@{~a~d~}~100000@*~a", "~@{~a~d~}~100001@*~a", "lisp-format", None),
    # make_repeated_list copies elements from past the iteration's initial segment: those
    # make_union_list left in its array (left unchecked before)
    ("~a", "~{~^~a~}", "lisp-format", "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~{~a~^, ~a~}", "~{~a~}", "lisp-format",
     "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~b~{~v,v^~}", "x", "lisp-format", "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~{~^~a~}", "~{~^~a~}", "lisp-format", None),
    # the escape's list rotated to a `~^` cuts the loop's element: add_end_constraint reads
    # the short loop's first element and drops the loop (no abort)
    ("~@{~a~a~a~}~2@*~^~a", "~d", "lisp-format",
     "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~@{~a~a~a~}~2@*~^~a", "~@{~a~a~a~}~2@*~^~a", "lisp-format", None),
    # slots copied but never read: one never set past the walk's end (`~2*` leaves the loop
    # three slots, the walk reads two), a list normalization dropped without freeing it
    ("~@{~:^~s~:^~2*~}~a", "~a", "lisp-format",
     "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~@{~:^~s~:^~2*~}~a", "~@{~:^~s~:^~2*~}~a", "lisp-format", None),
    ("~b~v{~v^~i~3@*~}~d", "x", "scheme-format",
     "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~a", "~*~{~:^~:@{~1@*~}~1@*~1,2^~}~a", "lisp-format",
     "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~*~{~:^~:@{~1@*~}~1@*~1,2^~}~a", "~*~{~:^~:@{~1@*~}~1@*~1,2^~}~a", "lisp-format", None),
    # a rotated loop that grows where gettext's `allocated` tells it to reallocate first
    ("~*~@{~:^~d~va~1^~}~3@*~a", "~a", "lisp-format",
     "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~*~@{~:^~d~va~1^~}~3@*~a", "~*~@{~:^~d~va~1^~}~3@*~a", "lisp-format", None),
    ("~*~@{~#^~1,2^~v,3^~va~}~3@*~a", "x", "scheme-format",
     "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    # a list element before the slots read (a list of the array's own, not one dropped)
    ("~{~{~a~}~^~a~}", "~a", "lisp-format", "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~a", "~{~{~a~}~^~a~}", "lisp-format", "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~{~:{~a~}~^~a~}", "~a", "lisp-format", "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~{~:{~a~}~^~a~}", "~{~:{~a~}~^~a~}", "lisp-format", None),
    ("~a", "~{~^~a~}", "scheme-format", "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~:[none~;~d~]", "~:[none~;~d", "lisp-format", "'msgstr' is not a valid Lisp format string, unlike "
     "'msgid'. Reason: Found '~\\' without matching '~]'."),
    ("~d", "~i", "scheme-format", "format specifications in 'msgid' and 'msgstr' are not equivalent"),
    ("~<~a~>", "~a", "scheme-format", None),  # Guile has no ~<: msgid is invalid, nothing is checked
    ("<b>%1</b>", "<b>%1</c>", "kde-kuit-format", "'msgstr' is not a valid KDE KUIT format string, unlike "
     "'msgid'. Reason: error while parsing: Opening and ending tag mismatch: b line 1 and c"),
])
def test_one_entry_as_msgfmt_reads_it(tmp_path, msgid, msgstr, flags, problem):
    entry = f"#, {flags}\n" if flags else ""
    text = f"{HEADER}\n{entry}msgid {quote(msgid)}\nmsgstr {quote(msgstr)}\n"
    path = tmp_path / "t.po"
    path.write_text(text, encoding="utf-8")
    assert message_problem(parse_po(text).entries[1]) == problem
    assert list(msgfmt_problems(path).values()) == ([[problem]] if problem else [])


@pytest.mark.parametrize("plural_forms,flags,forms,problem", [
    ("nplurals=2; plural=(n != 1);", "c-format", ["Eine Datei", "Dateien"],
     "number of format specifications in 'msgid_plural' and 'msgstr[1]' does not match"),
    ("nplurals=2; plural=(n != 1);", "c-format", ["Eine Datei", "%d Dateien"], None),
    # French: form 0 takes 0 and 1, still few counts.
    ("nplurals=2; plural=(n > 1);", "c-format", ["Un fichier", "%d fichiers"], None),
    # A range flag makes form 1 rare too: n = 2 alone takes it in 1..2 ...
    ("nplurals=2; plural=(n != 1);", "c-format, range: 1..2", ["Eine Datei", "Zwei Dateien"], None),
    # ... but 0 and 2 take it in 0..2.
    ("nplurals=2; plural=(n != 1);", "c-format, range: 0..2", ["Eine Datei", "Zwei Dateien"],
     "number of format specifications in 'msgid_plural' and 'msgstr[1]' does not match"),
])
def test_a_form_few_counts_take_may_leave_arguments_out(tmp_path, plural_forms, flags, forms, problem):
    text = (f"{HEADER}{quote(f'Plural-Forms: {plural_forms}' + chr(10))}\n\n#, {flags}\n"
            f'msgid "One file"\nmsgid_plural "%d files"\n'
            + "".join(f"msgstr[{k}] {quote(form)}\n" for k, form in enumerate(forms)))
    path = tmp_path / "t.po"
    path.write_text(text, encoding="utf-8")
    assert list(catalog_problems(parse_po(text))) == ([(9, problem)] if problem else [])
    assert list(msgfmt_problems(path).values()) == ([[problem]] if problem else [])


class _Untouched:
    """A translator translate_catalog must not call: the catalog is refused first."""

    target_language = "de"

    def translations(self, *args, **kwargs):
        raise AssertionError("the catalog was translated")


def test_translate_catalog_refuses_a_catalog_msgfmt_refuses_before_any_work():
    text = (HEADER + '"Language: de\\n"\n\n#, c-format\nmsgid "%d files in %s"\nmsgstr "%d Dateien"\n'
            '\nmsgid "Open"\nmsgstr ""\n')
    catalog = parse_po(text, "de.po")
    with pytest.raises(PoSyntaxError, match=r"^de\.po:8: number of format specifications in "
                                            r"'msgid' and 'msgstr' does not match \(msgfmt"):
        translate_catalog(catalog, _Untouched())
    assert catalog.text() == text


def test_a_translated_plural_entry_needs_the_headers_plural_forms():
    text = HEADER + '\nmsgid "a"\nmsgid_plural "as"\nmsgstr[0] "b"\nmsgstr[1] "bs"\n'
    with pytest.raises(PoSyntaxError, match=r"^de\.po:7: a translated plural entry, but the "
                                            r"header has no Plural-Forms"):
        translate_catalog(parse_po(text, "de.po"), _Untouched())


PLURAL_ENTRY = '\n#, c-format\nmsgid "%d file"\nmsgid_plural "%d files"\nmsgstr[0] "%d Datei"\nmsgstr[1] "Dateien"\n'


@pytest.mark.parametrize("header_line,refused", [
    # gettext finds nplurals= and plural= anywhere in the header: a field name in lower case,
    # and an expression that a newline ends (no ';' before the next field), are rules.
    ('"plural-forms: nplurals=2; plural=(n != 1);\\n"', "msgstr[1]' does not match"),
    ('"Plural-Forms: nplurals=2; plural=(n != 1)\\n"\n"X-Generator: Lokalize 2.0\\n"', "msgstr[1]' does not match"),
    ('"Plural-Forms: nplural=2; plural=(n != 1);\\n"', "has plural= but no nplurals="),
    ('"Plural-Forms: nplurals=2; plural=n/0;\\n"', "divides by zero"),
])
def test_the_headers_plural_rule_is_found_and_checked_as_msgfmt_does(tmp_path, header_line, refused):
    text = f"{HEADER}{header_line}\n{PLURAL_ENTRY}"
    path = tmp_path / "t.po"
    path.write_text(text, encoding="utf-8")
    assert subprocess.run([MSGFMT, "--check", "-o", "/dev/null", str(path)], capture_output=True).returncode
    with pytest.raises(ValueError, match=re.escape(refused)):
        translate_catalog(parse_po(text, str(path)), _Untouched())
    # Without the plural entry msgfmt accepts the catalog unless the rule cannot be evaluated.
    bare = f"{HEADER}{header_line}\n"
    path.write_text(bare, encoding="utf-8")
    accepted = not subprocess.run([MSGFMT, "--check", "-o", "/dev/null", str(path)], capture_output=True).returncode
    assert accepted == (refused != "divides by zero")
    if accepted:
        assert translate_catalog(parse_po(bare), _Untouched()).translated == 0
    else:
        with pytest.raises(ValueError, match=refused):
            translate_catalog(parse_po(bare), _Untouched())


def _msgfmt_verdict(path):
    """(accepted, the line of msgfmt's first error or None)."""
    run = subprocess.run([MSGFMT, "--check", "-o", "/dev/null", str(path)], capture_output=True,
                         text=True, errors="replace")
    line = re.search(rf"^{re.escape(str(path))}:(\d+): (?!warning)", run.stderr, re.M)
    return run.returncode == 0, line and int(line.group(1))


def _our_verdict(path):
    """(accepted, the line of our error or None), as translate-po reads a catalog."""
    try:
        check_catalog(read_po(path))
    except PoSyntaxError as error:
        return False, int(re.match(rf"{re.escape(str(path))}:(\d+):", str(error)).group(1))
    return True, None


@pytest.mark.parametrize("expression", [
    # plural.y's bison parser holds at most 9,999 states (YYMAXDEPTH 10000): one per
    # parenthesis, `!`, and operand and operator still open, and one more.
    "(" * 9995 + "n!=1" + ")" * 9995, "(" * 9996 + "n!=1" + ")" * 9996,
    "n==0?0:" * 2499 + "1", "n==0?0:" * 2500 + "1",
    "!" * 9994 + "(n!=1)", "!" * 9995 + "(n!=1)",
    "0+(" * 3331 + "n!=1" + ")" * 3331, "0+(" * 3332 + "n!=1" + ")" * 3332,
    "n" + "+n" * 20000 + "!=1",  # left-associative: each + is reduced at once
    "18446744073709551617",  # an unsigned long wraps: 1
    "n-1",  # negative as a long for n = 0
])
def test_a_deep_plural_expression_is_read_as_msgfmt_reads_it(tmp_path, expression):
    """msgfmt refuses what overflows its parser's stack, with the header's line; we give the
    same verdict and line, without recursion."""
    path = tmp_path / "t.po"
    path.write_text(f'{HEADER}"Plural-Forms: nplurals=2; plural={expression};\\n"\n',
                    encoding="utf-8")
    assert _our_verdict(path) == _msgfmt_verdict(path)


@pytest.mark.parametrize("body", [
    'msgid "a"\nmsgstr "b"\n',  # no header entry: msgfmt --check: PO file header missing
    '#~ msgid ""\n#~ msgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\nmsgid "a"\nmsgstr "b"\n',
    # a NUL ends the string it is in; the strings after it still count
    'msgid ""\nmsgstr "\\0x"\n"Content-Type: text/plain; charset=UTF-8\\n"\n',
    f'{HEADER}"X: \\0"\n"Plural-Forms: nplurals=2; plural=n/0;\\n"\n',
    f'{HEADER}"Plural-Forms: nplurals=2; plural=n\\0/0;\\n"\n',
    f'{HEADER}\nmsgid "a\\0x" "b"\nmsgstr "c"\n\nmsgid "ab"\nmsgstr "d"\n',
    f'{HEADER}\nmsgid "a"\nmsgstr "\\0x" ""\n\nmsgid "a\\n"\nmsgstr "x\\0" "\\n"\n',
])
def test_a_catalog_without_header_and_nul_bytes_are_read_as_msgfmt_reads_them(tmp_path, body):
    path = tmp_path / "t.po"
    path.write_text(body, encoding="utf-8")
    accepted, line = _msgfmt_verdict(path)
    assert _our_verdict(path) == (accepted, line or (None if accepted else 1))


STACK = 8 << 20  # the default stack limit, with which the depths below were measured
LARGE_STACK = 256 << 20  # enough for msgfmt to read Lisp and Scheme strings 30,000 levels deep
MEMORY = 4 << 30


def _msgfmt_on_stack(path, stack=STACK, cpu_seconds=None):
    """msgfmt --check on `path` with `stack` bytes of stack (by default 8 MiB), and killed
    after `cpu_seconds` if given (it loops on some strings): (its exit status, {line:
    [messages]}). Skips the test where the stack cannot be had."""
    stack_hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
    if 0 <= stack_hard < stack:
        pytest.skip(f"the stack's hard limit is {stack_hard} bytes, below {stack}")

    def limit_stack():
        resource.setrlimit(resource.RLIMIT_STACK, (stack, stack_hard))
        if cpu_seconds is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]  # a runaway msgfmt fails, not the machine
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY if hard < 0 else min(MEMORY, hard), hard))

    run = subprocess.run([MSGFMT, "--check", "-o", "/dev/null", str(path)], capture_output=True,
                         text=True, errors="replace", preexec_fn=limit_stack)
    problems = collections.defaultdict(list)
    for line in run.stderr.splitlines():
        match = re.match(re.escape(str(path)) + r":(\d+): (.*)", line)
        if match and "warning:" not in match.group(2):
            problems[int(match.group(1))].append(match.group(2))
    return run.returncode, dict(problems)


def _entry_file(tmp_path, flag, msgid, msgstr):
    path = tmp_path / "t.po"
    path.write_text(f"{HEADER}\n#, {flag}\nmsgid {quote(msgid)}\nmsgstr {quote(msgstr)}\n",
                    encoding="utf-8")
    return path


def _nested(levels, depth, inner):
    """`depth` directives that nest, `levels` ((opener, closer) pairs) in turn from the
    outside, around `inner`."""
    chosen = [levels[k % len(levels)] for k in range(depth)]
    return "".join(opener for opener, _ in chosen) + inner + "".join(
        closer for _, closer in reversed(chosen))


_SWAPPED_CLOSER = {"~)": "~]", "~]": "~)", "~>": "~)"}
# Directives that nest, in turn: all kinds; and those that keep the arguments after them
# known (`~@[` unites its clause with the argument being nil, which hides what the clause's
# later arguments are).
LISP_LEVELS = {"lisp-format": (("~(", "~)"), ("~@[", "~]"), ("~<", "~>")),
               "scheme-format": (("~(", "~)"), ("~@[", "~]"))}
KEEPING_LEVELS = {"lisp-format": (("~(", "~)"), ("~<", "~>"), ("~:@(", "~)")),
                  "scheme-format": (("~(", "~)"), ("~:@(", "~)"))}
PARSERS = {"lisp-format": lisp.lisp_arguments, "scheme-format": scheme.scheme_arguments,
           "java-format": java.java_arguments}


def _judged(flag, text):
    """Whether our parser gives a verdict on `text` (arguments, or Invalid), not Undefined."""
    try:
        PARSERS[flag](text)
    except Invalid:
        pass
    except Undefined:
        return False
    return True


def _lisp_variants(flag, depth):
    """(msgid, msgstr) pairs nested `depth` deep, innermost a list iteration (the depth-th
    level) and a number: the same string; an invalid directive innermost; the innermost closer
    mismatched; one argument too many."""
    levels, keeping, depth = LISP_LEVELS[flag], KEEPING_LEVELS[flag], depth - 1
    valid = _nested(levels, depth, "~{~a~^, ~}~d")
    innermost_closer = levels[(depth - 1) % len(levels)][1]
    at = valid.index(innermost_closer, valid.index("~d"))
    mismatched = valid[:at] + _SWAPPED_CLOSER[innermost_closer] + valid[at + len(innermost_closer):]
    return [(valid, valid), (valid, _nested(levels, depth, "~{~a~^, ~}~J")), (valid, mismatched),
            (_nested(keeping, depth, "~{~a~^, ~}~d"), _nested(keeping, depth, "~{~a~^, ~}~d~s"))]


@pytest.mark.parametrize("flag,depth", [
    *((flag, depth) for flag in ("lisp-format", "scheme-format")
      for depth in (99, 100, 101, 150, 1_000, 10_000, 30_000))])
def test_lisp_and_scheme_nested_deep_are_checked_as_msgfmt_checks_them(tmp_path, flag, depth):
    """Directives nested around the 100 levels where this library used to stop (99, 100, 101,
    150), 1,000, 10,000, and 30,000 (deeper than msgfmt reads on its default 8 MiB stack: it
    is given 256 MiB there): the same verdict and message as msgfmt for a valid translation,
    one with an invalid directive innermost, one whose innermost closing directive is not the
    opening one's, one with an argument too many; none left unchecked."""
    verdicts = []
    for msgid, msgstr in _lisp_variants(flag, depth):
        path = _entry_file(tmp_path, flag, msgid, msgstr)
        status, theirs = _msgfmt_on_stack(path, STACK if depth < 20_000 else LARGE_STACK)
        assert status in (0, 1)  # no crash
        ours = dict(catalog_problems(parse_po(path.read_text(encoding="utf-8"), str(path))))
        assert set(ours) == set(theirs)
        assert all(any(same_message(ours[line], message) for message in theirs[line])
                   for line in ours)
        assert _judged(flag, msgstr)
        verdicts.append(ours.get(7, "accepted"))
    assert verdicts[0] == "accepted"
    assert "the character 'J' is not a valid conversion specifier" in verdicts[1]
    assert "without matching" in verdicts[2]
    assert verdicts[3] == "format specifications in 'msgid' and 'msgstr' are not equivalent"


@pytest.mark.parametrize("flag,crashes", [("lisp-format", 23_000), ("scheme-format", 24_000)])
def test_nested_deeper_than_msgfmts_default_stack_is_judged_as_on_a_larger_one(tmp_path, flag,
                                                                              crashes):
    """msgfmt's parse_upto overflows the default 8 MiB stack past about 22,763 levels (Lisp)
    and 23,814 (Scheme), and judges those strings on a larger stack: so do we, whatever the
    stack (an innermost invalid directive refused, the same string without it accepted)."""
    invalid = "~(" * crashes + "~a~J" + "~)" * crashes
    path = _entry_file(tmp_path, flag, "~a", invalid)
    assert _msgfmt_on_stack(path)[0] < 0  # killed by SIGSEGV
    status, theirs = _msgfmt_on_stack(path, LARGE_STACK)
    assert status == 1 and list(theirs) == [7] and "the character 'J'" in theirs[7][0]
    assert _our_verdict(path) == (False, 7)
    path = _entry_file(tmp_path, flag, "~a", invalid.replace("~J", ""))
    assert _msgfmt_on_stack(path, LARGE_STACK) == (0, {})
    assert _our_verdict(path) == (True, None)


@pytest.mark.parametrize("opener,depth", [("~{", 1_000), ("~{", 10_000), ("~{", 22_500),
                                          ("~:{", 10_000), ("~@{", 10_000)])
def test_iterations_nested_deep_are_judged(tmp_path, opener, depth):
    """`~{` nested: msgfmt takes 20 s at 100 levels and grows with the fifth power of the
    depth (its lists of lists are copied and walked at each level), so its verdict on a valid
    deep msgid is known by reasoning only: the same string is accepted, one whose innermost
    argument is of another type refused. That reasoning assumes msgfmt's list operations,
    which recurse as deep as its lists nest, do not overflow its stack before its parser
    does (unconfirmed: it cannot be run this deep). One invalid or unbalanced innermost msgfmt refuses
    before any of that work: compared with msgfmt. At 30 levels all is compared with msgfmt."""
    text = opener * depth + "~a" + "~}" * depth
    other = opener * depth + "~d" + "~}" * depth
    for msgid, msgstr, problem in (
            (text, text, None),
            (text, other, "format specifications in 'msgid' and 'msgstr' are not equivalent")):
        entry = PoEntry(msgid=msgid, msgstr=[msgstr], flags=("lisp-format",))
        assert message_problem(entry) == problem
        assert _judged("lisp-format", msgstr)
    for msgstr in (opener * depth + "~J" + "~}" * depth,  # refused before any list work
                   opener * depth + "~a~)" + "~}" * (depth - 1)):
        path = _entry_file(tmp_path, "lisp-format", "~a", msgstr)
        status, theirs = _msgfmt_on_stack(path)
        assert status == 1 and _our_verdict(path) == (False, 7)
        ours = dict(catalog_problems(parse_po(path.read_text(encoding="utf-8"), str(path))))
        assert list(ours) == list(theirs) == [7] and same_message(ours[7], theirs[7][0])
    shallow, shallow_other = opener * 30 + "~a" + "~}" * 30, opener * 30 + "~d" + "~}" * 30
    for msgstr in (shallow, shallow_other):
        path = _entry_file(tmp_path, "lisp-format", shallow, msgstr)
        assert _our_verdict(path) == _msgfmt_verdict(path)


@pytest.mark.parametrize("depth", [99, 100, 101, 150, 1_000, 10_000])
def test_java_choices_nested_deep_are_checked_as_msgfmt_checks_them(tmp_path, depth):
    """A choice nested in a choice 99 to 150 levels deep (around the 100 levels where this
    library used to stop), 1,000 and 10,000 (msgfmt reads about 29,000 on its stack, but needs
    about 10 GB for that: each level copies the text it holds): the same verdict and message
    as msgfmt for a valid translation, one with an invalid directive innermost, one missing
    its last closing brace, one with an argument msgid lacks."""
    nest = "{0,choice,0#" * depth
    translations = [nest + "x{0}" + "}" * depth, nest + "{x}" + "}" * depth,
                    nest + "x{0}" + "}" * (depth - 1), nest + "{1}" + "}" * depth]
    verdicts = []
    for msgstr in translations:
        path = _entry_file(tmp_path, "java-format", "{0,choice,0#x}", msgstr)
        status, theirs = _msgfmt_on_stack(path)
        assert status in (0, 1)
        ours = dict(catalog_problems(parse_po(path.read_text(encoding="utf-8"), str(path))))
        assert set(ours) == set(theirs)
        assert all(any(same_message(ours[line], message) for message in theirs[line])
                   for line in ours)
        assert _judged("java-format", msgstr)
        verdicts.append(ours.get(7, "accepted"))
    assert verdicts[0] == "accepted"
    assert "'{' is not followed by an argument number" in verdicts[1]
    assert "found '{' without matching '}'" in verdicts[2]
    assert verdicts[3].startswith("a format specification for argument {1}, as in 'msgstr'")


def test_java_choices_nested_deeper_than_msgfmts_default_stack_are_judged():
    """msgfmt's message_format_parse overflows its 8 MiB stack past about 29,600 levels (it
    reads 269, 3,450 and 7,815 levels with 1, 2 and 3 MiB: 240 bytes a level after the copies
    of the innermost levels) and judges deeper strings on a larger stack: so do we. msgfmt is
    not run: it needs about 8 GB of memory that deep (each level copies what it holds)."""
    def nest(depth, inner):
        return "{0,choice,0#" * (depth - 1) + inner + "}" * (depth - 1)

    with pytest.raises(Invalid, match="In the directive number 40000, '{' is not followed by an "
                                      "argument number"):
        java.java_arguments(nest(40_000, "{x}"))
    assert java.java_arguments(nest(40_000, "{1}")) == {0: "number", 1: "object"}


@pytest.mark.parametrize("msgstr,accepted", [
    ("{" * 200_000, False),  # each `{` would scan to the end
    ("'{" * 100_000, False),
    ("{0,choice,0#" * 99 + "x" * 200_000 + "}" * 99, True),  # each level would step 200 KB
    ("{0,choice,0#" * 99 + "{0}" * 66_000 + "}" * 99, True),  # ... and count its braces
    ("{0,choice,0#" * 99 + "''x|" * 50_000 + "}" * 99, False),
])
def test_long_java_strings_are_read_in_one_pass_per_level(tmp_path, msgstr, accepted):
    """Long hostile java-format strings are judged as msgfmt judges them, in a search per
    stop (quote, brace, `|`) rather than a step per character: these take seconds when each
    level of a choice steps through the text nested in it."""
    path = tmp_path / "t.po"
    path.write_text(f'{HEADER}\n#, java-format\nmsgid "{{0,choice,0#x}}"\nmsgstr "{msgstr}"\n',
                    encoding="utf-8")
    assert _our_verdict(path) == _msgfmt_verdict(path) == (accepted, None if accepted else 7)


@pytest.mark.parametrize("charset,flag,msgid,msgstr", [
    ("BIG5", "lisp-format", "~a", b"~a \xa4\x7e"),  # 才: its second byte is `~`
    ("BIG5", "java-format", "{0}", b"{0} \xa4\x7b"),  # its second byte is `{`
    ("BIG5", "java-format", "{0}", b"{0} \xa4\x7d"),  # `}`
    ("SHIFT_JIS", "csharp-format", "{0}", b"{0} \x83\x7b"),  # ボ
    ("SHIFT_JIS", "lisp-format", "~a", b"~a \x83\x7e"),
    ("GBK", "scheme-format", "~a", b"~a \x81\x7e"),
    ("BIG5", "lisp-format", "~a", b"~a \xa4\x40"),  # 一: nothing ASCII-like
    ("BIG5", "ruby-format", "%s", b"%s \xa4\x7b"),
    ("SHIFT_JIS", "perl-format", "%s", b"%s \x83\x5c"),
])
def test_format_strings_are_read_in_the_catalogs_bytes(tmp_path, charset, flag, msgid, msgstr):
    """msgfmt reads a format string's bytes in the catalog's charset, where a double-byte
    character's second byte can be a `~`, `{` or `}`: as msgfmt does, in every such charset."""
    path = tmp_path / "t.po"
    path.write_bytes(HEADER.replace("UTF-8", charset).encode("ascii")
                     + f'\n#, {flag}\nmsgid "{msgid}"\nmsgstr "'.encode("ascii") + msgstr + b'"\n')
    assert _our_verdict(path) == _msgfmt_verdict(path)


@pytest.mark.parametrize("charset,flag,msgid,msgstr,accepted", [
    ("BIG5", "python-brace-format", "{0}", b"{0} \xa4\x7b", False),  # a `{` no name follows
    ("SHIFT_JIS", "python-brace-format", "{0}", b"{0} \x83\x7b", False),
    ("GBK", "python-brace-format", "{a}", b"{a} \x81\x7b", False),
    ("BIG5", "python-brace-format", "{a}", b"{a} \xa4\x7d", True),  # a lone `}` is text
    ("UTF-8", "python-brace-format", "{0:\xc3\xa9>}", b"{1}", True),  # \xc3 is no fill: msgid is invalid
    ("BIG5", "perl-brace-format", "{a}", b"\xa4\x7ba}", True),  # `{a}` in the bytes
    ("SHIFT_JIS", "perl-brace-format", "{a}", b"{a\x83\x7d", False),
    ("BIG5", "sh-format", "${A}", b"${A\xa4\x7d}", False),  # a non-ASCII name
    ("BIG5", "python-format", "%(a)s", b"%(a)s \xa4\x40", True),
    ("BIG5", "qt-format", "%1", b"%1\xa4\x7b", True),
    ("BIG5", "kde-format", "%1", b"\xa4\x7b%1", True),
    ("BIG5", "smalltalk-format", "%1", b"%1 \xa4\x7e", True),
])
def test_brace_and_named_formats_are_read_in_the_catalogs_bytes(tmp_path, charset, flag, msgid, msgstr,
                                                                accepted):
    """python-brace, perl-brace, sh, Python, Qt, KDE, Smalltalk: msgfmt reads their bytes in
    the catalog's charset too, where a BIG5, SHIFT_JIS or GBK character's second byte can be a
    `{` or `}`, and a UTF-8 é is two bytes, no fill character of a brace field."""
    path = tmp_path / "t.po"
    path.write_bytes(HEADER.replace("UTF-8", charset).encode("ascii")
                     + f'\n#, {flag}\nmsgid "{msgid}"\nmsgstr "'.encode("latin-1") + msgstr + b'"\n')
    assert _our_verdict(path) == _msgfmt_verdict(path) == (accepted, None if accepted else 7)


def test_a_format_string_the_catalogs_charset_cannot_hold_is_refused_in_one_line():
    """A kde-kuit-format (or any format) translation with a character the catalog's charset
    lacks (a catalog built in memory): a PoSyntaxError naming it, not a UnicodeEncodeError."""
    for flag, msgid in (("kde-kuit-format", "<b>%1</b>"), ("lisp-format", "~a")):
        catalog = parse_po((HEADER.replace("UTF-8", "ISO-8859-1")
                            + f'\n#, {flag}\nmsgid "{msgid}"\nmsgstr "{msgid}"\n').encode("ascii"),
                           "t.po")
        catalog.entries[-1].msgstr[0] = msgid + " €"
        with pytest.raises(PoSyntaxError, match=f"t.po:7: the {flag} string has a character "
                                                "iso8859-1 cannot hold"):
            check_catalog(catalog)


@pytest.mark.parametrize("charset", ["UTF-8", "ISO-8859-1"])
def test_kuit_markup_is_checked_in_the_catalogs_bytes(tmp_path, charset):
    """libxml2 reads the string's bytes as UTF-8, as msgfmt gives them: an é in an ISO-8859-1
    catalog is not proper UTF-8."""
    path = tmp_path / "t.po"
    path.write_bytes((HEADER.replace("UTF-8", charset) + '\n#, kde-kuit-format\nmsgid "<b>%1</b>"\n'
                      'msgstr "<b>é%1</b>"\n').encode(charset))
    assert _our_verdict(path) == _msgfmt_verdict(path) == ((True, None) if charset == "UTF-8"
                                                           else (False, 7))


@pytest.mark.parametrize("header,problem", [
    ('msgid ""\nmsgstr ""\n', "the header entry is empty"),  # msgfmt: header missing or invalid
    ('#, fuzzy\nmsgid ""\nmsgstr ""\n', "the header entry is empty"),
    ('msgid ""\nmsgid_plural "x"\nmsgstr[0] "Content-Type: text/plain; charset=UTF-8\\n"\nmsgstr[1] ""\n',
     "a translated plural entry, but the header has no Plural-Forms"),
    ('msgid ""\nmsgid_plural "x"\nmsgstr[0] "Content-Type: text/plain; charset=UTF-8\\n'
     'Plural-Forms: nplurals=2; plural=(n != 1);\\n"\nmsgstr[1] ""\n', None),
    ('#, fuzzy\nmsgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n', None),
])
def test_the_header_is_checked_as_msgfmt_checks_it(tmp_path, header, problem):
    text = header + '\nmsgid "a"\nmsgstr "b"\n'
    path = tmp_path / "t.po"
    path.write_text(text, encoding="utf-8")
    refused = subprocess.run([MSGFMT, "--check", "-o", "/dev/null", str(path)], capture_output=True).returncode
    assert bool(refused) == bool(problem)
    problems = [message for _, message in catalog_problems(parse_po(text, str(path)))]
    assert len(problems) == (problem is not None)
    assert all(message.startswith(problem) for message in problems)


LISP_SIMPLE = ["~a", "~s", "~d", "~b", "~o", "~x", "~r", "~p", "~:p", "~@p", "~c", "~f", "~e", "~g", "~$", "~%",
               "~&", "~|", "~~", "~\n", "~t", "~*", "~:*", "~@*", "~2*", "~?", "~@?", "~^", "~5d", "~v,'0d",
               "~'xd", "~v*", "~1@*", "~:^", "~#*", "~va", "~,vd", "~v^", "~3:*", "~0*", "~i", "~_"]
NESTED_EXTRA = {"lisp": ["~w", "~/f/"], "scheme": ["~y", "~k", "~q", "~!", "~/", "~,c", "~1,2,'xt"]}


def nested_format(rng, language, depth=0):
    """A random Lisp or Scheme format string of balanced, nested directives."""
    pieces = []
    for _ in range(rng.randint(0, 3)):
        roll = rng.random()
        if roll < 0.25:
            pieces.append(rng.choice(["x", " ", "é"]))
        elif roll < 0.65 or depth > 2:
            pieces.append(rng.choice(LISP_SIMPLE + NESTED_EXTRA[language]))
        else:
            inner = lambda: nested_format(rng, language, depth + 1)  # noqa: E731
            pieces.append(rng.choice([
                lambda: "~(" + inner() + "~)",
                lambda: rng.choice(["~:[", "~["]) + inner() + "~;" + inner() + "~]",
                lambda: "~@[" + inner() + "~]",
                lambda: ("~[" + "~;".join(inner() for _ in range(rng.randint(1, 3)))
                         + rng.choice(["", "~:;" + inner()]) + "~]"),
                lambda: rng.choice(["~{", "~:{", "~@{", "~:@{", "~1{"]) + inner() + "~}",
            ] + [lambda: "~<" + inner() + rng.choice(["", "~;" + inner()]) + "~>"] * (language == "lisp"))())
    return "".join(pieces)


@pytest.mark.parametrize("language", ["lisp", "scheme"])
def test_nested_lisp_and_scheme_strings_are_checked_as_msgfmt_checks_them(tmp_path, language):
    """400 entries of balanced nested directives and their variants (a directive changed,
    added or dropped), some plural: the same lines refused with the same messages."""
    rng = random.Random(language)
    undefined = MSGFMT_OVERFLOWS[f"{language}-format"]

    def draw(make):
        while True:
            text = make()
            if not undefined(text):
                return text

    def variant(text):
        return rng.choice([lambda: text.replace("~a", "~d", 1), lambda: text.replace("~d", "~a", 1),
                           lambda: text + rng.choice(LISP_SIMPLE), lambda: text.replace("~s", "", 1),
                           lambda: nested_format(rng, language), lambda: text, lambda: text.replace("~*", "", 1),
                           lambda: text.replace("~{", "~:{", 1), lambda: text.replace("~^", "", 1),
                           lambda: text.replace("~c", "~d", 1), lambda: text.replace("~d", "~f", 1),
                           lambda: text.replace("~f", "~i", 1), lambda: text.replace("~;", "", 1)])()

    lines = [HEADER + quote(f"Plural-Forms: {RULES[4]}\n") + "\n"]
    for k in range(400):
        msgid = draw(lambda: nested_format(rng, language)) + f" #{k}"
        lines.append(f"#, {language}-format\nmsgid {quote(msgid)}\n")
        if rng.random() < 0.3:
            lines.append(f"msgid_plural {quote(msgid)}\n" + "".join(
                f"msgstr[{form}] {quote(draw(lambda: variant(msgid)) or 'x')}\n" for form in range(3)) + "\n")
        else:
            lines.append(f"msgstr {quote(draw(lambda: variant(msgid)) or 'y')}\n\n")
    text = "".join(lines)
    path = tmp_path / "t.po"
    path.write_text(text, encoding="utf-8")
    theirs = msgfmt_problems(path)
    ours = dict(catalog_problems(parse_po(text, str(path))))
    assert len(theirs) > 40
    assert set(ours) == set(theirs)
    assert all(any(same_message(ours[line], message) for message in theirs[line]) for line in ours)


@pytest.mark.parametrize("msgstr,status", [
    ("~{~^~2*~}~q", 1), ("~{~a~2*~}~q", 1), ("~{~a~@[~a~]~}~q", 1), ("~{~^~2*~}~:[~]", 1),
    ("~{~1@*~}~q", -11),  # msgfmt crashes on the memory it read (SIGSEGV)
    ("~[x~5d ~1@*~;~!~]~v!~q", -6),  # msgfmt aborts at `~v!` (SIGABRT)
])
def test_a_syntax_error_after_gettexts_undefined_list_work_is_refused(tmp_path, msgstr, status):
    """gettext's list operations read memory they never set on `~{~^~2*~}` (or abort): msgfmt's
    verdict on the arguments is unknown, but it reads on and refuses a later syntax error, in
    these words; where it crashes first, the string is refused for its syntax all the same.
    (Before, all of these were left unchecked.)"""
    path = _entry_file(tmp_path, "lisp-format", "~a", msgstr)
    assert undefined_in_gettext(lisp.COMMON_LISP)(msgstr)
    ours = dict(catalog_problems(parse_po(path.read_text(encoding="utf-8"), str(path))))
    assert list(ours) == [7] and "is not a valid Lisp format string" in ours[7]
    their_status, theirs = _msgfmt_on_stack(path)
    assert their_status == status
    if status == 1:
        assert list(theirs) == [7] and same_message(ours[7], theirs[7][0])
    valid = msgstr.replace("~q", "").replace("~:[~]", "")
    with pytest.raises(Undefined):  # its arguments unchecked, as before
        lisp.lisp_arguments(valid)
    assert _our_verdict(_entry_file(tmp_path, "lisp-format", "~a", valid)) == (True, None)


def test_a_loop_copied_past_the_bound_leaves_the_arguments_unchecked(tmp_path):
    """A loop rotated 50 million times makes a list of 100 million elements (msgfmt takes
    4.7 GB and 4.8 s for an entry whose msgid and msgstr are that string): past `MAX_RUNS`
    runs the arguments are left unchecked, at once, and the string is still read for its
    syntax."""
    far = "~@{~a~d~}~100000000@*~a"
    with pytest.raises(TooLarge):
        lisp.lisp_arguments(far)
    assert _our_verdict(_entry_file(tmp_path, "lisp-format", "~a", far)) == (True, None)
    refused = _our_verdict(_entry_file(tmp_path, "lisp-format", "~a", far + "~q"))
    assert refused == (False, 7)
    lisp.lisp_arguments(far.replace("100000000", "10000"))  # within the bound: judged


def test_the_bound_on_loop_copies_counts_runs(monkeypatch):
    """The bound is on the runs a loop's copies make: a loop of one element makes one run
    however far it is rotated or unfolded."""
    monkeypatch.setattr(arglists, "MAX_RUNS", 1_000)
    lisp.lisp_arguments("~@{~a~}~100000000@*~a")
    lisp.lisp_arguments("~@{~a~d~}~990@*~a")  # 495 copies of two runs
    with pytest.raises(TooLarge):
        lisp.lisp_arguments("~@{~a~d~}~1010@*~a")  # 505 copies


def _iteration_with_exits(rng):
    """A random `~{` whose body has a `~^`, in a random context."""
    def body():
        if rng.random() < 0.5:
            return "".join(rng.choice(["~a", "~d", "~s", "x", ", ", "~*", "~:*", "~2*", "~@*",
                                       "~1@*", "~v,v^", "~#^", "~va", "~%", "~[~a~;~d~]"])
                           for _ in range(rng.randint(0, 3)))
        return nested_format(rng, "lisp")
    exit_ = rng.choice(["~^", "~:^", "~1,2^", "~v^", "~#^"])
    return (rng.choice(["", "~a", "~b", "~d~d", "~*"]) + rng.choice(["~{", "~1{", "~:{", "~@{"])
            + body() + exit_ + body() + "~}" + rng.choice(["", "~a", "~d"]))


@pytest.mark.parametrize("language", ["lisp", "scheme"])
def test_iterations_that_read_past_their_list_are_judged_as_msgfmt_judges_them(tmp_path,
                                                                               language):
    """gettext's make_repeated_list copies a loop's elements from its list's initial segment,
    past its last element where the loop has more (`~{~^~a~}`). Where the list is the union
    of the iteration's exits, those slots hold what make_union_list left there: then the
    entry is judged, each in a catalog of its own, as msgfmt judges it (its verdict is the
    same on every run: the memory was set). Slots never set leave it unchecked."""
    rng = random.Random(language)
    flag, dialect = f"{language}-format", lisp.COMMON_LISP if language == "lisp" else scheme.GUILE_SCHEME
    read, compared, refused = [], 0, 0
    real = arglists.stale_slots

    def recording(arglist):
        slots = real(arglist)
        read.append(slots is not None)
        return slots

    while compared < 40:
        msgid, msgstr = _iteration_with_exits(rng), rng.choice([_iteration_with_exits(rng), "~a", "x"])
        if rng.random() < 0.5:
            msgid, msgstr = msgstr, msgid
        read.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(arglists, "stale_slots", recording)
            try:
                for text in (msgid, msgstr):
                    lisp.list_arguments(text, dialect)
            except Undefined:
                continue
            except Invalid:
                pass
        if not any(read):
            continue  # nothing read past a list made by a union
        path = _entry_file(tmp_path, flag, msgid, msgstr)
        ours = dict(catalog_problems(parse_po(path.read_text(encoding="utf-8"), str(path))))
        status, theirs = _msgfmt_on_stack(path, cpu_seconds=2)
        if status in (-signal.SIGKILL, -signal.SIGXCPU):
            # out of time: normalize_outermost_list steps its loop's length up to 2**32 on
            # some lists (msgfmt takes 9 s for `~*~@{~<~;~@p~$~>~(~2*~)~#^~}` against
            # `~*~1{~d~v^~&~:{~:{~o~}~a~c~}é~}~a`, and says what we say)
            continue
        assert status in (0, 1) and list(theirs) == list(ours), (msgid, msgstr, status)
        assert all(same_message(ours[line], theirs[line][0]) for line in ours)
        compared, refused = compared + 1, refused + bool(ours)
    assert refused > 5


# Strings on which gettext 0.21's list operations copy or grow past what a list holds (each
# was left unchecked before: `arglists.Undefined`), and which msgfmt judges the same on every
# run with no memory error under valgrind: slots copied past a loop that its walk never
# reads, lists normalization dropped without freeing them, rotated loops whose `allocated`
# makes gettext reallocate before they grow. Found among 406 random strings that were
# Undefined, each tried against itself, `~a` and `x` (37 of them; the others crash msgfmt,
# run out of time, or read memory never set).
CLEAN_AFTER_UNDEFINED = [
    ('lisp', '~@{~:^~s~:^~2*~}~a'),
    ('lisp', '~@{~v,v^~{~:^~:p~}~}~d'),
    ('lisp', '~*~@{~^~:p~0^~1^~2*~}~d'),
    ('lisp', '~*~@{~:^~d~va~1^~}~3@*~a'),
    ('lisp', '~*~v{~v,v^~1{~*~v*~f~}~}~a'),
    ('lisp', '~c~a~d~{~*~v,3^~0^~:{~}~*~}'),
    ('lisp', '~a~v{x~2,2^~1@*~1,2^~3@*~}~d'),
    ('lisp', '~d~d~@{~v,v^~:p~{~v*~#^~}~}~a'),
    ('lisp', '~d~d~@{~2*~1^~^~v,v^~a~}~:*~a'),
    ('lisp', '~*~{~:^~:@{~1@*~}~1@*~1,2^~}~a'),
    ('lisp', '~*~{~1,2^~v,3^~@?~1,2^~3@*~}~:*~a'),
    ('lisp', '~a~{~{~v,v^~v{~:^x~}~}~@*~v*~1,2^~}~3@*~a'),
    ('lisp', '~*~1{~0^~[~#^~;~]~1,2^~a~1,2^~v{~#*~}~}~a'),
    ('lisp', '~2{~@{~v,v^~2,2^~2{~@*~@?~}~i~}~v{~1,2^~^~}~}~a'),
    ('lisp', '~b~1{~1@*~2,2^~v,3^~va~?~@?~v{~1@*~0^~3@*~}~}~:*~a'),
    ('lisp', '~d~d~@{~f~#[~;~#^~:[~;~]~1,2^~?~]~3@*~1,2^~:p~}~3@*~a'),
    ('lisp', '~a~2{~v,v^~2,2^~2{~va~:^~:^~d~}~1@*~:[~3@*~;~5d~]~}~a'),
    ('lisp', '~v{~@{~:@{~5d~}~*~}~[~v,3^~;~#[~va~;~@*~@p~#*~#*~]~3@*~:^~2,2^~@p~]~1@*~#^~}~3@*~a'),
    ('scheme', '~b~v{~v^~i~3@*~}~d'),
    ('scheme', '~2{~^~d~1{~^~r~}~3@*~}~d'),
    ('scheme', '~a~1{~?~1,2^~c~va~2*~}~:*~a'),
    ('scheme', '~*~@{~#^~1,2^~v,3^~va~}~3@*~a'),
    ('scheme', '~a~1{~*~1,2^~1,2^~^~2*~}~:*~a'),
    ('scheme', '~c~a~d~1{~@{~:@{~}~}~3@*~^~:*~}'),
    ('scheme', '~b~v{~{~v{~}~1,2^~#*x~@p~}~^~r~3@*~}'),
    ('scheme', '~2{~1,2^~2*~#^~v{~#^~v,v^~v,3^~}~}~q'),
    ('scheme', '~{~@{~}~r~2,2^~@{~v,v^~1,2^~r~?~}~}~:*~a'),
    ('scheme', '~d~d~v{~v,v^~1,2^~:{~2,2^~v,3^~2,2^~}~}~a'),
    ('scheme', '~b~v{~1,2^~1^~{~:*~d~1@*~v,v^~1@*~}~f~3@*~}~d'),
    ('scheme', '~b~v{~1,2^~1,2^~*~#[~v,3^~;x~c~#*~#^~]~3@*~}~a'),
    ('scheme', '~d~d~@{~*~^~[~;~1,2^~0^~:p~#^~]~^~1^~cx~}~3@*~a'),
    ('scheme', '~v{~1,2^~c~v,v^~@{~v,v^~2{~d~1@*~:^~2*~^~}~}~}~:*~a'),
    ('scheme', '~b~2{~v,v^~:p~:{~v,3^~:[~s~v,3^~@p~;~s~v^~#^~i~]~}~}~q'),
    ('scheme', '~d~d~@{~1{~[~#^~f~^~@*~;~v,v^~1@*~v^~v^~]~v*~#^~d~}~va~}~3@*~a'),
    ('scheme', '~c~a~d~{~@{~1^~:@{x~1,2^~v,3^~@p~1,2^~}~0^~^~}~v^~@*~@p~}~3@*~a'),
    ('scheme', '~a~v{~v,v^~:^~#^~1{~:{~}~:[~;~s~:^~@p~]~[~@p~#^~v,v^~;~^~?~2*~1,2^~]~}~}~3@*~a'),
    ('scheme', '~*~1{~v*~0^~#[~:^~;~v^~:[~v^~0^~0^~;~^~1,2^~@?~]~:*~r~:[~v,3^~r~;~v,v^~#^~3@*~:*~]~]~3@*~1^~}~d'),
]


def test_strings_gettext_reads_past_yet_judges_on_every_run_are_judged_as_msgfmt_judges_them(
        tmp_path):
    """Each string against itself, `~a` and `x` (and `~a` against it), in one catalog (each
    entry with a context of its own): the same problems, on the same lines, as msgfmt. Each
    is judged: its arguments are known (against itself, unchecked would pass too)."""
    lines, pairs = [HEADER], 0
    for k, (language, text) in enumerate(CLEAN_AFTER_UNDEFINED):
        lisp.list_arguments(text, lisp.COMMON_LISP if language == "lisp" else scheme.GUILE_SCHEME)
        for msgid, msgstr in ((text, text), (text, "~a"), (text, "x"), ("~a", text)):
            lines.append(f"\n#, {language}-format\nmsgctxt \"{k}-{pairs}\"\n"
                         f"msgid {quote(msgid)}\nmsgstr {quote(msgstr)}\n")
            pairs += 1
    path = tmp_path / "t.po"
    path.write_text("".join(lines), encoding="utf-8")
    ours = collections.defaultdict(list)
    for line, problem in catalog_problems(parse_po(path.read_text(encoding="utf-8"), str(path))):
        ours[line].append(problem)
    status, theirs = _msgfmt_on_stack(path, cpu_seconds=60)
    assert status == 1 and len(theirs) == 3 * len(CLEAN_AFTER_UNDEFINED)
    assert dict(ours) == theirs


@pytest.mark.parametrize("text,signal_number", [
    ("~@{~a~a~a~}~1@*~a", signal.SIGABRT),  # the loop's count left short: VERIFY_LIST aborts
    ("~@{~a~d~d~}~4@*~a", signal.SIGABRT),
    ("~b~@{~2*~r~v^~va~#^~^~}~3@*~a", signal.SIGSEGV),  # the loop written past its array
])
def test_strings_whose_rotated_loop_gettext_breaks_are_left_unchecked(tmp_path, text,
                                                                      signal_number):
    """gettext 0.21's rotate_loop gives a loop a new array but leaves its count (where it cut
    an element in two) and its size as they were: msgfmt aborts, or grows the loop in place
    past its array and crashes. Such arguments are left unchecked (they were judged before),
    and the syntax is still read."""
    path = _entry_file(tmp_path, "lisp-format", text, text)
    assert _msgfmt_on_stack(path)[0] == -signal_number
    with pytest.raises(Undefined, match="rotate_loop splits|rotated loop grows past"):
        lisp.list_arguments(text, lisp.COMMON_LISP)
    assert _our_verdict(path) == (True, None)
    assert _our_verdict(_entry_file(tmp_path, "lisp-format", text, text + "~q")) == (False, 7)


@pytest.mark.parametrize("flag,msgid,msgstr,problem", [
    # the loop of 7 rotated by 2 cuts its element of 6: make_intersected_list walks the
    # loop, one element short, against the other's 7 and ends apart: its ASSERT aborts
    ("lisp-format", "~@{~a~a~a~a~a~a~a~}", "~c~c", None),
    # the walk finds a contradiction before the loops end: msgfmt judges it, as we do
    ("scheme-format", "~@{~$~$~$~$~$~$~$~}",
     "~#^~#^~#^~r~r~r~r~r~r~r~1{~r~}~[x~!~o~;~]~1{~r~}~[x~!~o~;~]",
     "format specifications in 'msgstr[0]' are not a subset of those in 'msgid_plural'"),
])
def test_an_intersection_whose_loop_rotate_loop_cut_short_is_judged_as_msgfmt_judges_it(
        tmp_path, flag, msgid, msgstr, problem):
    """A form that serves one count is compared with the msgid by intersection: where
    rotate_loop cut a loop's element, gettext walks that loop one element short."""
    path = tmp_path / "t.po"
    path.write_text(f"{HEADER}\"Plural-Forms: nplurals=2; plural=(n != 1);\\n\"\n\n#, {flag}\n"
                    f"msgid {quote(msgid)}\nmsgid_plural {quote(msgid)}\n"
                    f"msgstr[0] {quote(msgstr)}\nmsgstr[1] {quote(msgid)}\n", encoding="utf-8")
    status, theirs = _msgfmt_on_stack(path)
    ours = dict(catalog_problems(parse_po(path.read_text(encoding="utf-8"), str(path))))
    if problem is None:
        assert status == -signal.SIGABRT and ours == {}
    else:
        assert (status, theirs) == (1, {9: [problem]}) and ours == {9: problem}


def test_the_slots_past_a_union_are_what_make_union_list_left_there():
    """Traced by hand through format-lisp.c: the first list's loop is unfolded twice (to the
    second's period, 2) and the second's rotated to 8 arguments (one element of repcount 8,
    its loop being one element). Step 4 appends four elements, (3 required object), (1
    required object), (3 required object), (1 optional object), in an array grown to 1, 3,
    then 7 slots. Normalization merges the first three into (7 required object) in slot 0,
    the optional one moves to slot 1, and slots 2 and 3 keep what was appended there; slots 4
    to 6 were never written."""
    R, O = arglists.REQUIRED, arglists.OPTIONAL
    first = arglists.ArgList(
        Segment.of([(3, R, arglists.OBJECT, None), (1, R, arglists.OBJECT, None),
                    (3, R, arglists.CHARACTER, None), (1, O, arglists.INTEGER_NULL, None)]),
        Segment.of([(1, R, arglists.INTEGER_NULL, None)]))
    second = arglists.ArgList(repeated=Segment.of([(2, R, arglists.REAL, None)]))
    united = arglists.union(first, second)
    assert list(united.initial.elements()) == [(7, R, arglists.OBJECT, None),
                                               (1, O, arglists.OBJECT, None)]
    assert arglists.stale_slots(united) == [(3, R, arglists.OBJECT, None),
                                            (1, O, arglists.OBJECT, None), None, None, None]


def test_a_list_changed_after_its_union_has_unknown_slots():
    """What stale_slots tells is the C array make_union_list left: once the list has changed
    (an argument added), what its array holds is not known here."""
    united = arglists.union(lisp.list_arguments("~a~d", lisp.COMMON_LISP),
                            lisp.list_arguments("~a", lisp.COMMON_LISP))
    assert arglists.stale_slots(united) is not None
    arglists.add_req_type_constraint(united, 3, arglists.INTEGER)
    assert arglists.stale_slots(united) is None
    assert arglists.stale_slots(arglists.union(united, None)) is None


@pytest.mark.parametrize("msgid,msgstrs,line,problem", [
    # msgstr[0]'s arguments are unknown; msgstr[1] is still read
    ("~a", ["~{~^~2*~}", "~a~q"], 9, "'msgstr[1]' is not a valid Lisp format string, unlike "
     "'msgid_plural'. Reason: In the directive number 2, the character 'q' is not a valid "
     "conversion specifier."),
    ("~a", ["~{~^~2*~}", "~a"], None, None),
    # msgid's arguments are unknown: the translations' syntax is still read
    ("~{~^~2*~}", ["~a~q", "~a"], 9, "'msgstr[0]' is not a valid Lisp format string, unlike "
     "'msgid_plural'. Reason: In the directive number 2, the character 'q' is not a valid "
     "conversion specifier."),
])  # (msgid `~{~^~2*~}` and valid translations: msgfmt compares them with what it read)
def test_unknown_arguments_leave_the_other_strings_of_an_entry_checked(tmp_path, msgid, msgstrs,
                                                                       line, problem):
    """Where gettext reads memory it never set on one string of an entry, the syntax of the
    others is read as msgfmt reads it (before, an unknown form ended the entry's check), and
    msgfmt names the entry's first msgstr line."""
    path = tmp_path / "t.po"
    path.write_text(f"{HEADER}\"Plural-Forms: nplurals=2; plural=(n != 1);\\n\"\n\n#, lisp-format\n"
                    f"msgid {quote(msgid)}\nmsgid_plural {quote(msgid)}\n"
                    + "".join(f"msgstr[{form}] {quote(text)}\n" for form, text in enumerate(msgstrs)),
                    encoding="utf-8")
    status, theirs = _msgfmt_on_stack(path)
    ours = dict(catalog_problems(parse_po(path.read_text(encoding="utf-8"), str(path))))
    assert (status, theirs) == ((0, {}) if line is None else (1, {line: [problem]}))
    assert ours == ({} if line is None else {line: problem})


@pytest.mark.parametrize("language", ["lisp", "scheme"])
def test_random_strings_after_undefined_list_work_are_judged_as_msgfmt_judges_them(tmp_path,
                                                                                   language):
    """Random nested strings, some with a directive put in, on which gettext's list
    operations read memory they never set (or abort), each in a catalog of its own (a crash
    ends msgfmt's run). Those our syntax-only reading refuses, msgfmt never accepts, and where
    it gives a verdict (it crashes, aborts or loops on some) it is ours, in the same words;
    those we leave unchecked, msgfmt never refuses for their syntax."""
    rng = random.Random(language)
    undefined = MSGFMT_OVERFLOWS[f"{language}-format"]
    flag, compared, unchecked = f"{language}-format", 0, 0
    while compared + unchecked < 80:
        text = nested_format(rng, language)
        if rng.random() < 0.7:
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(["~J", "~)", "~]", "~}", "~;", "~:[", "~5", "~'"]) + text[at:]
        if not undefined(text) or text.strip("\n") != text:
            continue  # defined, or a newline checked first
        path = _entry_file(tmp_path, flag, "~a", text)
        ours = dict(catalog_problems(parse_po(path.read_text(encoding="utf-8"), str(path))))
        status, theirs = _msgfmt_on_stack(path, cpu_seconds=1)
        if _judged(flag, text):  # refused for its syntax
            assert list(ours) == [7] and "is not a valid" in ours[7]
            assert status != 0
            if status == 1:
                assert list(theirs) == [7] and same_message(ours[7], theirs[7][0])
            compared += 1
        else:
            assert ours == {}
            assert not any("is not a valid" in message for message in theirs.get(7, []))
            unchecked += 1
    assert compared > 15 and unchecked > 10


@pytest.mark.parametrize("dialect", [lisp.COMMON_LISP, scheme.GUILE_SCHEME])
def test_the_syntax_only_reading_refuses_what_the_full_one_refuses_for_syntax(dialect):
    """On random strings, reading the syntax only (`lisp.SYNTAX_ONLY`) refuses exactly what
    the full reading refuses for its syntax, in the same words, and never raises anything
    else: where the full reading reads memory gettext never set, the other is what judges."""
    rng = random.Random(0)
    language = "lisp" if dialect is lisp.COMMON_LISP else "scheme"
    kinds = collections.Counter()
    for _ in range(3000):
        text = nested_format(rng, language)
        at = rng.randrange(len(text) + 1)
        text = text[:at] + rng.choice(LISP_SIMPLE + ["~J", "~)", "~]", "~}", "~;", "~5", ""]) + text[at:]
        try:
            lisp.list_arguments(text, dialect)
            full = None
        except Invalid as error:
            full = error.args[0]
        except Undefined:
            full = "undefined"
        try:
            lisp.read_syntax(text, dialect)
            syntax = None
        except Invalid as error:
            syntax = error.args[0]
        if full != "undefined" and full != INCOMPATIBLE:
            assert syntax == full, text
        kinds[full if full in (None, "undefined", INCOMPATIBLE) else "invalid"] += 1
    assert kinds[None] > 1000 and kinds["invalid"] > 300 and kinds["undefined"] > 10


INCOMPATIBLE = "The string refers to some argument in incompatible ways."
