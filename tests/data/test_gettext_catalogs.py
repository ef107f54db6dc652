"""The gettext loader: system catalogs, .mo/.po parsing, broken files, the hash split."""

import gettext
import struct

import pytest

from keras_transformer import data
from keras_transformer.data import gettext_catalogs


def write_mo(path, entries, charset="UTF-8", magic=b"\xde\x12\x04\x95"):
    """Writes a little-endian `.mo` file from `{msgid: msgstr}` (str keys as gettext
    stores them: `ctx\\x04id`, `singular\\x00plural`), with a header declaring `charset`."""
    entries = dict(entries)
    entries[""] = f"Content-Type: text/plain; charset={charset}\n"
    keys = sorted(entries)
    originals = [k.encode(charset) for k in keys]
    translations = [entries[k].encode(charset) for k in keys]
    count = len(keys)
    header_size = 28
    table_size = 8 * count
    offset = header_size + 2 * table_size
    tables, blob = [], b""
    for strings in (originals, translations):
        table = b""
        for s in strings:
            table += struct.pack("<2I", len(s), offset + len(blob))
            blob += s + b"\x00"
        tables.append(table)
    header = magic + struct.pack("<6I", 0, count, header_size, header_size + table_size, 0, 0)
    with open(path, "wb") as f:
        f.write(header + tables[0] + tables[1] + blob)
    return path


PO_WITH_PLURALS_AND_CONTEXTS = r'''# A translator comment
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\n"

#: src/main.c:10
msgid "Open"
msgstr "Öffnen"

msgctxt "menu"
msgid "File"
msgstr "Datei"

msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d Datei"
msgstr[1] "%d Dateien"

msgid ""
"A message over "
"two lines\n"
msgstr ""
"Eine Meldung über "
"zwei Zeilen\n"

msgid "Say \"hi\"\tnow"
msgstr "Sag \"hallo\"\tjetzt"

#, fuzzy
msgid "Unreviewed"
msgstr "Ungeprüft"

msgid "Untranslated"
msgstr ""

#~ msgid "Obsolete"
#~ msgstr "Veraltet"
'''


def test_system_catalogs_give_at_least_30000_german_pairs():
    pairs = data.load_gettext_pairs("de")
    assert len(pairs) >= 30_000
    assert len(set(pairs)) == len(pairs)
    assert all(source and target for source, target in pairs)
    # Mostly real German text; names of places and languages are often the same.
    assert sum(source != target for source, target in pairs) > 0.7 * len(pairs)
    assert sum("ü" in target or "ä" in target or "ö" in target for _, target in pairs) > 5000


def test_po_with_plurals_contexts_continuations_and_escapes(tmp_path):
    path = tmp_path / "demo.po"
    path.write_text(PO_WITH_PLURALS_AND_CONTEXTS, encoding="utf-8")
    messages = {m.source: m for m in data.read_catalog(str(path))}
    assert messages["File"].context == "menu"
    assert messages["%d file"].plural == "%d files"
    assert messages["%d file"].translations == ("%d Datei", "%d Dateien")
    assert messages["Unreviewed"].fuzzy
    assert "Obsolete" not in messages
    pairs = data.load_gettext_pairs(paths=[str(path)])
    assert pairs == sorted([
        ("Open", "Öffnen"),
        ("File", "Datei"),
        ("%d file", "%d Datei"),
        ("%d files", "%d Dateien"),
        ("A message over two lines\n", "Eine Meldung über zwei Zeilen\n"),
        ('Say "hi"\tnow', 'Sag "hallo"\tjetzt'),
    ])
    with_fuzzy = data.load_gettext_pairs(paths=[str(path)], include_fuzzy=True)
    assert ("Unreviewed", "Ungeprüft") in with_fuzzy


def test_mo_with_plurals_and_contexts(tmp_path):
    path = write_mo(tmp_path / "demo.mo", {
        "Open": "Öffnen",
        "menu\x04File": "Datei",
        "%d file\x00%d files": "%d Datei\x00%d Dateien",
        "Untranslated": "",
    })
    messages = {m.source: m for m in data.read_catalog(str(path))}
    assert messages["File"].context == "menu"
    assert messages["%d file"].translations == ("%d Datei", "%d Dateien")
    assert data.load_gettext_pairs(paths=[str(path)]) == sorted([
        ("Open", "Öffnen"), ("File", "Datei"), ("%d file", "%d Datei"),
        ("%d files", "%d Dateien"),
    ])


def test_big_endian_mo(tmp_path):
    path = tmp_path / "be.mo"
    write_mo(path, {"Open": "Öffnen"})
    raw = bytearray(path.read_bytes())
    # Rewrite every 32-bit header/table word big-endian.
    count = struct.unpack_from("<I", raw, 8)[0]
    words = 7 + 4 * count
    for i in range(words):
        (value,) = struct.unpack_from("<I", raw, 4 * i)
        struct.pack_into(">I", raw, 4 * i, value)
    path.write_bytes(bytes(raw))
    assert data.load_gettext_pairs(paths=[str(path)]) == [("Open", "Öffnen")]


def test_system_catalogs_read_as_the_standard_library_reads_them():
    """polib (through `read_catalog`) against an independent reader, Python's own
    `gettext.GNUTranslations`, on every German catalog of the machine."""
    paths = data.find_catalogs("de")
    assert paths
    compared, stdlib_fails = 0, []
    for path in paths:
        try:
            with open(path, "rb") as f:
                stdlib = gettext.GNUTranslations(f)._catalog
        except UnicodeDecodeError:
            # the standard library decodes a latin-1 header's lines as UTF-8 before it
            # reads the charset (net-tools): ours must still read the file
            stdlib_fails.append(path)
            assert data.read_catalog(path), path
            continue
        for message in data.read_catalog(path):
            key = message.source if message.context is None else (
                f"{message.context}\x04{message.source}")
            if message.plural is None:
                assert stdlib[key] == message.translations[0], (path, key)
            else:
                assert [stdlib[(key, i)] for i in range(len(message.translations))] == list(
                    message.translations), (path, key)
            compared += 1
        # nothing the standard library reads is missing (its header entry aside)
        singular = {k if isinstance(k, str) else k[0] for k in stdlib} - {""}
        read = {m.source if m.context is None else f"{m.context}\x04{m.source}"
                for m in data.read_catalog(path)}
        assert singular == read, path
    assert compared > 30_000 and len(stdlib_fails) <= 2, stdlib_fails


@pytest.mark.parametrize("extension", ["mo", "po"])
def test_latin1_catalogs_are_decoded_with_their_declared_charset(tmp_path, extension):
    path = tmp_path / f"latin1.{extension}"
    if extension == "mo":
        write_mo(path, {"Size": "Größe", "Street": "Straße"}, charset="ISO-8859-1")
    else:
        text = ('msgid ""\nmsgstr "Content-Type: text/plain; charset=ISO-8859-1\\n"\n\n'
                'msgid "Size"\nmsgstr "Größe"\n\nmsgid "Street"\nmsgstr "Straße"\n')
        path.write_bytes(text.encode("latin-1"))
    assert "Größe".encode("latin-1") in path.read_bytes()  # really not UTF-8
    assert data.load_gettext_pairs(paths=[str(path)]) == [("Size", "Größe"), ("Street", "Straße")]


@pytest.mark.parametrize("corruption", ["truncated", "bad magic", "bad offset", "bad po"])
def test_broken_catalog_is_skipped_with_a_warning_and_the_rest_is_read(tmp_path, corruption):
    good = write_mo(tmp_path / "good.mo", {"Quit": "Beenden"})
    if corruption == "bad po":
        broken = tmp_path / "broken.po"
        broken.write_text('msgid "Open"\nthis is not po syntax\n', encoding="utf-8")
    else:
        raw = bytearray(write_mo(tmp_path / "broken.mo", {"Open": "Öffnen"}).read_bytes())
        broken = tmp_path / "broken.mo"
        if corruption == "truncated":
            raw = raw[:30]
        elif corruption == "bad magic":
            raw[:4] = b"JUNK"
        else:
            struct.pack_into("<I", raw, 28 + 4, 10**6)  # first original's offset
        broken.write_bytes(bytes(raw))
    with pytest.raises(data.CatalogError, match="broken"):
        data.read_catalog(str(broken))
    with pytest.warns(RuntimeWarning, match="broken"):
        pairs = data.load_gettext_pairs(paths=[str(good), str(broken)])
    assert pairs == [("Quit", "Beenden")]


def test_folders_are_searched_and_duplicates_removed(tmp_path):
    (tmp_path / "a").mkdir()
    write_mo(tmp_path / "a" / "one.mo", {"Quit": "Beenden", "Help": "Hilfe"})
    (tmp_path / "b.po").write_text('msgid "Quit"\nmsgstr "Beenden"\n', encoding="utf-8")
    assert data.load_gettext_pairs(paths=[str(tmp_path)]) == [
        ("Help", "Hilfe"), ("Quit", "Beenden")
    ]


def test_language_folders_and_regional_variants_are_found(tmp_path):
    for folder in ("fr", "fr_CA", "de"):
        (tmp_path / folder / "LC_MESSAGES").mkdir(parents=True)
    write_mo(tmp_path / "fr" / "LC_MESSAGES" / "a.mo", {"Quit": "Quitter"})
    write_mo(tmp_path / "fr_CA" / "LC_MESSAGES" / "b.mo", {"Help": "Aide"})
    write_mo(tmp_path / "de" / "LC_MESSAGES" / "a.mo", {"Quit": "Beenden"})
    assert data.load_gettext_pairs("fr", directories=[str(tmp_path)]) == [
        ("Help", "Aide"), ("Quit", "Quitter")
    ]


def test_no_catalogs_says_where_it_looked_and_how_to_get_some(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"(?s)xx.*nowhere.*apt-get install"):
        data.load_gettext_pairs("xx", directories=[str(tmp_path / "nowhere")])


def test_bad_language_code():
    with pytest.raises(ValueError, match="`language`"):
        data.find_catalogs("../etc")


def test_split_by_hash_is_deterministic_and_never_splits_a_source():
    pairs = [(f"message {i % 700}", f"Übersetzung {i}") for i in range(1000)]
    splits = data.split_by_hash(pairs, validation_fraction=0.1, test_fraction=0.2)
    assert splits == data.split_by_hash(list(pairs), 0.1, 0.2)
    sources = {name: {s for s, _ in items} for name, items in splits.items()}
    assert not sources["train"] & sources["test"]
    assert not sources["train"] & sources["validation"]
    assert not sources["validation"] & sources["test"]
    assert sum(len(items) for items in splits.values()) == len(pairs)
    assert 0.12 < len(splits["test"]) / len(pairs) < 0.28
    # Adding pairs never moves the old ones.
    more = data.split_by_hash(pairs + [("new message", "neu")], 0.1, 0.2)
    assert all(set(splits[name]) <= set(more[name]) for name in splits)


@pytest.mark.parametrize("arguments, name", [
    (dict(validation_fraction=1.5), "validation_fraction"),
    (dict(test_fraction=-0.1), "test_fraction"),
    (dict(validation_fraction=0.6, test_fraction=0.5), "validation_fraction \\+ test_fraction"),
])
def test_split_fractions_are_validated(arguments, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        data.split_by_hash([("a", "b")], **arguments)


def test_hash_fraction_is_stable():
    # MD5-based: the same value on every machine and run (not Python's salted hash()).
    assert gettext_catalogs.hash_fraction("Open file") == pytest.approx(
        int.from_bytes(__import__("hashlib").md5(b"Open file").digest()[:8], "big") / 2**64
    )


def test_gettext_splits_hold_whole_programs_out_and_their_texts_out_of_training(tmp_path):
    # "Quit" is in every program: as a held-out program's text it must leave every other split.
    for program in ("grep", "make", "sed", "tar"):
        messages = {"Quit": "Beenden", f"{program} help": f"{program}-Hilfe"}
        messages.update({f"{program} message {i}": f"{program} Meldung {i}" for i in range(60)})
        write_mo(tmp_path / f"{program}.mo", messages)
    splits, held_out = data.gettext_splits(paths=[tmp_path])
    held = {data.catalog_domain(path) for path in held_out}
    assert held and len(held) < 4
    programs = {source.split()[0] for source, _ in splits["new_programs"] if source != "Quit"}
    assert programs == held
    assert ("Quit", "Beenden") in splits["new_programs"]
    seen_texts = {s for name in ("train", "validation", "test") for s, _ in splits[name]}
    assert not seen_texts & {s for s, _ in splits["new_programs"]}
    assert {s.split()[0] for s in seen_texts} == {"grep", "make", "sed", "tar"} - held
    assert splits == data.gettext_splits(paths=[tmp_path])[0]
    with pytest.raises(FileNotFoundError, match="nowhere"):
        data.gettext_splits("xx", directories=[str(tmp_path / "nowhere")])
