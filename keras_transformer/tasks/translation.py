"""What a translator returns for one text: the text, its score, and what to review."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Translation:
    """One translation of one text.

    Args:
        text: the translation.
        score: the search's score (summed over the text's segments): the
            log-probability divided by the GNMT length penalty, plus the
            coverage penalty when `beta > 0`, with beam search (higher is
            better); NaN with greedy search, which does not score.
        notes: why a person should review it before it counts as good, e.g.
            `"placeholders repaired"`; empty when nothing was changed after
            decoding.

    Example:
    >>> Translation("Datei öffnen", -1.25).clean
    True
    >>> Translation("%s öffnen", -3.5, notes=("placeholders repaired",)).clean
    False
    """

    text: str
    score: float
    notes: tuple = ()

    @property
    def clean(self):
        """True when the translation is the model's own output, unchanged after decoding."""
        return not self.notes
