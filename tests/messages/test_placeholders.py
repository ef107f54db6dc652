"""Placeholders of program messages: finding, protecting, matching and repairing them."""

import collections
import random
import shutil
import subprocess
import unicodedata

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from keras_transformer.messages import SLOT_SYMBOLS
from keras_transformer.messages import Protected
from keras_transformer.messages import find_placeholders
from keras_transformer.messages import is_ordered
from keras_transformer.messages import matches
from keras_transformer.messages import protect
from keras_transformer.messages import protect_pair
from keras_transformer.messages import repair
from keras_transformer.messages import restore

MSGFMT = shutil.which("msgfmt") or "/usr/bin/msgfmt"

REAL_MESSAGES = [
    ("%s: cannot open '%s': %s\n", ["%s", "%s", "%s"]),
    ("%(count)d files", ["%(count)d"]),
    ("{0} of {1}", ["{0}", "{1}"]),
    ("Copying ${FILE}…", ["${FILE}"]),
    ("%-10s %5.2f%%", ["%-10s", "%5.2f", "%%"]),
    ("%<PRIu64> bytes", ["%<PRIu64>"]),
    ("{{literal}} {name!r:>10}", ["{{", "}}", "{name!r:>10}"]),
    ("  Copy %s to %(dest)s? {0}\n", ["%s", "%(dest)s", "{0}"]),
    ("%1$s is %2$*3$d wide", ["%1$s", "%2$*3$d"]),
    ("%.*s: %'lld bytes, %hhx %zu %Lf", ["%.*s", "%'lld", "%hhx", "%zu", "%Lf"]),
    ("%(name)-10s|%(size)5.1f", ["%(name)-10s", "%(size)5.1f"]),
    ("cannot stat: %m", ["%m"]),
    ("{}, {:>8} and {!r}", ["{}", "{:>8}", "{!r}"]),
    ("{0.attr} {0[key]} {width:{fill}}", ["{0.attr}", "{0[key]}", "{width:{fill}}"]),
    ("$HOME/.config and $XDG_DATA_HOME", ["$HOME", "$XDG_DATA_HOME"]),
    ("%<PRIdMAX> and %<PRIxPTR>", ["%<PRIdMAX>", "%<PRIxPTR>"]),
    ("%r is not a %s", ["%r", "%s"]),
    # msgfmt reads the space as a flag: `% s` and `% o` are directives.
    ("100% sure", ["% s"]),
    ("50% off", ["% o"]),
    # Not placeholders: no conversion, prose in braces, `$` before a digit.
    ("100%", []),
    ("a % b", []),
    ("{a b} { } {", []),
    ("costs $5 {", []),
    ("{{0}}", ["{{", "}}"]),
    ("{{{0}}}", ["{{", "{0}", "}}"]),
]


@pytest.mark.parametrize("text, expected", REAL_MESSAGES)
def test_find_placeholders_on_real_messages(text, expected):
    assert find_placeholders(text) == expected


@pytest.mark.parametrize(
    "placeholder, ordered",
    [
        ("%s", True),
        ("%-10lu", True),
        ("%*d", True),
        ("%<PRIu64>", True),
        ("% s", True),
        ("%1$s", False),
        ("%(x)s", False),
        ("%%", False),
        ("%m", False),
        ("{}", True),
        ("{:>8}", True),
        ("{!r}", True),
        ("{.attr}", True),
        ("{0}", False),
        ("{name}", False),
        ("{{", False),
        ("}}", False),
        ("$VAR", False),
        ("${VAR}", False),
    ],
)
def test_is_ordered(placeholder, ordered):
    assert is_ordered(placeholder) is ordered


@pytest.mark.parametrize("not_one", ["", "%s %d", "hello", "%", "{a b}"])
def test_is_ordered_rejects_what_is_not_one_placeholder(not_one):
    with pytest.raises(ValueError, match="placeholder"):
        is_ordered(not_one)


def test_slot_symbols_are_private_use_and_survive_nfkc():
    assert len(SLOT_SYMBOLS) == 32 and len(set(SLOT_SYMBOLS)) == 32
    assert all(unicodedata.category(s) == "Co" for s in SLOT_SYMBOLS)
    assert SLOT_SYMBOLS[0] == "\ue000" and SLOT_SYMBOLS[-1] == "\ue01f"
    text = "Copy " + " x ".join(SLOT_SYMBOLS) + "?"
    assert unicodedata.normalize("NFKC", text) == text


def test_protect_gives_one_slot_per_distinct_placeholder():
    assert protect("%s and %s, %d") == Protected("\ue000 and \ue000, \ue001", ("%s", "%d"))
    assert protect("no placeholders") == Protected("no placeholders", ())


def test_protect_leaves_placeholders_beyond_32_literal():
    text = " ".join(f"%(k{i})s" for i in range(40)) + " %(k0)s"
    protected = protect(text)
    assert protected.slots == tuple(f"%(k{i})s" for i in range(32))
    assert protected.text.endswith(" %(k32)s " + " ".join(f"%(k{i})s" for i in range(33, 40)) + " \ue000")
    assert restore(protected.text, protected.slots) == text


def test_protect_keeps_slot_characters_already_in_the_text():
    protected = protect("\ue005 %s \ue005")
    assert protected == Protected("\ue000 \ue001 \ue000", ("\ue005", "%s"))
    assert restore(protected.text, protected.slots) == "\ue005 %s \ue005"


def test_stray_slot_characters_always_get_a_slot_even_past_32_placeholders():
    text = " ".join(f"{{k{i}}}" for i in range(40)) + " \ue001\ue01f"
    protected = protect(text)
    assert len(protected.slots) == 32
    assert {"\ue001", "\ue01f"} <= set(protected.slots)
    assert restore(protected.text, protected.slots) == text


def test_protect_pair_uses_the_source_slots():
    assert protect_pair("%s files", "%s Dateien %d") == ("\ue000 files", "\ue000 Dateien %d")
    assert protect_pair("{0} of {1}", "{1} von {0}") == ("\ue000 of \ue001", "\ue001 von \ue000")
    # A slot character that is not one of the source's would read as a slot: dropped.
    assert protect_pair("%s", "%s\ue003!") == ("\ue000", "\ue000!")


def test_restore_removes_slots_without_a_placeholder():
    assert restore("\ue001 von \ue000\ue007", ("%s", "%d")) == "%d von %s"
    assert restore("\ue000", ()) == ""


def test_restore_rejects_too_many_slots():
    with pytest.raises(ValueError, match="slots has 33"):
        restore("x", ("%s",) * 33)


SAMPLES = [
    "%s", "%d", "%5.2f", "%%", "%1$s", "%2$d", "%(name)s", "%(count)d", "{}", "{0}", "{1}",
    "{name!r:>10}", "{:d}", "{{", "}}", "$HOME", "${FILE}", "%<PRIu64>", "%m", "%*d", "% s",
]
WORDS = ["Datei", "copy", "of", "to", "100", "files", "…", "?", "."]
STRAY = ["%", "{", "}", "$", "(", ")", "5", "s", "d", "x", "\n", "\ue000", "\ue01f"]
GLUE = st.sampled_from(["", " ", "  "])


def _messages(*pools):
    token = st.sampled_from([t for pool in pools for t in pool])
    return st.lists(st.tuples(token, GLUE), max_size=8).map(lambda parts: "".join(a + b for a, b in parts))


@settings(deadline=None)
@given(st.one_of(st.text(), _messages(SAMPLES, WORDS, STRAY)))
def test_protect_round_trips_every_text(text):
    protected = protect(text)
    assert restore(protected.text, protected.slots) == text
    assert len(set(protected.slots)) == len(protected.slots) <= 32


@settings(deadline=None)
@given(_messages(SAMPLES, WORDS), _messages(SAMPLES, WORDS))
def test_protect_pair_target_round_trips(source, target):
    protected_source, protected_target = protect_pair(source, target)
    slots = protect(source).slots
    assert protected_source == protect(source).text
    assert restore(protected_target, slots) == target


@pytest.mark.parametrize(
    "source, translation, expected",
    [
        ("%d of %s", "%d von %s", True),
        ("%d of %s", "%s von %d", False),  # ordered: the arguments would swap
        ("%(a)s %(b)d", "%(b)d %(a)s", True),  # named: any order
        ("{0} of {1}", "{1} von {0}", True),
        ("{} of {}", "{} von {}", True),
        ("{} of {:d}", "{:d} von {}", False),
        ("%s files", "Dateien", False),
        ("%s files", "%s %s Dateien", False),  # a multiset, not a set
        ("100%% done", "100 %% fertig", True),
        ("%5d", "%d", False),  # exact strings
        ("Copying ${FILE}…", "Kopiere ${FILE}…", True),
        ("Copying ${FILE}…", "Kopiere $FILE…", False),
    ],
)
def test_matches(source, translation, expected):
    assert matches(source, translation) is expected


@pytest.mark.parametrize(
    "source, translation, expected",
    [
        # missing: at the end, before final punctuation, in the source's order
        ("Copy %s?", "Kopieren?", "Kopieren %s?"),
        ("%s: cannot open '%s': %s\n", "kann nicht öffnen\n", "kann nicht öffnen %s %s %s\n"),
        ("%(count)d files", "Dateien", "Dateien %(count)d"),
        ("{0} of {1}", "von", "von {0} {1}"),
        ("Done %s!", "Terminé !", "Terminé %s !"),
        ("%d", "", "%d"),
        ("%d.", ".", "%d."),
        # invented: removed, without a doubled or a new outer space
        ("%s files", "%s Dateien %d", "%s Dateien"),
        ("%s files", "%d Dateien", "Dateien %s"),
        ("{0} of {1}", "{0} von {2} {1}", "{0} von {1}"),
        ("Copying ${FILE}…", "Kopiere ${FILE} $HOME…", "Kopiere ${FILE}…"),
        ("Done.", "Fertig %s.", "Fertig."),
        ("Done!", "Terminé %s !", "Terminé !"),
        # duplicated: the later occurrences go
        ("%s files", "%s %s Dateien", "%s Dateien"),
        ("%s files", "%s Dateien (%s)", "%s Dateien ()"),
        # reordered: ordered placeholders take the source's order, named ones keep theirs
        ("%d files in %s", "%s Dateien in %d", "%d Dateien in %s"),
        ("%d of %s, %(x)s", "%(x)s: %s von %d", "%(x)s: %d von %s"),
        ("{} of {:>8}", "{:>8} von {}", "{} von {:>8}"),
        # missing and reordered: inserted first, then ordered
        ("%d files in %s", "%s Dateien", "%d Dateien %s"),
        # stray text that would join an inserted placeholder: its `%` goes
        ("%d", "100%", "100 %d"),
        # `$X` would swallow the word the removal joined it to
        ("$X", "$X%sabc", "$X abc"),
    ],
)
def test_repair(source, translation, expected):
    assert not matches(source, translation)
    assert repair(source, translation) == expected
    assert matches(source, expected)


def test_repair_leaves_a_matching_translation_alone():
    translation = "  %(b)d  %(a)s\n"
    assert repair("%(a)s %(b)d", translation) is translation


@settings(deadline=None, max_examples=300)
@given(
    _messages(SAMPLES, WORDS),
    st.one_of(_messages(SAMPLES, WORDS), _messages(SAMPLES, WORDS, STRAY), st.text(max_size=20)),
)
def test_repair_always_matches(source, translation):
    repaired = repair(source, translation)
    assert matches(source, repaired)
    if matches(source, translation):
        assert repaired == translation


def _po_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


def _msgfmt_accepts(path, pairs, flag):
    header = (
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
        '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"\n'
    )
    entries = [f"#, {flag}\nmsgid {_po_string(s)}\nmsgstr {_po_string(t)}\n" for s, t in pairs]
    path.write_text("\n".join([header] + entries), encoding="utf-8")
    result = subprocess.run([MSGFMT, "--check-format", "-o", "/dev/null", str(path)], capture_output=True, text=True)
    return result.returncode == 0, result.stderr


MSGFMT_POOLS = [
    ("c-format", ["%s", "%d", "%5.2f", "%lu", "%-10s", "%<PRIu64>", "%%", "%c"], ("%s copied", "kopiert")),
    ("python-format", ["%(name)s", "%(count)d", "%(size)5.1f", "%%"], ("%(name)s copied", "kopiert")),
    ("python-format", ["%s", "%d", "%r", "%%"], ("%d copied", "%s kopiert")),
    ("python-brace-format", ["{0}", "{1}", "{name}", "{count:>8}", "{0.attr}", "{{", "}}"], ("{0} copied", "kopiert")),
]


def _generated_pairs(pool, rng, count=25):
    words = ["file", "copy", "cannot", "open", "size", "new", "Datei", "neu", "Größe"]
    pairs = {}
    while len(pairs) < count:
        source = rng.sample(words, 3) + rng.choices(pool, k=rng.randint(1, 4))
        target = rng.sample(words, 3) + rng.choices(pool, k=rng.randint(0, 5))
        rng.shuffle(source)
        rng.shuffle(target)
        pairs.setdefault(" ".join(source), " ".join(target))
    return list(pairs.items())


@pytest.mark.skipif(shutil.which(MSGFMT) is None, reason="GNU msgfmt is not installed")
@pytest.mark.parametrize("flag, pool, known_bad", MSGFMT_POOLS)
def test_msgfmt_check_format_accepts_repaired_translations(tmp_path, flag, pool, known_bad):
    pairs = _generated_pairs(pool, random.Random(f"{flag} {pool}")) + [known_bad]
    counts = [(collections.Counter(find_placeholders(s)), collections.Counter(find_placeholders(t))) for s, t in pairs]
    assert sum(bool(wanted - found) for wanted, found in counts) >= 5, "too few missing placeholders"
    assert sum(bool(found - wanted) for wanted, found in counts) >= 5, "too few invented placeholders"
    accepted, _ = _msgfmt_accepts(tmp_path / "raw.po", pairs, flag)
    assert not accepted, "msgfmt should reject the unrepaired translations (is the check live?)"
    repaired = [(s, repair(s, t)) for s, t in pairs]
    accepted, errors = _msgfmt_accepts(tmp_path / "repaired.po", repaired, flag)
    assert accepted, errors



# --- format languages (a catalog entry's flag) -------------------------------------------

@pytest.mark.parametrize("flag,text,expected", [
    ("c-format", "%S of %C, %1$s, %<PRIu64>, %(x)s, %r", ["%S", "%C", "%1$s", "%<PRIu64>"]),
    ("python-format", "%(name)s %r %a %1$s %S", ["%(name)s", "%r", "%a"]),
    ("python-brace-format", "{0} %s $HOME {{", ["{0}", "{{"]),
    ("sh-format", "{0} %s $HOME ${X}", ["$HOME", "${X}"]),
    ("none", "50% of %s {0} $HOME", []),
    ("any", "%S %s {0} $HOME", ["%S", "%s", "{0}", "$HOME"]),
])
def test_each_format_language_has_its_own_placeholders(flag, text, expected):
    assert find_placeholders(text, flag) == expected


def test_plain_text_is_never_repaired_into_nonsense():
    """A message without a format flag has no directives: `100% der` stays as written."""
    source, translation = "Done: 100% of the files", "Fertig: 100% der Dateien"
    assert repair(source, translation, "none") == translation
    assert matches(source, translation, "none")
    assert repair(source, translation) != translation  # as printf reads it, `% o` and `% d` differ


def test_wide_c_directives_count_in_c_format():
    assert not matches("Copy %S", "Kopiere", "c-format")
    assert repair("Copy %S", "Kopiere", "c-format") == "Kopiere %S"
    assert protect("Copy %S to %C", "c-format").slots == ("%S", "%C")


def test_protect_pair_follows_the_format_flag():
    # `% o` is a directive to printf (space flag, o conversion), `% v` is not
    assert protect_pair("50% of %s", "50% von %s", "c-format") == ("50\ue000f \ue001", "50% von \ue001")
    assert protect_pair("50% of %s", "50% von %s", "none") == ("50% of %s", "50% von %s")


def test_an_unknown_format_flag_is_refused():
    with pytest.raises(ValueError, match="format_flag must be one of"):
        matches("%s", "%s", "c")
