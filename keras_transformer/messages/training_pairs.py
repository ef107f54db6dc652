"""What a `Translator` learns from: message pairs cut and protected as it translates them.

A `Translator` translates each piece of a message's layout separately, with
its placeholders replaced by slot symbols (`segments`, `placeholders`). A
model trained on whole messages with literal placeholders sees something else
at inference; `translation_pairs` gives it the same thing: a pair whose two
sides have the same number of pieces (the usual case: translators keep the
layout) becomes one pair per piece, any other pair stays whole, and every
side is protected with the source's slots.
"""

from keras_transformer.messages.placeholders import protect_pair
from keras_transformer.messages.segments import split_message


def piece_pairs(source, target):
    """`(source piece, target piece)` pairs of one message pair, before protection.

    Args:
        source: an English message.
        target: its translation.

    Returns:
        One pair per piece when both sides have as many layout pieces, else the
        whole pair with its outer white space stripped.

    Example:
    >>> piece_pairs("  -a, --all   show all\\n", "  -a, --all   alle zeigen\\n")
    [('-a, --all', '-a, --all'), ('show all', 'alle zeigen')]
    >>> piece_pairs("Open\\nthe file", "Datei öffnen")  # layouts differ: the whole pair
    [('Open\\nthe file', 'Datei öffnen')]
    """
    source_pieces = split_message(source).pieces
    target_pieces = split_message(target).pieces
    if len(source_pieces) == len(target_pieces):
        return list(zip(source_pieces, target_pieces))
    return [(source.strip(), target.strip())]


def translation_pairs(pairs):
    """Unique protected piece pairs of message pairs, in first-seen order.

    Args:
        pairs: `(English message, translation)` pairs (e.g. from
            `keras_transformer.data.load_gettext_pairs`).

    Returns:
        A list of `(source, target)` strings to tokenize and train on, with a
        tokenizer trained with `placeholder_slots=True`.

    Example:
    >>> translation_pairs([("Copy %s?\\n", "%s kopieren?\\n"), ("  Quit", "  Beenden")])
    [('Copy \\ue000?', '\\ue000 kopieren?'), ('Quit', 'Beenden')]
    """
    found = {}
    for source, target in pairs:
        for piece in piece_pairs(source, target):
            if piece[0] and piece[1]:
                found.setdefault(protect_pair(*piece), None)
    return list(found)
