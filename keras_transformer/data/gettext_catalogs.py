"""Parallel text from GNU gettext catalogs: translated program messages.

Every Linux distribution ships the translations of its programs' messages as
gettext catalogs: binary `.mo` files under `/usr/share/locale/<lang>/LC_MESSAGES/`
and, in source trees and some Python packages, their text form `.po`. Each
entry pairs an English message (`msgid`) with its translation (`msgstr`): real,
human-made parallel text that is already on the machine.

This module reads `.po` files with `keras_transformer.messages.po_file` (as
strictly as `msgfmt`, C escapes decoded) and `.mo` files with polib (plural
forms, message contexts, the charset a catalog declares; a broken file is a
`CatalogError`), and splits the
pairs into train/validation/test by a hash of the English text, so a message
never lands in two splits.
"""

import dataclasses
import glob
import hashlib
import os
import re
import struct
import sys
import warnings

from keras_transformer import validation
from keras_transformer.messages.po_file import PoSyntaxError
from keras_transformer.messages.po_file import read_po
from keras_transformer.optional_dependencies import require

DEFAULT_DIRECTORIES = (
    "/usr/share/locale",
    "/usr/local/share/locale",
    "/usr/share/locale-langpack",
    os.path.join(sys.prefix, "share", "locale"),
)
"""Where `load_gettext_pairs` looks for `<lang>/LC_MESSAGES/*.mo` by default."""



class CatalogError(ValueError):
    """A catalog file that cannot be parsed (truncated, corrupt or not a catalog)."""


@dataclasses.dataclass(frozen=True)
class Message:
    """One catalog entry.

    Args:
        source: the English message (`msgid`).
        translations: `msgstr` (one item) or `msgstr[0..n]` for plural forms.
        plural: the English plural (`msgid_plural`), or None.
        context: the disambiguating `msgctxt`, or None.
        fuzzy: True when translators flagged the entry as unreviewed (`.po` only).

    Example:
    >>> Message("%d file", ("%d Datei", "%d Dateien"), plural="%d files").pairs()
    [('%d file', '%d Datei'), ('%d files', '%d Dateien')]
    """

    source: str
    translations: tuple
    plural: str = None
    context: str = None
    fuzzy: bool = False

    def pairs(self):
        """(English, translation) pairs: the singular with `msgstr[0]` and the
        plural with `msgstr[1]` (or `msgstr[0]` for one-form languages).
        Untranslated forms give no pair."""
        found = [(self.source, self.translations[0])]
        if self.plural is not None:
            found.append((self.plural, self.translations[min(1, len(self.translations) - 1)]))
        return [(source, target) for source, target in found if source and target]


_MO_MAGIC = {b"\xde\x12\x04\x95": "<", b"\x95\x04\x12\xde": ">"}


def _check_mo_tables(data, path):
    """Raises CatalogError if a `.mo` string table (in the bytes `data` of the file
    at `path`) points outside the file.

    polib reads such a file without a word (Python slices past the end give
    empty strings, so entries silently turn into headers); the test of a
    corrupt offset shows it, so this check stays ours.
    """
    order = _MO_MAGIC.get(data[:4])
    if order is None:
        return  # polib reports the bad magic number itself
    try:
        _, count, originals, translations = struct.unpack_from(order + "4I", data, 4)
        for table in (originals, translations):
            for i in range(count):
                length, offset = struct.unpack_from(order + "2I", data, table + 8 * i)
                if offset + length > len(data):
                    raise CatalogError(
                        f"{path}: entry {i} points past the end of the file.")
    except struct.error as error:
        raise CatalogError(f"{path}: truncated .mo file ({error}).") from None


def _messages(entries):
    """`Message`s of polib's `.mo` entries: the header and obsolete (`#~`) entries left out."""
    messages = []
    for entry in entries:
        if entry.obsolete or entry.msgid == "":
            continue
        if entry.msgid_plural:
            forms = entry.msgstr_plural
            translations = tuple(forms[index] for index in sorted(forms)) or ("",)
        else:
            translations = (entry.msgstr,)
        messages.append(Message(
            source=entry.msgid,
            translations=translations,
            plural=entry.msgid_plural or None,
            context=entry.msgctxt,
            fuzzy="fuzzy" in entry.flags,
        ))
    return messages


def po_messages(entries):
    """`Message`s of a `PoFile`'s entries: the header and obsolete (`#~`) entries left out.

    Args:
        entries: `PoEntry`s (`PoFile.entries`).

    Returns:
        A list of `Message`.
    """
    return [Message(source=entry.msgid, translations=tuple(entry.msgstr) or ("",),
                    plural=entry.msgid_plural or None, context=entry.msgctxt,
                    fuzzy="fuzzy" in entry.flags)
            for entry in entries if not entry.obsolete and entry.msgid != ""]


def read_catalog(path):
    """Reads a `.mo` or `.po` catalog (by extension) into `Message`s.

    Args:
        path: a `.mo` or `.po` file.

    Returns:
        A list of `Message`, without the header entry.

    Raises:
        CatalogError: the file is corrupt, truncated or not a catalog.
        FileNotFoundError: there is no file at `path`.

    Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "demo.po")
    >>> with open(path, "w", encoding="utf-8") as f:
    ...     _ = f.write('msgid "Open file"\\nmsgstr "Datei öffnen"\\n')
    >>> read_catalog(path)[0].pairs()
    [('Open file', 'Datei öffnen')]
    """
    polib = require("polib", "read_catalog")
    path = str(path)
    if not os.path.isfile(path):  # polib would parse the path itself as .po text
        raise FileNotFoundError(2, "No such file", path)
    if path.endswith(".po"):  # read as strictly as msgfmt, escapes and all (po_file)
        try:
            return po_messages(read_po(path).entries)
        except PoSyntaxError as error:
            raise CatalogError(f"not a readable catalog: {error}") from None
    if not path.endswith(".mo"):
        raise CatalogError(f"{path}: expected a .mo or .po file.")
    with open(path, "rb") as f:
        source = f.read()  # read once: checked here, then parsed by polib
    _check_mo_tables(source, path)
    try:
        # decoded with the charset the header declares (polib reads it; UTF-8 without one)
        return _messages(polib.mofile(source, check_for_duplicates=False))
    except (OSError, ValueError, LookupError, struct.error, IndexError) as error:
        # polib reports a broken file as an OSError (bad magic, bad syntax), a decoding
        # error (ValueError), or a struct error (truncated tables)
        raise CatalogError(f"{path}: not a readable catalog ({error}).") from None


def find_catalogs(language, directories=DEFAULT_DIRECTORIES):
    """The `.mo`/`.po` catalogs of `language` under `directories`.

    Looks in `<dir>/<language>/LC_MESSAGES/` and in regional variants
    (`<dir>/<language>_*/LC_MESSAGES/`, e.g. `de_DE`, `de_AT`).

    Args:
        language: a gettext language code such as `"de"` or `"fr"`.
        directories: locale roots to search.

    Returns:
        Sorted list of catalog paths.

    Example:
    >>> find_catalogs("de", directories=["/nonexistent"])
    []
    """
    if not isinstance(language, str) or not re.fullmatch(r"[A-Za-z]{2,3}", language):
        raise ValueError(
            "`language` must be a 2- or 3-letter gettext language code such as 'de'; "
            f"received {language!r}."
        )
    paths = set()
    for root in directories:
        for variant in (language, language + "_*", language + "@*"):
            for extension in ("mo", "po"):
                pattern = os.path.join(root, variant, "LC_MESSAGES", "*." + extension)
                paths.update(glob.glob(pattern))
    return sorted(paths)


def load_gettext_pairs(language="de", paths=None, directories=DEFAULT_DIRECTORIES,
                       include_fuzzy=False):
    """Unique (English, translation) pairs from gettext catalogs.

    Args:
        language: target language code, used to find catalogs when `paths`
            is None.
        paths: explicit `.mo`/`.po` files (or directories holding them,
            searched recursively); overrides the system search.
        directories: locale roots searched when `paths` is None.
        include_fuzzy: keep entries translators flagged as unreviewed.

    Returns:
        A sorted list of unique `(source, target)` string pairs (empty
        translations and the catalog headers are dropped). Files that cannot
        be parsed are skipped with a `RuntimeWarning` naming them.

    Raises:
        FileNotFoundError: no catalog was found; the message lists where it
            looked and how to install some.

    Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "a.po"), "w", encoding="utf-8") as f:
    ...     _ = f.write('msgid "Quit"\\nmsgstr "Beenden"\\n\\n'
    ...                 'msgid "Help"\\nmsgstr "Hilfe"\\n')
    >>> load_gettext_pairs(paths=[folder])
    [('Help', 'Hilfe'), ('Quit', 'Beenden')]
    """
    validation.check_bool("include_fuzzy", include_fuzzy)
    files = _catalog_files(language, paths, directories)
    pairs = set()
    for path in files:
        try:
            messages = read_catalog(path)
        except (CatalogError, OSError) as error:
            warnings.warn(f"Skipping unreadable catalog: {error}", RuntimeWarning, stacklevel=2)
            continue
        for message in messages:
            if include_fuzzy or not message.fuzzy:
                pairs.update(message.pairs())
    return sorted(pairs)


def _catalog_files(language, paths, directories):
    """The catalog files of `paths` (files or folders), or of `language` under
    `directories` when `paths` is None; FileNotFoundError, saying where it looked
    and how to get some, when there are none."""
    if paths is None:
        files, looked = find_catalogs(language, directories), list(directories)
    else:
        files, looked = _expand(paths), [str(p) for p in paths]
    if files:
        return files
    raise FileNotFoundError(
        f"No gettext catalogs (.mo/.po) for language {language!r} were found in "
        f"{looked} (searched <dir>/{language}/LC_MESSAGES/). Install translated "
        "messages, e.g. on Debian/Ubuntu `apt-get install language-pack-"
        f"{language}` or locale packages such as `coreutils` with "
        "/usr/share/locale kept (remove 'path-exclude /usr/share/locale' from "
        "/etc/dpkg/dpkg.cfg.d/excludes), or pass `paths=` to .po/.mo files."
    )


def _expand(paths):
    files = []
    for path in paths:
        path = os.fspath(path)
        if os.path.isdir(path):
            for extension in ("mo", "po"):
                files += glob.glob(os.path.join(path, "**", "*." + extension), recursive=True)
        else:
            files.append(path)
    return sorted(set(files))


def hash_fraction(text):
    """A stable number in [0, 1) from `text` (MD5, the same on every run and machine)."""
    digest = hashlib.md5(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def catalog_domain(path):
    """A catalog's program name: its file name without extension, or, in a source
    tree's `<program>/po/<lang>.po` layout, the program's folder.

    Args:
        path: a catalog file's path.

    Example:
    >>> catalog_domain("/usr/share/locale/de/LC_MESSAGES/make.mo")
    'make'
    >>> catalog_domain("src/sed/po/de.po")
    'sed'
    """
    path = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(path)
    if os.path.basename(folder) == "po" and os.path.basename(os.path.dirname(folder)):
        return os.path.basename(os.path.dirname(folder))
    return os.path.splitext(os.path.basename(path))[0]


def hold_out_catalogs(paths, fraction=0.05):
    """Splits catalog files into (seen, held out) by a hash of their program's name.

    A model evaluated on the held-out catalogs' messages is evaluated on
    programs it never saw, which is what a user translating a new program
    gets. Every file of one program (e.g. two `Linux-PAM.mo`) lands on the
    same side, and with two programs or more at least one is held out (the
    one whose name hashes lowest), so the held-out side is never empty.
    Remove the held-out messages' English texts from the training pairs too:
    other programs share many messages.

    Args:
        paths: catalog files (e.g. from `find_catalogs`).
        fraction: expected share of programs held out, in [0, 1).

    Returns:
        `(seen, held_out)`: two sorted lists of paths.

    Example:
    >>> seen, held = hold_out_catalogs(["a/make.mo", "a/grep.mo", "a/sed.mo"])
    >>> [catalog_domain(p) for p in held], len(seen)
    (['make'], 2)
    """
    validation.check_rate("fraction", fraction)
    paths = sorted(os.fspath(p) for p in paths)
    domains = sorted({catalog_domain(p) for p in paths}, key=hash_fraction)
    held = {d for d in domains if hash_fraction(d) < fraction}
    if not held and len(domains) > 1:
        held = {domains[0]}
    return ([p for p in paths if catalog_domain(p) not in held],
            [p for p in paths if catalog_domain(p) in held])


def split_by_hash(items, validation_fraction=0.05, test_fraction=0.05, key=None):
    """Deterministic train/validation/test split by a hash of each item's key.

    Items with the same key (e.g. one English message with two translations)
    always land in the same split, and adding items never moves old ones.

    Args:
        items: a sequence (e.g. `(source, target)` pairs).
        validation_fraction: expected share of the validation split.
        test_fraction: expected share of the test split.
        key: function from an item to the string hashed; default the first
            element of the item (the source text).

    Returns:
        A dict `{"train": [...], "validation": [...], "test": [...]}`,
        each in the input order.

    Example:
    >>> pairs = [(f"message {i}", f"Nachricht {i}") for i in range(1000)]
    >>> splits = split_by_hash(pairs, 0.1, 0.1)
    >>> [len(splits[name]) for name in ("train", "validation", "test")]
    [805, 98, 97]
    """
    for name, value in (("validation_fraction", validation_fraction),
                        ("test_fraction", test_fraction)):
        validation.check_rate(name, value)
    if validation_fraction + test_fraction >= 1:
        raise ValueError(
            "`validation_fraction + test_fraction` must be < 1; received "
            f"{validation_fraction} + {test_fraction}."
        )
    key = key or (lambda item: item[0])
    splits = {"train": [], "validation": [], "test": []}
    for item in items:
        fraction = hash_fraction(key(item))
        if fraction < test_fraction:
            splits["test"].append(item)
        elif fraction < test_fraction + validation_fraction:
            splits["validation"].append(item)
        else:
            splits["train"].append(item)
    return splits


def gettext_splits(language="de", paths=None, directories=DEFAULT_DIRECTORIES):
    """The translation splits `examples/translate.py` trains and evaluates on.

    Whole programs are held out first (`hold_out_catalogs`): their messages
    form `"new_programs"`, and their English texts are removed from every
    other split, so that split measures a program never seen in training.
    The other messages are split by a hash of their English text
    (`split_by_hash`) into `"train"`, `"validation"` and `"test"`.

    Args:
        language: target language code, used to find catalogs when `paths`
            is None.
        paths: explicit `.mo`/`.po` files or directories instead of the
            system's catalogs.
        directories: locale roots searched when `paths` is None.

    Returns:
        `(splits, held_out)`: a dict of four lists of `(source, target)`
        pairs (`"train"`, `"validation"`, `"test"`, `"new_programs"`), and
        the held-out catalog paths.

    Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> for program in ("grep", "make", "sed"):
    ...     with open(os.path.join(folder, program + ".po"), "w", encoding="utf-8") as f:
    ...         _ = f.write(f'msgid "Quit {program}"\\nmsgstr "{program} beenden"\\n')
    >>> splits, held_out = gettext_splits(paths=[folder])
    >>> splits["new_programs"], [catalog_domain(p) for p in held_out]
    ([('Quit make', 'make beenden')], ['make'])
    """
    files = _catalog_files(language, paths, directories)
    seen, held_out = hold_out_catalogs(files)
    new_programs = load_gettext_pairs(language, paths=held_out) if held_out else []
    held_sources = {source for source, _ in new_programs}
    pairs = [pair for pair in (load_gettext_pairs(language, paths=seen) if seen else [])
             if pair[0] not in held_sources]
    splits = split_by_hash(pairs)
    splits["new_programs"] = new_programs
    return splits, held_out
