"""mkdocs hook: the API reference pages, generated from the package's `__all__`.

Every module named in `keras_transformer.__all__` gets one page listing each
name of its own `__all__` (rendered by mkdocstrings from the docstrings);
names exported at the top level are documented where they are defined and
linked from the overview. A new subpackage therefore appears in the reference
and in the navigation as soon as it is added to `keras_transformer.__all__`,
and a module without `__all__` stops the build.

`__all__` is read statically with griffe (the same reader mkdocstrings uses),
so building the docs imports no Keras backend. `api_pages()` is what the
hook writes; tests/test_docs.py checks it against the imported package.
"""

import dataclasses
import os

import logging

import griffe
from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.api_reference")
PACKAGE = "keras_transformer"
API_DIR = "api"
NAV_TITLE = "API reference"
_PAGES = []  # what on_config generated, for on_files
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclasses.dataclass
class Page:
    """One generated page: its file, title, intro text and documented objects."""

    src_uri: str
    title: str
    intro: str
    identifiers: list  # dotted paths rendered with `::: identifier`
    links: list = dataclasses.field(default_factory=list)  # (label, href) lines


def load_package(package=PACKAGE, search_paths=(ROOT,)):
    """The package as griffe sees it (static analysis, nothing imported)."""
    return griffe.load(package, search_paths=list(search_paths))


def _exports(module):
    if module.exports is None:
        raise ValueError(
            f"{module.path} is public (it is in {PACKAGE}.__all__) but defines no "
            "__all__; list its public names there so the API reference can show them."
        )
    return [name if isinstance(name, str) else name.name for name in module.exports]


def _first_line(obj):
    docstring = obj.docstring.value if obj.docstring else ""
    return docstring.strip().splitlines()[0] if docstring.strip() else ""


def _target(member):
    """Dotted path where `member` is defined, or None when griffe cannot find it.

    griffe reads Python statically and skips some definitions (for example
    tuple assignments such as `A, B = 0, 1`); such names cannot be rendered.
    """
    try:
        return member.final_target.path if member.is_alias else member.path
    except griffe.AliasResolutionError:
        return None


def api_pages(package=PACKAGE, search_paths=(ROOT,), unreadable=None):
    """The overview page and one page per public module, in `__all__` order.

    Public names griffe cannot read are left out and appended to `unreadable`
    (a list) when one is given; tests/test_docs.py fails on them.
    """
    _unreadable = [] if unreadable is None else unreadable
    root = load_package(package, search_paths)
    modules, top_level = [], []
    for name in _exports(root):
        (modules if root[name].is_module else top_level).append(name)

    pages, documented = [], {}
    for name in modules:
        module = root[name]
        identifiers = []
        for member_name in _exports(module):
            identifier = f"{module.path}.{member_name}"
            target = _target(module[member_name])
            if target is None:
                _unreadable.append(identifier)
                continue
            identifiers.append(identifier)
            documented[target] = f"{name}.md#{identifier}"
        pages.append(
            Page(
                src_uri=f"{API_DIR}/{name}.md",
                title=module.path,
                intro=(
                    f"# `{module.path}`\n\n::: {module.path}\n    options:\n"
                    "      members: false\n      show_root_heading: false\n"
                ),
                identifiers=identifiers,
            )
        )

    links, own = [], []
    for name in top_level:
        target = _target(root[name])
        if target is None:
            _unreadable.append(f"{package}.{name}")
        elif target in documented:
            links.append((f"{package}.{name}", documented[target]))
        else:
            own.append(f"{package}.{name}")
    links += [(f"{package}.{name}", f"{name}.md") for name in modules]
    overview = Page(
        src_uri=f"{API_DIR}/index.md",
        title="Overview",
        intro=(
            f"# API reference\n\nGenerated from the docstrings of every name in "
            f"`{package}.__all__` and in the `__all__` of each public subpackage. "
            "Every example on these pages runs as a doctest in `make test`.\n\n"
            f"::: {package}\n    options:\n      members: false\n      show_root_heading: false\n"
        ),
        identifiers=own,
        links=links,
    )
    return [overview] + pages


def render(page):
    """Markdown of a generated page."""
    lines = [page.intro]
    if page.links:
        lines.append("## Public names\n")
        lines += [f"- [`{label}`]({href})" for label, href in page.links]
        lines.append("")
    lines += [f"::: {identifier}\n" for identifier in page.identifiers]
    return "\n".join(lines)


def on_config(config):
    """Puts the generated pages under the "API reference" entry of `nav`."""
    unreadable = []
    pages = _PAGES[:] = api_pages(unreadable=unreadable)
    if unreadable:
        log.info(
            "API reference: griffe cannot read these public names, so they are not "
            "rendered (define each on its own line): %s", ", ".join(unreadable)
        )
    entries = [{page.title: page.src_uri} for page in pages]
    for index, item in enumerate(config["nav"] or []):
        if isinstance(item, dict) and NAV_TITLE in item:
            config["nav"][index] = {NAV_TITLE: entries}
            break
    else:
        raise ValueError(f"mkdocs.yml nav needs an entry titled {NAV_TITLE!r}.")
    return config


def on_files(files, config):
    """Adds the generated Markdown files to the build."""
    for page in _PAGES:
        files.append(File.generated(config, page.src_uri, content=render(page)))
    return files
