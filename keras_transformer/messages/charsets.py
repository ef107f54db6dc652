r"""Decoding and encoding a catalog's text in the charset its header declares.

GNU gettext's `msgfmt` converts with the C library's `iconv`, so it reads catalogs in charsets
Python has no codec for (gettext's portable GEORGIAN-PS, VISCII and EUC-TW among them). A
`Charset` decodes and encodes with Python's codec when Python has one (exactly as
`bytes.decode` and `str.encode` do), else with glibc's `iconv` through ctypes: no codec is
registered with Python (`codecs.register` would change every `str.encode` in the process) and
no process is started per string. `lookup` gives None for a charset neither knows, and on a C
library without `iconv` for every charset Python lacks.

Both directions take the error handlers `"strict"` (raise `UnicodeDecodeError` or
`UnicodeEncodeError`, with the offending range, as Python's codecs do) and
`"surrogateescape"` (a byte that does not decode becomes the surrogate U+DC80..U+DCFF, and
such a surrogate encodes back to its byte).

Example:
>>> lookup("ISO-8859-1").name
'iso8859-1'
>>> decode(b"caf\xe9", "ISO-8859-1")
'café'
>>> lookup("NO-SUCH-CHARSET") is None
True
"""

import codecs
import ctypes
import ctypes.util
import errno
import functools
import re

__all__ = ["Charset", "decode", "encode", "lookup", "spellings"]

_UTF32 = b"UTF-32LE"  # iconv's side of the conversion: 4 bytes a character, no byte-order mark
_CHUNK = 1 << 20  # the most bytes of output one iconv call writes
_ESCAPED = re.compile("[\udc80-\udcff]+")  # bytes kept as surrogate escapes
_ERRORS = ("strict", "surrogateescape")
_ICONV_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]*")
"""The names asked of iconv: glibc normalizes others (" ", ",", "//TRANSLIT" suffixes) into
names that mean something else, the empty one the locale's charset."""
_PLATFORM_NAMES = frozenset({"WCHAR_T", "INTERNAL", "UNICODE", "UCS-4", "UCS4", "UCS-2", "UCS2"})
"""glibc's names of its internal charset and of charsets whose byte order is the machine's
(or read from a byte-order mark): not a catalog's charset; unknown, as msgfmt leaves a
charset it does not know."""


class _Iconv:
    """glibc's iconv_open, iconv and iconv_close, bound with ctypes."""

    def __init__(self, library):
        self.open = library.iconv_open
        self.open.restype, self.open.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
        self.convert = library.iconv
        self.convert.restype = ctypes.c_size_t
        self.convert.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                 ctypes.POINTER(ctypes.c_size_t),
                                 ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
        self.close = library.iconv_close
        self.close.restype, self.close.argtypes = ctypes.c_int, [ctypes.c_void_p]

    def descriptor(self, to, source):
        """An iconv_t converting `source` to `to` (bytes names), or None when iconv lacks it."""
        handle = self.open(to, source)
        if handle is None or handle == ctypes.c_void_p(-1).value:
            return None
        return handle

    def run(self, handle, data, on_error):
        """Converts `data` with `handle`; returns the output's pieces. `on_error(errno, offset)`
        is called where iconv stops at an invalid (EILSEQ) or incomplete (EINVAL) sequence
        starting at byte `offset` of `data`; it raises, or returns the output to put there and
        how many bytes to skip. One output buffer serves every call (a larger one when
        nothing fits in it)."""
        source = ctypes.create_string_buffer(bytes(data), len(data) or 1)
        in_pointer, in_left = ctypes.c_void_p(ctypes.addressof(source)), ctypes.c_size_t(len(data))
        size, pieces, failed = min(4 * len(data) + 64, _CHUNK), [], ctypes.c_size_t(-1).value
        target = ctypes.create_string_buffer(size)
        out_pointer, out_left = ctypes.c_void_p(), ctypes.c_size_t()
        while True:
            out_pointer.value, out_left.value = ctypes.addressof(target), size
            flushing = in_left.value == 0  # then iconv writes the shift state's reset, if any
            ctypes.set_errno(0)
            result = self.convert(handle, None if flushing else ctypes.byref(in_pointer),
                                  None if flushing else ctypes.byref(in_left),
                                  ctypes.byref(out_pointer), ctypes.byref(out_left))
            code = ctypes.get_errno()
            if out_left.value != size:
                pieces.append(ctypes.string_at(target, size - out_left.value))
            if result != failed:
                if flushing:
                    return pieces
                continue
            if code == errno.E2BIG:  # the output so far is kept: go on, in a larger buffer
                if out_left.value == size:  # when nothing fit
                    size *= 2
                    target = ctypes.create_string_buffer(size)
            elif code in (errno.EILSEQ, errno.EINVAL) and not flushing:
                offset = len(data) - in_left.value
                output, skip = on_error(code, offset)
                pieces.append(output)
                in_pointer.value += skip
                in_left.value -= skip
            else:
                raise OSError(code, f"iconv failed: {errno.errorcode.get(code, code)}")


_LONGEST_SEQUENCE = 8
"""More bytes than any of glibc's charsets reads for one character: where a byte that iconv
refuses repeats, each of its copies but the last ones starts the same bytes, in the same
shift state, and is refused alike."""


@functools.lru_cache(maxsize=256)
def _repeats(byte):
    """A pattern matching a run of the byte `byte`."""
    return re.compile(re.escape(bytes([byte])) + b"+")


@functools.lru_cache(maxsize=None)
def _iconv():
    """The C library's iconv, or None where it has none (or ctypes cannot load it)."""
    try:
        name = ctypes.util.find_library("c")
        library = ctypes.CDLL(name, use_errno=True)
        return _Iconv(library)
    except (OSError, AttributeError, TypeError):
        return None


class Charset:
    """A charset a catalog can be written in: Python's codec of it, or glibc's iconv.

    Build one with `lookup`.

    Args:
        name: Python's name of its codec (`"iso8859-1"`), or the name iconv
            knows it by as the catalog spells it, upper-cased (`"EUC-TW"`).
        codec: Python's codec name, or None when iconv converts.

    Example:
    >>> lookup("UTF-8").encode("é"), lookup("utf8").name
    (b'\\xc3\\xa9', 'utf-8')
    """

    def __init__(self, name, codec=None):
        self.name, self.codec = name, codec

    def __repr__(self):
        return f"Charset({self.name!r}, via={'python' if self.codec else 'iconv'})"

    def decode(self, data, errors="strict"):
        r"""The text of `data`, as `bytes.decode` gives it.

        Args:
            data: the bytes.
            errors: `"strict"` or `"surrogateescape"`.

        Returns:
            A `str`.

        Raises:
            UnicodeDecodeError: (strict) a byte sequence is invalid or
                incomplete; its `start` is where it begins.
            ValueError: another `errors`.

        Example:
        >>> lookup("ASCII").decode(b"a\xffb", "surrogateescape")
        'a\udcffb'
        """
        if self.codec is not None:
            return bytes(data).decode(self.codec, errors)
        _check_errors(errors)
        data = bytes(data)

        def on_error(code, offset):
            if errors == "strict":
                invalid = code == errno.EILSEQ
                raise UnicodeDecodeError(
                    self.name, data, offset, offset + 1 if invalid else len(data),
                    "invalid multibyte sequence" if invalid else "incomplete multibyte sequence")
            # A run of one refused byte is escaped at once, up to its last bytes (their
            # sequences end after it), rather than byte by byte.
            run = _repeats(data[offset]).match(data, offset).end() - offset
            skip = max(1, run - _LONGEST_SEQUENCE)
            return (chr(0xDC00 + data[offset]) * skip).encode("utf-32-le", "surrogatepass"), skip

        handle = self._descriptor(_UTF32, self.name.encode("ascii"))
        try:
            pieces = _iconv().run(handle, data, on_error)
        finally:
            _iconv().close(handle)
        return b"".join(pieces).decode("utf-32-le", "surrogatepass")

    def encode(self, text, errors="strict"):
        r"""The bytes of `text`, as `str.encode` gives them.

        Args:
            text: the text.
            errors: `"strict"` or `"surrogateescape"` (a surrogate escape
                U+DC80..U+DCFF becomes its byte).

        Returns:
            `bytes`.

        Raises:
            UnicodeEncodeError: a character the charset cannot represent (or,
                with strict, a surrogate escape); its `start` is where it is.
            ValueError: another `errors`.

        Example:
        >>> lookup("ISO-8859-1").encode("caf\udce9", "surrogateescape")
        b'caf\xe9'
        """
        if self.codec is not None:
            return text.encode(self.codec, errors)
        _check_errors(errors)
        runs, position = [], 0  # (start, text to convert or None, escaped bytes)
        for match in (_ESCAPED.finditer(text) if errors == "surrogateescape" else ()):
            runs.append((position, text[position:match.start()], b""))
            runs.append((match.start(), None, bytes(ord(c) - 0xDC00 for c in match.group())))
            position = match.end()
        runs.append((position, text[position:], b""))
        out = []
        handle = self._descriptor(self.name.encode("ascii"), _UTF32)  # one for the whole text
        try:
            for start, part, raw in runs:
                if part is None:
                    out.append(raw)
                elif part:
                    out += self._encode_run(handle, text, start, part)
        finally:
            _iconv().close(handle)
        return b"".join(out)

    def _encode_run(self, handle, text, start, part):
        surrogate = re.search("[\ud800-\udfff]", part)
        if surrogate:
            at = start + surrogate.start()
            raise UnicodeEncodeError(self.name, text, at, at + 1, "surrogates not allowed")

        def on_error(code, offset):
            at = start + offset // 4
            raise UnicodeEncodeError(self.name, text, at, at + 1,
                                     f"the character is not in {self.name}")

        return _iconv().run(handle, part.encode("utf-32-le"), on_error)  # and the state's reset

    def _descriptor(self, to, source):
        handle = _iconv().descriptor(to, source)
        if handle is None:
            raise LookupError(f"iconv cannot convert {self.name} any more")
        return handle


def _check_errors(errors):
    if errors not in _ERRORS:
        raise ValueError(f"errors must be one of {_ERRORS} for an iconv charset, got {errors!r}")


@functools.lru_cache(maxsize=256)
def lookup(charset):
    """The `Charset` of a name: Python's codec when it has one, else glibc's iconv.

    Args:
        charset: the name, as a catalog's header spells it (any case).

    Returns:
        A `Charset`, or None when neither Python nor the C library's iconv
        knows it (or the C library has no iconv). Only names of letters,
        digits and `_.:+-` are asked of iconv, and not glibc's internal and
        machine-dependent ones (`WCHAR_T`, `UNICODE`, `UCS-4`, ...).

    Example:
    >>> lookup("VISCII").decode(b"\\xc4") if lookup("VISCII") else "\\u1ea2"
    'Ả'
    """
    try:
        return Charset(codecs.lookup(charset).name, codec=codecs.lookup(charset).name)
    except (LookupError, TypeError, ValueError):
        pass
    iconv = _iconv()
    if iconv is None or not isinstance(charset, str) or not _ICONV_NAME.fullmatch(charset):
        return None
    name = charset.upper()
    if name in _PLATFORM_NAMES:
        return None
    handles = [iconv.descriptor(_UTF32, name.encode()), iconv.descriptor(name.encode(), _UTF32)]
    for handle in handles:
        if handle is not None:
            iconv.close(handle)
    return Charset(name) if None not in handles else None


def decode(data, charset, errors="strict"):
    r"""`data` decoded in `charset` (see `Charset.decode`).

    Args:
        data: the bytes.
        charset: the charset's name (Python's codec or one iconv knows).
        errors: `"strict"` or `"surrogateescape"`.

    Returns:
        A `str`.

    Raises:
        LookupError: neither Python nor iconv knows `charset`.
        UnicodeDecodeError: (strict) bytes `charset` cannot decode.

    Example:
    >>> decode(b"\xc3\xa9", "UTF-8")
    'é'
    """
    return _required(charset).decode(data, errors)


def encode(text, charset, errors="strict"):
    r"""`text` encoded in `charset` (see `Charset.encode`).

    Args:
        text: the text.
        charset: the charset's name (Python's codec or one iconv knows).
        errors: `"strict"` or `"surrogateescape"`.

    Returns:
        `bytes`.

    Raises:
        LookupError: neither Python nor iconv knows `charset`.
        UnicodeEncodeError: a character `charset` cannot represent.

    Example:
    >>> encode("é", "ISO-8859-1")
    b'\xe9'
    """
    return _required(charset).encode(text, errors)


def spellings(text, data, charset):
    r"""The characters `data` spells otherwise than `encode` writes them, which a charset with
    two spellings of a character needs to write back as they were (EUC-TW spells a character
    of CNS plane 1 in 2 bytes, or in 4 after SS2 0x8E 0xA1; iconv writes 2).

    Args:
        text: `data` decoded in `charset` (`"surrogateescape"` where bytes did not decode).
        data: the bytes.
        charset: the charset's name.

    Returns:
        {offset in `text`: the character's bytes in `data`}; empty when `text` encodes back
        to `data`, or when its characters do not align with the bytes one by one (a byte
        sequence decoded to two characters: nothing is known to keep).

    Example:
    >>> spellings("a\u4e00", b"a\xc4\xa1", "UTF-8")
    {}
    """
    if encode(text, charset, "surrogateescape") == data:
        return {}
    found, at, written = {}, 0, {}
    for offset, char in enumerate(text):
        if char not in written:
            written[char] = encode(char, charset, "surrogateescape")
        if data.startswith(written[char], at):
            at += len(written[char])
            continue
        size = next((size for size in range(1, 9)
                     if decode(data[at:at + size], charset, "surrogateescape") == char), None)
        if size is None:
            return {}
        found[offset], at = data[at:at + size], at + size
    return found if at == len(data) else {}


def _required(charset):
    found = lookup(charset)
    if found is None:
        raise LookupError(f"unknown charset: {charset}")
    return found
