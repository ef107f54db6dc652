"""The special token ids of our SentencePiece vocabularies, written once.

`keras_transformer.data`'s tokenizers put them at the first ids (keras-hub's
layout), and `EncoderDecoder`'s defaults use them, so a translator trained on
`kt.data` knows where its targets start and end:

| id | token |
|---|---|
| 0 | padding (`PAD_ID`, the models' `pad_id`) |
| 1 | unknown (`UNK_ID`) |
| 2 | start of a target (`START_ID`, the decoder's first input) |
| 3 | end of a sequence (`END_ID`, the stop token) |

GPT-2's byte-level vocabulary has none of these but `<|endoftext|>` (50256),
its end id; the GPT presets have no padding id.
"""

PAD_ID = 0
"""Padding: masks derive from it, the loss ignores it, it is never generated."""
UNK_ID = 1
"""A piece outside the vocabulary."""
START_ID = 2
"""Starts every target: the decoder's first input (`start_id`)."""
END_ID = 3
"""Ends every source and target: the stop token (`end_id`)."""
