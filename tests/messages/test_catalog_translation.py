"""Machine translation of gettext catalogs: what is filled, what is kept, msgfmt's verdict."""

import collections
import difflib
import os
import re
import shutil
import stat
import subprocess

import polib
import pytest

from keras_transformer.messages import catalog_translation
from keras_transformer.messages.catalog_translation import CatalogReport
from keras_transformer.messages.catalog_translation import check_catalog
from keras_transformer.messages.catalog_translation import translate_catalog
from keras_transformer.messages.catalog_translation import write_catalog
from keras_transformer.messages.plural_forms import PLURAL_FORMS
from keras_transformer.messages.plural_forms import plural_forms
from keras_transformer.messages.plural_forms import PluralRule
from keras_transformer.messages.po_file import parse_po
from keras_transformer.messages.po_file import PoSyntaxError
from keras_transformer.messages.po_file import read_po
from keras_transformer.tasks.translation import Translation

MSGFMT = shutil.which("msgfmt") or "/usr/bin/msgfmt"
MSGINIT = shutil.which("msginit") or "/usr/bin/msginit"

# ISO-8859-1 on disk. Entries marked (T) are untranslated and get filled,
# (K) are kept, (O) are obsolete. msgfmt --check accepts it (the %d picture entry has no
# c-format flag: with one, msgfmt would refuse its empty msgstr[1]).
CATALOG = r'''# German translation of demo.
# Copyright (C) 2024 Demo authors
#
msgid ""
msgstr ""
"Project-Id-Version: demo 1.0\n"
"Report-Msgid-Bugs-To: bugs@example.org\n"
"POT-Creation-Date: 2024-01-01 00:00+0000\n"
"PO-Revision-Date: 2024-01-02 00:00+0000\n"
"Last-Translator: Jörg Müller <j@example.org>\n"
"Language-Team: German <de@example.org>\n"
"Language: de\n"
"MIME-Version: 1.0\n"
"Content-Type: text/plain; charset=ISO-8859-1\n"
"Content-Transfer-Encoding: 8bit\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\n"

#. (K) Shown on the main window.
#: src/main.c:10
msgid "Open file"
msgstr "Datei öffnen"

# (T) Keep it short.
#. Button label.
#: src/main.c:20 src/dialog.c:5
#, c-format
msgid "Delete %s?"
msgstr ""

# (T)
#: src/main.c:30
#, c-format
msgid "%d file"
msgid_plural "%d files"
msgstr[0] ""
msgstr[1] ""

# (K)
#: src/main.c:31
#, c-format
msgid "%d folder"
msgid_plural "%d folders"
msgstr[0] "%d Ordner"
msgstr[1] "%d Ordner"

# (K) one form translated is a translation
msgid "%d picture"
msgid_plural "%d pictures"
msgstr[0] "%d Bild"
msgstr[1] ""

# (T)
msgctxt "menu"
msgid "File"
msgstr ""

# (T) the same text as the menu entry: translated once
msgctxt "toolbar"
msgid "File"
msgstr ""

# (K)
msgctxt "verb"
msgid "File"
msgstr "Ablegen"

# (K) fuzzy
#, fuzzy
#| msgid "Save the file"
msgid "Save the file now"
msgstr "Die Datei speichern (schön)"

# (T) fuzzy but empty
#, fuzzy
msgid "Quit"
msgstr ""

# (T)
#: src/app.py:5
#, python-format
msgid ""
"Hello %(name)s,\n"
"you have %(count)d new messages.\n"
msgstr ""

# (T)
msgid "Tab\there and \"quotes\" and back\\slash"
msgstr ""

# (T)
msgid "  Indented, with a newline\n"
msgstr ""

# (O)
#~ msgid "Old message"
#~ msgstr "Alte Nachricht für Sie"

# (O)
#~ msgctxt "old"
#~ msgid "Gone"
#~ msgstr ""
'''

# What the fake is asked to translate (each text once).
SOURCES = {
    "Delete %s?", "%d file", "%d files", "File", "Quit",
    "Hello %(name)s,\nyou have %(count)d new messages.\n",
    'Tab\there and "quotes" and back\\slash', "  Indented, with a newline\n",
}
FILLED = 8
KEPT = 5
OBSOLETE = 2


class FakeTranslator:
    """Writes `prefix` before each text, inside its outer white space (so msgfmt's checks hold).

    Texts containing `noted` get `notes`; texts in `empty` translate to "".
    Every call is recorded in `calls`.
    """

    def __init__(self, prefix="DE:", notes=("placeholders repaired",), noted="%",
                 target_language="de", empty=(), drop_placeholders=False):
        self.prefix, self.notes, self.noted = prefix, tuple(notes), noted
        self.target_language, self.empty = target_language, set(empty)
        self.drop_placeholders = drop_placeholders
        self.calls = []

    def _text(self, text):
        if text in self.empty:
            return ""
        lead, core, trail = re.fullmatch(r"(\s*)(.*?)(\s*)", text, re.S).groups()
        if self.drop_placeholders:
            core = re.sub(r"%(\(\w+\))?[sd]", "", core)
        return lead + self.prefix + core + trail if core else text

    def translations(self, texts, beam_size=4, num_return=1, progress=False, format_flags=None):
        self.calls.append({"texts": list(texts), "beam_size": beam_size, "num_return": num_return,
                           "format_flags": format_flags})
        return [
            [Translation(self._text(text), -1.0, self.notes if self.noted in text else ())]
            for text in texts
        ]


def msgfmt_check(path):
    result = subprocess.run(
        [MSGFMT, "--check-format", "--use-fuzzy", "-o", os.devnull, str(path)],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    return result


def key(entry):
    return (entry.obsolete, entry.msgctxt, entry.msgid)


def entries(catalog):
    return {key(entry): entry for entry in catalog}


def has_translation(entry):
    return bool(entry.msgstr) or any(entry.msgstr_plural.values())


def find(catalog, msgid):
    """The live entry of a PoFile with this msgid (the first, whatever its context)."""
    return next(e for e in catalog.entries if e.msgid == msgid and not e.obsolete)


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "de.po"
    path.write_bytes(CATALOG.encode("iso-8859-1"))
    return path


def translate_file(source, out, translator, **kwargs):
    """Translates the file and reads the result back with polib, a reader of its own."""
    catalog = read_po(source)
    report = translate_catalog(catalog, translator, **kwargs)
    write_catalog(catalog, out)
    return report, polib.pofile(str(out))


def test_the_input_is_a_valid_catalog(source):
    msgfmt_check(source)
    assert polib.pofile(str(source)).encoding == "ISO-8859-1"
    assert read_po(source).encoding == "iso8859-1"


def test_translated_catalog_passes_msgfmt_and_counts_are_exact(source, tmp_path):
    fake = FakeTranslator()
    report, out = translate_file(source, tmp_path / "out.po", fake, beam_size=3)
    msgfmt_check(tmp_path / "out.po")
    assert report == CatalogReport(
        translated=FILLED, kept=KEPT, repaired=3, obsolete_skipped=OBSOLETE,
        left_untranslated=0, charset_changed_to=None,
    )
    assert report.summary() == "8 translated (3 with notes), 5 kept, 2 obsolete skipped"
    assert len(fake.calls) == 1
    assert sorted(fake.calls[0]["texts"]) == sorted(SOURCES)  # one call, each text once
    assert fake.calls[0]["beam_size"] == 3 and fake.calls[0]["num_return"] == 1


def test_existing_translations_are_unchanged(source, tmp_path):
    translate_file(source, tmp_path / "out.po", FakeTranslator())
    before, after = entries(polib.pofile(str(source))), entries(polib.pofile(str(tmp_path / "out.po")))
    assert before.keys() == after.keys()
    kept = [k for k, entry in before.items() if has_translation(entry)]
    assert len(kept) == KEPT + 1  # and the translated obsolete entry
    for k in kept:
        old, new = before[k], after[k]
        assert (new.msgstr, new.msgstr_plural) == (old.msgstr, old.msgstr_plural), k
        assert (new.flags, new.tcomment, new.comment) == (old.flags, old.tcomment, old.comment), k
        assert (new.occurrences, new.previous_msgid) == (old.occurrences, old.previous_msgid), k
    raw = (tmp_path / "out.po").read_bytes()  # still ISO-8859-1 on disk
    assert b'"Datei \xf6ffnen"' in raw and b"(sch\xf6n)" in raw and b"f\xfcr Sie" in raw


def test_filled_entries_are_fuzzy_and_keep_everything_else(source, tmp_path):
    _, out = translate_file(source, tmp_path / "out.po", FakeTranslator())
    before, after = entries(polib.pofile(str(source))), entries(out)
    filled = [k for k, entry in before.items() if not entry.obsolete and not has_translation(entry)]
    assert len(filled) == FILLED
    for k in filled:
        old, new = before[k], after[k]
        assert new.fuzzy and new.flags.count("fuzzy") == 1, k
        assert [f for f in new.flags if f != "fuzzy"] == [f for f in old.flags if f != "fuzzy"], k
        forms = list(new.msgstr_plural.values()) if new.msgid_plural else [new.msgstr]
        assert forms and all(form.startswith(("DE:", "  DE:")) for form in forms), (k, forms)
        assert (new.msgctxt, new.comment, new.occurrences) == (old.msgctxt, old.comment, old.occurrences)
        assert new.previous_msgid == old.previous_msgid
    plural = after[(False, None, "%d file")]
    assert plural.msgstr_plural == {0: "DE:%d file", 1: "DE:%d files"}
    assert after[(False, "menu", "File")].msgstr == after[(False, "toolbar", "File")].msgstr == "DE:File"
    assert after[(False, None, "  Indented, with a newline\n")].msgstr == "  DE:Indented, with a newline\n"


def test_notes_become_a_translator_comment(source, tmp_path):
    fake = FakeTranslator(notes=("placeholders repaired", "layout\nrepaired"))
    _, out = translate_file(source, tmp_path / "out.po", fake)
    by_key = entries(out)
    assert by_key[(False, None, "Delete %s?")].tcomment == (
        "(T) Keep it short.\nmachine translation: placeholders repaired; layout repaired"
    )
    assert by_key[(False, None, "Quit")].tcomment == "(T) fuzzy but empty"  # no notes, no comment
    assert by_key[(False, None, "%d picture")].tcomment == "(K) one form translated is a translation"


def test_contexts_comments_and_obsolete_entries_survive(source, tmp_path):
    _, out = translate_file(source, tmp_path / "out.po", FakeTranslator())
    by_key = entries(out)
    assert by_key[(True, None, "Old message")].msgstr == "Alte Nachricht für Sie"
    assert by_key[(True, "old", "Gone")].msgstr == ""  # obsolete entries are not translated
    assert {e.msgctxt for e in out if e.msgctxt} == {"menu", "toolbar", "verb", "old"}
    delete = by_key[(False, None, "Delete %s?")]
    assert delete.comment == "Button label."
    assert delete.occurrences == [("src/main.c", "20"), ("src/dialog.c", "5")]
    assert by_key[(False, None, "Save the file now")].previous_msgid == "Save the file"
    assert out.header.startswith("German translation of demo.")
    assert out.metadata["Last-Translator"] == "Jörg Müller <j@example.org>"


def test_unencodable_output_switches_to_utf8(source, tmp_path):
    report, out = translate_file(source, tmp_path / "out.po", FakeTranslator(prefix="→"))
    msgfmt_check(tmp_path / "out.po")
    assert report.charset_changed_to == "UTF-8" and "charset changed to UTF-8" in report.summary()
    assert out.metadata["Content-Type"] == "text/plain; charset=UTF-8"
    raw = (tmp_path / "out.po").read_bytes()
    assert "→Delete %s?".encode() in raw and "Datei öffnen".encode() in raw
    assert polib.pofile(str(source)).find("Open file").msgstr == out.find("Open file").msgstr


def test_an_empty_translation_leaves_the_entry_alone(source, tmp_path):
    report, out = translate_file(source, tmp_path / "out.po", FakeTranslator(empty={"%d files"}))
    assert (report.translated, report.left_untranslated) == (FILLED - 1, 1)
    assert "1 left untranslated" in report.summary()
    plural = out.find("%d file")
    assert plural.msgstr_plural == {0: "", 1: ""} and not plural.fuzzy
    msgfmt_check(tmp_path / "out.po")


def test_msgfmt_check_catches_lost_placeholders(source, tmp_path):
    """The check above can fail: a translator that drops placeholders is caught."""
    translate_file(source, tmp_path / "out.po", FakeTranslator(drop_placeholders=True))
    result = subprocess.run(
        [MSGFMT, "--check-format", "--use-fuzzy", "-o", os.devnull, str(tmp_path / "out.po")],
        capture_output=True, text=True,
    )
    assert result.returncode != 0 and "format specifications" in result.stderr


def catalog_text(language=None, plural_forms_value=None, charset="UTF-8", body=None):
    header = [f"Content-Type: text/plain; charset={charset}"]
    if language is not None:
        header.append(f"Language: {language}")
    if plural_forms_value is not None:
        header.append(f"Plural-Forms: {plural_forms_value}")
    lines = "".join(f'"{line}\\n"\n' for line in header)
    body = body if body is not None else (
        '#, c-format\nmsgid "One file"\nmsgid_plural "%d files"\nmsgstr[0] ""\nmsgstr[1] ""\n\n'
        'msgid "Open"\nmsgstr ""\n'
    )
    return f'msgid ""\nmsgstr ""\n{lines}\n{body}'


SINGULAR_ONLY = 'msgid "Open"\nmsgstr ""\n'


@pytest.mark.parametrize("language,nplurals", [
    ("de", 2), ("fr", 2), ("es", 2), ("it", 2), ("pt", 2), ("pt_BR", 2), ("nl", 2),
    ("sv", 2), ("da", 2), ("nb", 2), ("fi", 2), ("pl", 3), ("cs", 3), ("ru", 3),
    ("uk", 3), ("ja", 1), ("zh_CN", 1), ("ko", 1), ("tr", 2), ("sl", 4),
])
def test_missing_plural_forms_come_from_the_table(language, nplurals, tmp_path):
    catalog = parse_po(catalog_text(language=language))
    report = translate_catalog(catalog, FakeTranslator(target_language=language))
    assert report.translated == 2
    assert catalog.metadata["Plural-Forms"] == plural_forms(language)
    assert re.match(rf"nplurals={nplurals}; plural=", catalog.metadata["Plural-Forms"])
    plural = find(catalog, "One file")
    assert len(plural.msgstr) == nplurals and all(plural.msgstr)
    write_catalog(catalog, tmp_path / "out.po")
    msgfmt_check(tmp_path / "out.po")


def test_a_one_form_language_translates_msgid_plural():
    """msgfmt checks a one-form language's msgstr[0] against msgid_plural (every count uses it)."""
    catalog = parse_po(catalog_text(language="ja"))
    translate_catalog(catalog, FakeTranslator(target_language="ja"))
    assert find(catalog, "One file").msgstr == ["DE:%d files"]


def test_header_plural_forms_win_over_the_table():
    catalog = parse_po(catalog_text(language="de", plural_forms_value="nplurals=3; plural=0;"))
    translate_catalog(catalog, FakeTranslator())
    # plural=0 sends every count to form 0, so it must hold msgid_plural's %d (msgfmt -c).
    assert find(catalog, "One file").msgstr == ["DE:%d files", "DE:%d files", "DE:%d files"]
    assert catalog.metadata["Plural-Forms"] == "nplurals=3; plural=0;"


@pytest.mark.parametrize("body", [None, SINGULAR_ONLY], ids=["plural-entries", "singular-only"])
def test_template_plural_forms_are_replaced(body, tmp_path):
    """msgfmt --check refuses the .pot placeholder even without plural entries: a template
    (*.pot) gets the language's rule, a .po keeping the placeholder is refused as msgfmt
    refuses it, at the header's msgstr line."""
    text = catalog_text(language="fr", plural_forms_value="nplurals=INTEGER; plural=EXPRESSION;",
                        body=body)
    po = tmp_path / "copied.po"
    po.write_text(text, encoding="utf-8")
    check = subprocess.run([MSGFMT, "--check", "-o", os.devnull, str(po)], capture_output=True,
                           text=True)
    assert f"{po}:2: invalid nplurals value" in check.stderr
    with pytest.raises(ValueError, match=rf"^{re.escape(str(po))}:2: .*invalid nplurals value"):
        translate_catalog(read_po(po), FakeTranslator(target_language="fr"))
    catalog = parse_po(text, "fr.pot")
    translate_catalog(catalog, FakeTranslator(target_language="fr"))
    assert catalog.metadata["Plural-Forms"] == "nplurals=2; plural=(n > 1);"
    write_catalog(catalog, tmp_path / "fr.po")
    assert subprocess.run(["msgfmt", "--check", "--use-fuzzy", "-o", os.devnull,
                           str(tmp_path / "fr.po")], capture_output=True).returncode == 0


def test_form_0_serving_more_counts_than_one_keeps_the_plurals_placeholders(tmp_path):
    """Russian form 0 serves 1, 21, 31...: "One file" would lose %d; msgfmt -c refuses that."""
    catalog = parse_po(catalog_text(language="ru", plural_forms_value=PLURAL_FORMS["ru"]))
    translate_catalog(catalog, FakeTranslator(target_language="ru"))
    assert find(catalog, "One file").msgstr[0] == "DE:%d files"
    out = tmp_path / "ru.po"
    write_catalog(catalog, str(out))
    check = subprocess.run(["msgfmt", "-c", "--use-fuzzy", "-o", os.devnull, str(out)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_table_matches_msginit(tmp_path):
    """Every entry of the table is what GNU msginit writes (Chinese is not in its table)."""
    pot = tmp_path / "t.pot"
    pot.write_text(catalog_text(), encoding="utf-8")
    for language, expected in PLURAL_FORMS.items():
        out = tmp_path / f"{language}.po"
        subprocess.run([MSGINIT, "--no-translator", "-l", language, "-i", str(pot), "-o", str(out)],
                       capture_output=True, check=True)
        written = read_po(out).metadata.get("Plural-Forms")
        if language == "zh":
            assert written is None
        else:
            assert written == expected, language


def test_plural_forms_lookup():
    assert plural_forms("de_DE") == plural_forms("de-AT") == plural_forms("de") == PLURAL_FORMS["de"]
    assert plural_forms("pt_BR") != plural_forms("pt_PT") == plural_forms("pt")
    assert plural_forms("zh_CN") == plural_forms("zh_TW") == "nplurals=1; plural=0;"
    assert plural_forms("sr@latin") == plural_forms("ru_RU.UTF-8")
    for bad in ("xx", "", None):
        with pytest.raises(ValueError, match="Plural-Forms"):
            plural_forms(bad)


def test_unknown_language_without_plural_forms_raises_and_changes_nothing():
    catalog = parse_po(catalog_text(language="xx"))
    before = catalog.text()
    fake = FakeTranslator(target_language=None)
    with pytest.raises(ValueError, match=r"language='xx'.*pass a catalog whose header has Plural-Forms"):
        translate_catalog(catalog, fake)
    assert catalog.text() == before and fake.calls == []


def test_unknown_language_is_fine_without_plural_entries():
    catalog = parse_po(catalog_text(language="xx", body=SINGULAR_ONLY))
    report = translate_catalog(catalog, FakeTranslator(target_language=None))
    assert report.translated == 1 and "Plural-Forms" not in catalog.metadata


def test_malformed_plural_forms_raise():
    catalog = parse_po(catalog_text(language="de", plural_forms_value="plural=(n != 1);"))
    with pytest.raises(ValueError, match="nplurals"):
        translate_catalog(catalog, FakeTranslator())


def test_language_mismatch_names_both_languages():
    catalog = parse_po(catalog_text(language="de"))
    before = catalog.text()
    with pytest.raises(ValueError, match=r"'fr'.*'de'"):
        translate_catalog(catalog, FakeTranslator(target_language="fr"))
    with pytest.raises(ValueError, match=r"language='fr'.*Language: de"):
        translate_catalog(catalog, FakeTranslator(), language="fr")
    assert catalog.text() == before


def test_languages_match_by_primary_subtag():
    catalog = parse_po(catalog_text(language="de_DE"))
    assert translate_catalog(catalog, FakeTranslator(target_language="de"), language="de-AT").translated == 2


def test_language_comes_from_the_argument_then_the_translator():
    catalog = parse_po(catalog_text())
    translate_catalog(catalog, FakeTranslator(target_language=None), language="pl")
    assert catalog.metadata["Language"] == "pl" and catalog.metadata["Plural-Forms"] == PLURAL_FORMS["pl"]
    catalog = parse_po(catalog_text())
    translate_catalog(catalog, FakeTranslator(target_language="ru"))
    assert catalog.metadata["Language"] == "ru"


def test_catalog_without_charset_becomes_utf8():
    catalog = parse_po(catalog_text(charset="CHARSET", language="de"))
    assert translate_catalog(catalog, FakeTranslator()).charset_changed_to == "UTF-8"
    assert catalog.metadata["Content-Type"] == "text/plain; charset=UTF-8"


def test_nothing_to_translate_makes_no_call():
    catalog = parse_po(catalog_text(language="de", body='msgid "Open"\nmsgstr "Öffnen"\n'))
    fake = FakeTranslator()
    report = translate_catalog(catalog, fake)
    assert fake.calls == [] and report == CatalogReport(kept=1)


def test_a_translator_returning_too_few_results_is_refused():
    class Short(FakeTranslator):
        def translations(self, texts, **kwargs):
            return super().translations(texts, **kwargs)[:-1]

    catalog = parse_po(catalog_text(language="de"))
    before = catalog.text()
    with pytest.raises(ValueError, match="one non-empty list per text"):
        translate_catalog(catalog, Short())
    assert catalog.text() == before


@pytest.mark.parametrize("beam_size", [0, -1, 2.5, True, "4"])
def test_bad_beam_size(beam_size):
    with pytest.raises(ValueError, match="beam_size"):
        translate_catalog(parse_po(catalog_text(language="de")), FakeTranslator(), beam_size=beam_size)


def test_write_failure_keeps_the_old_file_and_leaves_nothing(tmp_path, monkeypatch):
    out = tmp_path / "out.po"
    out.write_bytes(b"old contents")
    catalog = parse_po(catalog_text(language="de"))

    def failing_replace(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(catalog_translation.os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space"):
        write_catalog(catalog, out)
    assert out.read_bytes() == b"old contents" and os.listdir(tmp_path) == ["out.po"]


def test_unencodable_catalog_is_refused_before_writing(tmp_path):
    catalog = parse_po(catalog_text(charset="ISO-8859-1", language="de"))
    catalog.fill(find(catalog, "Open"), ["→"])
    with pytest.raises(ValueError, match="iso8859-1 cannot hold"):
        write_catalog(catalog, tmp_path / "out.po")
    assert os.listdir(tmp_path) == []


def test_write_keeps_permissions_and_follows_links(tmp_path):
    target = tmp_path / "real.po"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.po"
    link.symlink_to(target)
    write_catalog(parse_po(catalog_text(language="de")), link)
    assert link.is_symlink() and find(read_po(target), "Open") is not None
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["link.po", "real.po"]


def test_previous_msgid_of_obsolete_entries_is_kept(tmp_path):
    """polib 1.2 drops '#~|' lines (tests/messages/test_po_file.py shows it); we keep them."""
    text = catalog_text(body='#~| msgid "Older"\n#~ msgid "Old"\n#~ msgstr "Alt"\n')
    write_catalog(parse_po(text), tmp_path / "out.po")
    assert (tmp_path / "out.po").read_text() == text


def test_only_the_filled_entries_lines_change(source, tmp_path):
    """Every line outside the filled entries' msgstr and flags comes back byte for byte."""
    translate_file(source, tmp_path / "out.po", FakeTranslator())
    before = source.read_bytes().decode("iso-8859-1").splitlines()
    after = (tmp_path / "out.po").read_bytes().decode("iso-8859-1").splitlines()
    removed = [line[2:] for line in difflib.ndiff(before, after) if line.startswith("- ")]
    added = [line[2:] for line in difflib.ndiff(before, after) if line.startswith("+ ")]
    # Exactly the filled entries' empty msgstr lines and the flags lines that gain "fuzzy".
    # (the multi-line "Hello" entry keeps its first line, msgstr "")
    assert collections.Counter(removed) == collections.Counter(
        {'msgstr ""': 6, 'msgstr[0] ""': 1, 'msgstr[1] ""': 1, "#, c-format": 2, "#, python-format": 1})
    assert all(line.startswith(("msgstr", "#, fuzzy", '"DE:', '"you', "# machine translation: "))
               for line in added), added
    assert len([line for line in added if line.startswith("#, fuzzy")]) == FILLED - 1  # "Quit" is fuzzy already


@pytest.mark.parametrize("expression", ["(n == 1 ? 0 : 1)", "n != 1", "(n==1) ? 0 : 1", "1 - (n == 1)"])
def test_a_form_serving_one_alone_comes_from_msgid_however_the_rule_is_spelled(expression):
    """Form 0 serves n = 1 alone under each spelling: it is the singular, from msgid."""
    catalog = parse_po(catalog_text(language="de", plural_forms_value=f"nplurals=2; plural={expression};"))
    translate_catalog(catalog, FakeTranslator())
    assert find(catalog, "One file").msgstr == ["DE:One file", "DE:%d files"]


def test_the_form_of_one_is_found_by_evaluation_when_it_is_not_form_0():
    catalog = parse_po(catalog_text(language="de", plural_forms_value="nplurals=2; plural=n == 1;"))
    translate_catalog(catalog, FakeTranslator())
    assert find(catalog, "One file").msgstr == ["DE:%d files", "DE:One file"]


def test_each_entry_goes_to_the_translator_with_its_format_flag():
    body = ('#, c-format\nmsgid "100%% of %s"\nmsgstr ""\n\n'
            'msgid "50% of the files"\nmsgstr ""\n\n'
            '#, python-brace-format\nmsgid "{0} of the files"\nmsgstr ""\n\n'
            '#, no-c-format\nmsgid "Done: 100%"\nmsgstr ""\n')
    fake = FakeTranslator()
    translate_catalog(parse_po(catalog_text(language="de", body=body)), fake)
    flags = dict(zip(fake.calls[0]["texts"], fake.calls[0]["format_flags"]))
    assert flags == {"100%% of %s": "c-format", "50% of the files": "none",
                     "{0} of the files": "python-brace-format", "Done: 100%": "none"}


def test_one_text_with_two_format_flags_is_sent_twice():
    body = '#, c-format\nmsgid "50% done"\nmsgstr ""\n\nmsgctxt "x"\nmsgid "50% done"\nmsgstr ""\n'
    fake = FakeTranslator()
    translate_catalog(parse_po(catalog_text(language="de", body=body)), fake)
    assert sorted(zip(fake.calls[0]["texts"], fake.calls[0]["format_flags"])) == [
        ("50% done", "c-format"), ("50% done", "none")]


@pytest.mark.parametrize("value,message", [
    ("nplurals=2; plural=n/0;", "divides by zero"),
    ("nplurals=2; plural=(n;", "cannot be read"),
    ("nplurals=2; plural=n+1;", "gives form 2"),
])
def test_a_plural_rule_msgfmt_refuses_is_refused(value, message):
    catalog = parse_po(catalog_text(language="de", plural_forms_value=value))
    with pytest.raises(ValueError, match=message):
        translate_catalog(catalog, FakeTranslator())


def test_other_format_flags_keep_every_kind_of_placeholder():
    from keras_transformer.messages.catalog_translation import format_flag
    from keras_transformer.messages.po_file import PoEntry
    assert [format_flag(PoEntry(flags=(flag,))) for flag in
            ("perl-format", "qt-format", "no-c-format", "fuzzy", "c-format")] == [
        "any", "any", "none", "none", "c-format"]


def test_numbered_directives_keep_msgid_plurals_form(tmp_path):
    """`one file in %2$s` would skip argument 1: msgfmt refuses it as msgstr[0]."""
    body = ('#, c-format\nmsgid "one file in %2$s"\nmsgid_plural "%1$d files in %2$s"\n'
            'msgstr[0] ""\nmsgstr[1] ""\n')
    catalog = parse_po(catalog_text(language="de", plural_forms_value=PLURAL_FORMS["de"], body=body))
    translate_catalog(catalog, FakeTranslator())
    assert find(catalog, "one file in %2$s").msgstr == ["DE:%1$d files in %2$s"] * 2
    write_catalog(catalog, tmp_path / "out.po")
    msgfmt_check(tmp_path / "out.po")


def test_a_translated_plural_entry_with_the_wrong_number_of_forms_is_refused():
    body = 'msgid "a"\nmsgid_plural "as"\nmsgstr[0] "b"\n\nmsgid "Open"\nmsgstr ""\n'
    catalog = parse_po(catalog_text(language="de", plural_forms_value=PLURAL_FORMS["de"], body=body),
                       name="de.po")
    with pytest.raises(ValueError, match=r"de\.po:9: 1 plural forms, but the header's Plural-Forms "
                                         r"says nplurals=2"):
        translate_catalog(catalog, FakeTranslator())


@pytest.mark.parametrize("fill,charset", [("Öffnen", "iso-8859-1"), ("Öffnen €", "UTF-8")])
def test_a_content_type_in_lower_case_is_the_catalogs_charset(tmp_path, fill, charset):
    """`Content-type:` names the charset as `Content-Type:` does (gettext finds `charset=`
    anywhere): a fill keeps it, or changes that very line, and existing text keeps its meaning."""
    text = ('msgid ""\nmsgstr ""\n"Content-type: text/plain; charset=iso-8859-1\\n"\n'
            '"Language: de\\n"\n\n#: a.c:1\nmsgid "Street"\nmsgstr "Straße"\n\nmsgid "Open"\nmsgstr ""\n')
    source = tmp_path / "in.po"
    source.write_bytes(text.encode("iso-8859-1"))
    catalog = read_po(source)

    class Fixed:
        target_language = "de"

        def translations(self, texts, beam_size=4, num_return=1, progress=False, format_flags=None):
            return [[Translation(fill, -1.0)] for _ in texts]

    translate_catalog(catalog, Fixed())
    out = tmp_path / "out.po"
    write_catalog(catalog, out)
    written = out.read_bytes().decode(charset)
    assert written.count("ontent-") == 1 and f'"Content-type: text/plain; charset={charset}\\n"' in written
    compiled = tmp_path / "out.mo"
    subprocess.run(["msgfmt", "--check", "--use-fuzzy", "-o", str(compiled), str(out)], check=True)
    mo = polib.mofile(str(compiled), encoding=charset)  # what the program decodes with
    assert mo.metadata["Content-type"] == f"text/plain; charset={charset}"
    assert {e.msgid: e.msgstr for e in mo if e.msgid} == {"Street": "Straße", "Open": fill}


@pytest.mark.parametrize("nplurals", [1_000_000_000, 101])
def test_more_forms_than_this_tool_fills_are_refused_in_one_line(nplurals):
    """A header's nplurals of a billion (msgfmt accepts the header) would fill an untranslated
    plural entry with a billion forms (MemoryError): refused above 100, naming both."""
    catalog = parse_po(catalog_text(language="de", plural_forms_value=f"nplurals={nplurals}; plural=0;"))
    with pytest.raises(ValueError, match=rf"nplurals={nplurals}: .*at most 100"):
        translate_catalog(catalog, FakeTranslator())
    catalog = parse_po(catalog_text(language="de", plural_forms_value="nplurals=100; plural=0;"))
    translate_catalog(catalog, FakeTranslator())
    assert len(find(catalog, "One file").msgstr) == 100


@pytest.mark.parametrize("plural_forms_value", [
    "nplurals=" + "0" * 5000 + "2; plural=(n != 1);",
    "nplurals=2; plural=n != " + "0" * 5000 + "1;",
    "nplurals=2; plural=n % " + "0" * 5000 + "18446744073709551617 != 1;",  # wraps to n % 1
])
def test_numbers_of_thousands_of_digits_are_read_as_gettext_reads_them(plural_forms_value, tmp_path):
    """Python's int() refuses more than 4,300 digits; gettext reads leading zeros (strtoul for
    nplurals, plural.y's lexer wrapping at 2**64 in the expression): the verdict is msgfmt's."""
    path = tmp_path / "t.po"
    path.write_text(catalog_text(language="de", plural_forms_value=plural_forms_value,
                                 body='msgid "a"\nmsgid_plural "b"\nmsgstr[0] "A"\nmsgstr[1] "B"\n'),
                    encoding="utf-8")
    accepted = subprocess.run([MSGFMT, "--check", "-o", os.devnull, str(path)],
                              capture_output=True).returncode == 0
    try:
        check_catalog(parse_po(path.read_text(encoding="utf-8"), "t.po"))
        ours = True
    except PoSyntaxError:
        ours = False
    assert ours == accepted


def test_plural_rule_parse_reads_the_header_as_catalogs_do():
    """PluralRule.parse finds nplurals= and plural= as gettext (and _header_rule) do: the
    first `nplurals=`, C's white space after it, no spaces before the `=`."""
    assert PluralRule.parse("nplurals=" + "0" * 5000 + "3; plural=n%3;").nplurals == 3
    assert PluralRule.parse("nplurals=\t2; plural=n != 1\nx").form(1) == 0
    with pytest.raises(ValueError, match="no valid nplurals"):
        PluralRule.parse("nplurals = 2; plural=n != 1;")  # gettext wants `nplurals=`
