"""Parallel text from GNU gettext catalogs: translated program messages.

Every Linux distribution ships the translations of its programs' messages as
gettext catalogs: binary `.mo` files under `/usr/share/locale/<lang>/LC_MESSAGES/`
and, in source trees and some Python packages, their text form `.po`. Each
entry pairs an English message (`msgid`) with its translation (`msgstr`): real,
human-made parallel text that is already on the machine.

This module reads both formats with a small parser of its own (so plural
forms, message contexts, any declared charset and broken files are handled
the same way everywhere), and splits the pairs into train/validation/test by a
hash of the English text, so a message never lands in two splits.
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

DEFAULT_DIRECTORIES = (
    "/usr/share/locale",
    "/usr/local/share/locale",
    "/usr/share/locale-langpack",
    os.path.join(sys.prefix, "share", "locale"),
)
"""Where `load_gettext_pairs` looks for `<lang>/LC_MESSAGES/*.mo` by default."""

_MO_MAGIC = {b"\xde\x12\x04\x95": "<", b"\x95\x04\x12\xde": ">"}
_CONTEXT_SEPARATOR = "\x04"  # msgctxt EOT msgid, in .mo keys
_CHARSET = re.compile(r"charset\s*=\s*([-\w.:]+)", re.IGNORECASE)


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


def _charset(header):
    match = _CHARSET.search(header)
    charset = match.group(1) if match else "utf-8"
    return "utf-8" if charset.upper() == "CHARSET" else charset  # template placeholder


def read_mo(path):
    """Parses a binary `.mo` catalog into `Message`s (the header entry excluded).

    Raises:
        CatalogError: the file is not a well-formed `.mo` catalog.
    """
    with open(path, "rb") as f:
        data = f.read()
    order = _MO_MAGIC.get(data[:4])
    if order is None:
        raise CatalogError(f"{path}: not a .mo file (bad magic number).")
    try:
        _, count, originals, translations = struct.unpack(order + "4I", data[4:20])
        raw = []
        for i in range(count):
            entries = []
            for table in (originals, translations):
                length, offset = struct.unpack_from(order + "2I", data, table + 8 * i)
                if offset + length > len(data):
                    raise CatalogError(f"{path}: entry {i} points past the end of the file.")
                entries.append(data[offset:offset + length])
            raw.append(entries)
    except struct.error as error:
        raise CatalogError(f"{path}: truncated .mo file ({error}).") from None
    charset = "utf-8"
    for key, value in raw:
        if key == b"":
            charset = _charset(value.decode("ascii", "replace"))
    messages = []
    for key, value in raw:
        if key == b"":
            continue
        try:
            key, value = key.decode(charset), value.decode(charset)
        except (UnicodeDecodeError, LookupError) as error:
            raise CatalogError(f"{path}: cannot decode as {charset!r} ({error}).") from None
        context = None
        if _CONTEXT_SEPARATOR in key:
            context, key = key.split(_CONTEXT_SEPARATOR, 1)
        source, _, plural = key.partition("\x00")
        messages.append(Message(
            source=source,
            translations=tuple(value.split("\x00")),
            plural=plural if "\x00" in key else None,
            context=context,
        ))
    return messages


_PO_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "a": "\a",
               "b": "\b", "f": "\f", "v": "\v"}
_PO_KEYWORD = re.compile(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?)\s+"(.*)"\s*$')
_PO_CONTINUATION = re.compile(r'^"(.*)"\s*$')


def _unescape(text):
    return re.sub(r"\\(.)", lambda m: _PO_ESCAPES.get(m.group(1), m.group(1)), text)


def _po_entries(lines, path):
    """Yields each entry of a `.po` file as (fields dict, fuzzy flag)."""
    fields, fuzzy, current = {}, False, None
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or (line.startswith("#") and not line.startswith("#,")):
            if not line and fields:
                yield fields, fuzzy
                fields, fuzzy, current = {}, False, None
            continue  # comments, references, obsolete (#~) entries
        if line.startswith("#,"):
            if fields:
                yield fields, fuzzy
                fields, current = {}, None
            fuzzy = "fuzzy" in line
            continue
        keyword = _PO_KEYWORD.match(line)
        continuation = _PO_CONTINUATION.match(line)
        if keyword:
            name, index, text = keyword.groups()
            if name in ("msgctxt", "msgid") and "msgstr" in fields:
                yield fields, fuzzy  # a new entry without a blank line between
                fields, fuzzy = {}, False
            current = ("msgstr", int(index)) if index is not None else name
            fields[current] = _unescape(text)
        elif continuation and current is not None:
            fields[current] += _unescape(continuation.group(1))
        else:
            raise CatalogError(f"{path}:{number}: cannot parse {line[:60]!r}.")
    if fields:
        yield fields, fuzzy


def read_po(path):
    """Parses a text `.po` catalog into `Message`s (the header entry excluded).

    Obsolete (`#~`) entries are skipped; fuzzy ones are kept with
    `fuzzy=True`. The file is decoded with the charset its header declares.

    Raises:
        CatalogError: a line is not valid `.po` syntax or cannot be decoded.
    """
    with open(path, "rb") as f:
        data = f.read()
    header = data[:4096].decode("ascii", "replace")
    charset = _charset(header)
    try:
        text = data.decode(charset)
    except (UnicodeDecodeError, LookupError) as error:
        raise CatalogError(f"{path}: cannot decode as {charset!r} ({error}).") from None
    messages = []
    for fields, fuzzy in _po_entries(text.lstrip("\ufeff").splitlines(), path):
        if "msgid" not in fields or fields["msgid"] == "":
            continue  # the header entry, or a stray msgctxt
        if "msgid_plural" in fields:
            forms = sorted(k[1] for k in fields if isinstance(k, tuple))
            translations = tuple(fields[("msgstr", i)] for i in forms)
        else:
            translations = (fields.get("msgstr", ""),)
        messages.append(Message(
            source=fields["msgid"],
            translations=translations or ("",),
            plural=fields.get("msgid_plural"),
            context=fields.get("msgctxt"),
            fuzzy=fuzzy,
        ))
    return messages


def read_catalog(path):
    """Reads a `.mo` or `.po` catalog (by extension) into `Message`s.

    Args:
        path: a `.mo` or `.po` file.

    Returns:
        A list of `Message`, without the header entry.

    Raises:
        CatalogError: the file is corrupt, truncated or not a catalog.

    Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "demo.po")
    >>> with open(path, "w", encoding="utf-8") as f:
    ...     _ = f.write('msgid "Open file"\\nmsgstr "Datei öffnen"\\n')
    >>> read_catalog(path)[0].pairs()
    [('Open file', 'Datei öffnen')]
    """
    if str(path).endswith(".mo"):
        return read_mo(path)
    if str(path).endswith(".po"):
        return read_po(path)
    raise CatalogError(f"{path}: expected a .mo or .po file.")


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
    if paths is None:
        files, looked = find_catalogs(language, directories), list(directories)
    else:
        files, looked = _expand(paths), [str(p) for p in paths]
    if not files:
        raise FileNotFoundError(
            f"No gettext catalogs (.mo/.po) for language {language!r} were found in "
            f"{looked} (searched <dir>/{language}/LC_MESSAGES/). Install translated "
            "messages, e.g. on Debian/Ubuntu `apt-get install language-pack-"
            f"{language}` or locale packages such as `coreutils` with "
            "/usr/share/locale kept (remove 'path-exclude /usr/share/locale' from "
            "/etc/dpkg/dpkg.cfg.d/excludes), or pass `paths=` to .po/.mo files."
        )
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
