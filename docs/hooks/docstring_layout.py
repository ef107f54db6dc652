"""griffe extension: renders the library's plain-text docstrings as Markdown.

The docstrings are written to read well in `help()` and to run as doctests:
`Example:` is followed by an unindented `>>>` session, `Call arguments:` lists
`name: description` lines, and bullet lists follow a colon without a blank
line. For the site, this extension (listed under mkdocstrings' `extensions`
in mkdocs.yml) rewrites each docstring before it is parsed:

* the session after `Example:`/`Examples:` is indented under `Examples:`, so
  griffe's Google parser makes it a highlighted code block instead of nested
  quotes;
* the lines of a `Call arguments:` block become a Markdown list;
* a bullet list indented under a line ending in `:` is dedented and set apart
  by blank lines, so Markdown sees a list rather than one run-on paragraph.

The source docstrings are left as they are.
"""

import re

import griffe

_EXAMPLE_HEADER = re.compile(r"^Examples?:\s*$")
_SECTION_HEADER = re.compile(r"^[A-Za-z][\w -]*:\s*$")  # what griffe reads as a section
_CALL_ARGUMENTS = "Call arguments:"
_ARGUMENT_LINE = re.compile(r"^(\*{0,2}\w+): (.*)$")
_BULLET = re.compile(r"^\s*[*-] ")


def _indent(line):
    return len(line) - len(line.lstrip(" "))


def _block(lines, start):
    """End (exclusive) of the indented block starting at `start` (blank lines kept inside)."""
    end = start
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > 0):
        end += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return end


def _argument_list(block):
    """`name: text` lines (continuations indented further) -> Markdown list lines."""
    base = min(_indent(line) for line in block if line.strip())
    out = []
    for line in block:
        text = line[base:] if line.strip() else ""
        match = _ARGUMENT_LINE.match(text)
        if match and _indent(line) == base:
            out.append(f"{' ' * base}- `{match.group(1)}`: {match.group(2)}")
        elif text:
            out.append(f"{' ' * (base + 2)}{text.strip()}")
    return out


def relayout(text):
    """The docstring `text` with the three rewrites of the module docstring."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if _EXAMPLE_HEADER.match(line) and following.lstrip().startswith(">>>") and not _indent(following):
            out.append("Examples:")  # griffe's section name; "Example:" is an admonition
            i += 1
            while i < len(lines) and not (
                _SECTION_HEADER.match(lines[i]) and not lines[i].startswith(">>>")
            ):
                out.append(f"    {lines[i]}" if lines[i].strip() else "")
                i += 1
            continue
        if line.strip() == _CALL_ARGUMENTS and not _indent(line) and _indent(following):
            end = _block(lines, i + 1)
            out.append(line)
            out += _argument_list(lines[i + 1:end])
            i = end
            continue
        if (
            line.rstrip().endswith(":")
            and not _indent(line)
            and not _SECTION_HEADER.match(line)
            and _indent(following)
            and _BULLET.match(following)
        ):
            end = _block(lines, i + 1)
            base = _indent(following)
            out += [line, ""]
            out += [block_line[base:] if block_line.strip() else "" for block_line in lines[i + 1:end]]
            if end < len(lines) and lines[end].strip():
                out.append("")
            i = end
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class DocstringLayout(griffe.Extension):
    """Applies `relayout` to every docstring griffe loads."""

    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = relayout(obj.docstring.value)
