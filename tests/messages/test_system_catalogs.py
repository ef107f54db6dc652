"""A round trip over every compiled catalog of the machine, checked by GNU gettext's own tools.

Each `/usr/share/locale/*/LC_MESSAGES/*.mo` is decompiled with `msgunfmt`, then:

- as it is (every entry translated), through `translate_catalog` and
  `write_catalog`: the file must come back byte for byte, and
  `msgfmt --check-format` must accept it;
- with every translation emptied: each entry is filled by a translator that
  copies its source, and `msgfmt --check-format --use-fuzzy` must accept the
  result; with the new msgstr lines emptied again and the added fuzzy flags
  removed, it must be the emptied catalog byte for byte after the header
  (every entry, comment, flag, context and escape as it was; a plural entry
  may have gained the forms its header's nplurals asks for).

Prints the number of catalogs and entries checked in the test summary.
"""

import concurrent.futures
import dataclasses
import glob
import os
import re
import shutil
import subprocess

import pytest

from keras_transformer.messages.catalog_translation import translate_catalog
from keras_transformer.messages.catalog_translation import write_catalog
from keras_transformer.messages.po_file import read_po
from keras_transformer.tasks.translation import Translation

CATALOGS = sorted(glob.glob("/usr/share/locale/*/LC_MESSAGES/*.mo"))
TOOLS = [shutil.which(name) for name in ("msgunfmt", "msgfmt")]
# A msgstr line of msgunfmt's output and the string lines that continue it.
_MSGSTR = re.compile(r'^(msgstr(?:\[\d+\])?) ".*"\n(?:".*"\n)*', re.MULTILINE)
# The fuzzy flag translate_catalog adds: its own line, or before the entry's other flags.
_EMPTY_FORMS = re.compile(rb'(?:^msgstr\[\d+\] ""\n)+', re.MULTILINE)
_FUZZY_FLAG = re.compile(r"^#, fuzzy(?:\n|(, ))", re.MULTILINE)


class Copy:
    """A translator that returns each source text as its translation."""

    target_language = None

    def translations(self, texts, beam_size=4, num_return=1, progress=False, format_flags=None):
        return [[Translation(text, 0.0)] for text in texts]


@dataclasses.dataclass
class Tally:
    catalogs: int = 0
    entries: int = 0
    filled: int = 0
    refused: int = 0  # plural entries to fill and no rule for them, or a rule msgfmt refuses too
    failures: list = dataclasses.field(default_factory=list)


def run(*argv):
    return subprocess.run(argv, capture_output=True)


def emptied(text):
    """msgunfmt's text with every translation but the header's emptied (its layout is regular:
    each msgstr keyword starts a line, its strings follow one per line)."""
    header, _, body = text.partition("\n\n")
    return header + "\n\n" + _MSGSTR.sub(lambda m: f'{m.group(1)} ""\n', body) if body else text


def skeleton(data):
    """The text with each plural entry's empty forms as one line: a filled entry gets as many
    forms as the header's nplurals, where the catalog may have had fewer."""
    return _EMPTY_FORMS.sub(b'msgstr[] ""\n', data)


def after_header(data):
    return data.split(b"\n\n", 1)[1] if b"\n\n" in data else b""


def fill_and_verify(path, name):
    """Translates the catalog at `path` with `Copy` into `name`: (a failure's text or None, the
    entries filled, the catalog read). Without fills the output must be the input byte for byte; with them,
    the fills undone (msgattrib) must be the input as msgcat writes it, after the header."""
    original = open(path, "rb").read()
    catalog = read_po(path)
    try:
        report = translate_catalog(catalog, Copy())
    except ValueError as error:
        if "has no built-in Plural-Forms" in str(error):
            return "no plural rule", 0, catalog
        if run("msgfmt", "--check", "-o", os.devnull, path).returncode:
            return "refused, as msgfmt --check refuses it", 0, catalog
        return f"{error} (msgfmt --check accepts {path})", 0, catalog
    write_catalog(catalog, name)
    compiled = run("msgfmt", "--check-format", "--use-fuzzy", "-o", os.devnull, name)
    if compiled.returncode:
        return f"msgfmt refuses {name}: {compiled.stderr[-300:]!r}", 0, catalog
    written = open(name, "rb").read()
    if report.translated == 0 and report.charset_changed_to is None:
        same = written == original
    else:  # every byte but the fills' msgstr and fuzzy flags is the input's
        unfilled = emptied(_FUZZY_FLAG.sub(lambda m: "#, " if m.group(1) else "",
                                           written.decode(catalog.encoding)))
        same = (skeleton(after_header(unfilled.encode(catalog.encoding)))
                == skeleton(after_header(original)))
    return (None if same else f"{name} differs from {path}"), report.translated, catalog


def check(mo, folder):
    """(entries, filled, refused (no plural rule, or msgfmt --check refuses it too), failure or
    None) for one catalog."""
    name = os.path.join(folder, os.path.basename(os.path.dirname(os.path.dirname(mo))) + "-"
                        + os.path.basename(mo)[:-3])
    try:
        return _check(mo, name)
    finally:  # 3,000 catalogs' files would take a gigabyte
        for suffix in (".po", ".out.po", ".empty.po", ".filled.po"):
            if os.path.exists(name + suffix):
                os.unlink(name + suffix)


def _check(mo, name):
    decompiled = run("msgunfmt", mo, "-o", name + ".po")
    if decompiled.returncode:
        return 0, 0, 0, f"{mo}: msgunfmt failed: {decompiled.stderr[-200:]!r}"
    if not os.path.exists(name + ".po"):  # msgunfmt writes nothing for a catalog without entries
        open(name + ".po", "wb").close()
    failure, filled, catalog = fill_and_verify(name + ".po", name + ".out.po")
    entries = sum(not entry.is_header for entry in catalog.entries)
    if failure is None:
        text = open(name + ".po", "rb").read().decode(catalog.encoding)
        with open(name + ".empty.po", "wb") as file:
            file.write(emptied(text).encode(catalog.encoding))
        failure, filled_too, _ = fill_and_verify(name + ".empty.po", name + ".filled.po")
        filled += filled_too
    if failure in ("no plural rule", "refused, as msgfmt --check refuses it"):
        return entries, filled, 1, None
    return entries, filled, 0, failure and f"{mo}: {failure}"


@pytest.mark.slow
@pytest.mark.skipif(not CATALOGS or not all(TOOLS), reason="needs compiled catalogs and gettext")
def test_every_catalog_of_the_machine_round_trips(tmp_path, record_property):
    tally = Tally()
    # Threads: most of the time is gettext's processes, which run beside the parsing.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2 * (os.cpu_count() or 2)) as pool:
        for entries, filled, refused, failure in pool.map(lambda mo: check(mo, tmp_path), CATALOGS):
            tally.catalogs += 1
            tally.entries += entries
            tally.filled += filled
            tally.refused += refused
            if failure:
                tally.failures.append(failure)
    summary = (f"{tally.catalogs} catalogs ({tally.entries} entries) of /usr/share/locale round-"
               f"tripped byte for byte; {tally.filled} entries filled and accepted by msgfmt "
               f"--check-format; {tally.refused} refused (no plural rule for an emptied catalog, or "
               f"msgfmt --check refuses the input too); {len(tally.failures)} failures")
    record_property("summary", summary)
    assert tally.catalogs == len(CATALOGS) and tally.entries > 0
    assert not tally.failures, "\n".join(tally.failures[:20])
