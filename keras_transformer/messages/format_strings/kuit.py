"""KDE KUIT markup, checked as gettext 0.21's format-kde-kuit.c checks it in msgfmt: the
string, its `&`s escaped unless they start a character reference, must be well-formed XML
inside an element, as libxml2 (the library msgfmt links) reads it; msgfmt gives libxml2's
last error. The directives are KDE's, read by the caller."""

import ctypes
import ctypes.util
import functools

from keras_transformer.messages import charsets

_NAMESPACE = "https://www.gnu.org/s/gettext/kde"
_OPTIONS = 1 << 11 | 1 << 6 | 1 << 5 | 1 << 8  # XML_PARSE_NONET, NOWARNING, NOERROR, NOBLANKS


class _XmlError(ctypes.Structure):
    _fields_ = [("domain", ctypes.c_int), ("code", ctypes.c_int), ("message", ctypes.c_char_p)]


@functools.lru_cache(maxsize=None)
def _libxml2():
    """libxml2 through ctypes, or None where it cannot be loaded (then markup is not checked)."""
    name = ctypes.util.find_library("xml2")
    try:
        library = ctypes.CDLL(name or "libxml2.so.2")
    except OSError:
        return None
    library.xmlReadMemory.restype = ctypes.c_void_p
    library.xmlReadMemory.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                                      ctypes.c_char_p, ctypes.c_int]
    library.xmlFreeDoc.argtypes = [ctypes.c_void_p]
    library.xmlGetLastError.restype = ctypes.POINTER(_XmlError)
    return library


def _is_reference(text, at):
    """format-kde-kuit.c's is_reference of the `&` at `at`, whose scan runs to the string's end:
    `&#x` hex digits or `&#` decimal digits followed by `;`. (An entity name never qualifies:
    its scan goes on past the `;`, which is no name character.)"""
    if text[at + 1:at + 2] != "#":
        return False
    digits = "0123456789abcdefABCDEF" if text[at + 2:at + 3] == "x" else "0123456789"
    start = at + 2 + (digits != "0123456789")
    if digits == "0123456789" and not text[start:start + 1].isdigit():
        return False
    end = start + (digits == "0123456789")
    while end < len(text) and text[end] in digits and text[end].isascii():
        end += 1
    return end < len(text) and text[end] == ";"


def kuit_problem(text, encoding="utf-8"):
    """msgfmt's reason for refusing the markup of `text`, or None; libxml2 reads its bytes in
    `encoding` (the catalog's) as UTF-8, as msgfmt gives them to it."""
    library = _libxml2()
    if library is None:
        return None
    body = "".join("&" if char == "&" and _is_reference(text, at) else "&amp;" if char == "&" else char
                   for at, char in enumerate(text))
    document = charsets.encode(f'<gt:kuit xmlns:gt="{_NAMESPACE}">{body}</gt:kuit>', encoding,
                               "surrogateescape")
    parsed = library.xmlReadMemory(document, len(document), b"", None, _OPTIONS)
    if parsed:
        library.xmlFreeDoc(parsed)
        return None
    message = library.xmlGetLastError().contents.message or b""
    return "error while parsing: " + message.decode("utf-8", "replace").rstrip("\n")
