"""How faithful translations of program messages are: placeholders and outer white space."""

import dataclasses

from keras_transformer.messages.placeholders import find_placeholders
from keras_transformer.messages.placeholders import matches
from keras_transformer.messages.segments import outer_whitespace


@dataclasses.dataclass(frozen=True)
class Fidelity:
    """Counts of messages whose placeholders and outer white space survive translation.

    Args:
        placeholder_messages: sources with at least one placeholder.
        placeholders_kept: of those, translations that `placeholders.matches`
            (same placeholders, in number and in argument order).
        whitespace_messages: sources with leading or trailing white space.
        whitespace_kept: of those, translations with exactly the same outer
            white space.

    Example:
    >>> Fidelity(placeholder_messages=4, placeholders_kept=3, whitespace_messages=0,
    ...          whitespace_kept=0).placeholder_rate
    0.75
    """

    placeholder_messages: int
    placeholders_kept: int
    whitespace_messages: int
    whitespace_kept: int

    @property
    def placeholder_rate(self):
        """Share of messages with placeholders that kept them (1.0 when there are none)."""
        return self.placeholders_kept / max(1, self.placeholder_messages)

    @property
    def whitespace_rate(self):
        """Share of messages with outer white space that kept it (1.0 when there are none)."""
        return self.whitespace_kept / max(1, self.whitespace_messages)


def fidelity(sources, translations):
    """Placeholder and outer-white-space fidelity of `translations` of `sources`.

    Run it on human references too: their rates are the bar (translators
    sometimes drop a placeholder on purpose, e.g. in a singular form).

    Args:
        sources: the English messages.
        translations: one translation per source.

    Returns:
        A `Fidelity`.

    Example:
    >>> f = fidelity(["Open %s\\n", "  Quit"], ["%s öffnen\\n", "Beenden"])
    >>> (f.placeholders_kept, f.placeholder_messages), (f.whitespace_kept, f.whitespace_messages)
    ((1, 1), (1, 2))
    """
    if len(sources) != len(translations):
        raise ValueError(
            f"`translations` must have one item per source: received {len(translations)} "
            f"for {len(sources)} sources."
        )
    with_placeholders = [(s, t) for s, t in zip(sources, translations) if find_placeholders(s)]
    with_space = [(s, t) for s, t in zip(sources, translations)
                  if outer_whitespace(s) != ("", "")]
    return Fidelity(
        placeholder_messages=len(with_placeholders),
        placeholders_kept=sum(matches(s, t) for s, t in with_placeholders),
        whitespace_messages=len(with_space),
        whitespace_kept=sum(outer_whitespace(s) == outer_whitespace(t) for s, t in with_space),
    )
