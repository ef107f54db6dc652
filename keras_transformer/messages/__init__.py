"""Program messages: machine translation of GNU gettext catalogs (`.po` files).

A program message is more than its words: two things in it must survive
translation exactly, whatever the model writes.

- `placeholders`: `%s`, `%(count)d`, `{0}`, `${FILE}` are filled in by the
  program. `msgfmt --check-format` rejects a catalog whose translations lose,
  invent or reorder them (c-format, python-format, python-brace-format), and
  a wrong one crashes the program or prints garbage. A SentencePiece tokenizer
  splits them into pieces the model rewrites, so `protect` turns each into one
  private-use character that NFKC normalization keeps, `restore` turns them
  back, and `repair` makes any output `matches` the source. Which kinds a text
  holds is its format language, a catalog entry's flag (`c-format`, ...).
- `segments`: leading and trailing white space, newlines and the columns of
  `--help` text are layout that translators keep and programs rely on, but
  SentencePiece's normalization folds white space away. `split_message` cuts
  a message into translatable pieces, `Layout.rebuild` puts the original
  white space back around the translated ones.

`placeholders` and `segments` use only the standard library.

- `po_file`: reads `.po` files as strictly as `msgfmt --check` (`read_po`,
  `parse_po`) and gives back every line it did not change, byte for byte.
- `charsets`: decodes and encodes a catalog's text in its declared charset,
  with Python's codec or, for one Python lacks (EUC-TW, VISCII, GEORGIAN-PS),
  with glibc's iconv as msgfmt does.
- `message_checks`: the checks `msgfmt --check` makes of each existing
  translation (directives of c-format, python-format, python-brace-format and
  sh-format entries as gettext compares them, newlines at both ends), in its
  words; `check_catalog` refuses a catalog that fails them.
- `plural_forms`: the standard Plural-Forms of languages and `PluralRule`,
  which evaluates a header's plural expression as gettext does.
- `catalog_translation`: fills the untranslated entries of a catalog with a
  translator's output, flagged `fuzzy` for review (`translate_catalog`), and
  writes it atomically (`write_catalog`). The command line
  `keras-transformer translate-po` (`keras_transformer.cli`) runs both on a file.
"""

from keras_transformer.messages.catalog_translation import CatalogReport
from keras_transformer.messages.catalog_translation import catalog_problems
from keras_transformer.messages.catalog_translation import check_catalog
from keras_transformer.messages.catalog_translation import format_flag
from keras_transformer.messages.catalog_translation import translate_catalog
from keras_transformer.messages.catalog_translation import write_catalog
from keras_transformer.messages.fidelity import Fidelity
from keras_transformer.messages.fidelity import fidelity
from keras_transformer.messages.placeholders import FORMAT_FLAGS
from keras_transformer.messages.placeholders import PLACEHOLDER
from keras_transformer.messages.placeholders import SLOT_SYMBOLS
from keras_transformer.messages.placeholders import Protected
from keras_transformer.messages.placeholders import find_placeholders
from keras_transformer.messages.placeholders import is_ordered
from keras_transformer.messages.placeholders import matches
from keras_transformer.messages.placeholders import protect
from keras_transformer.messages.placeholders import protect_pair
from keras_transformer.messages.placeholders import repair
from keras_transformer.messages.placeholders import restore
from keras_transformer.messages.plural_forms import PLURAL_FORMS
from keras_transformer.messages.plural_forms import PluralRule
from keras_transformer.messages.plural_forms import plural_forms
from keras_transformer.messages.plural_forms import primary_subtag
from keras_transformer.messages.po_file import PoEntry
from keras_transformer.messages.po_file import PoFile
from keras_transformer.messages.po_file import PoSyntaxError
from keras_transformer.messages.po_file import parse_po
from keras_transformer.messages.po_file import read_po
from keras_transformer.messages.segments import Layout
from keras_transformer.messages.segments import outer_whitespace
from keras_transformer.messages.segments import split_message
from keras_transformer.messages.training_pairs import piece_pairs
from keras_transformer.messages.training_pairs import translation_pairs

__all__ = [
    "FORMAT_FLAGS",
    "PLACEHOLDER",
    "PLURAL_FORMS",
    "SLOT_SYMBOLS",
    "CatalogReport",
    "Fidelity",
    "Layout",
    "PluralRule",
    "PoEntry",
    "PoFile",
    "PoSyntaxError",
    "Protected",
    "catalog_problems",
    "check_catalog",
    "fidelity",
    "find_placeholders",
    "format_flag",
    "is_ordered",
    "matches",
    "outer_whitespace",
    "parse_po",
    "piece_pairs",
    "plural_forms",
    "primary_subtag",
    "protect",
    "protect_pair",
    "read_po",
    "repair",
    "restore",
    "split_message",
    "translation_pairs",
    "translate_catalog",
    "write_catalog",
]
