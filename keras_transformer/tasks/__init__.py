"""Task models: a trained model and its tokenizer, taking and returning text.

- `Translator`: an `EncoderDecoder` with its shared tokenizer; `translate`
  strings, keeping program messages' layout and placeholders.
- `TextGenerator`: a `DecoderOnly` with its tokenizer; `generate` from prompts.
- `Translation`: one translation with its score and what needs review.
- `adapt_translator`: fine-tune a `Translator` on existing translations with LoRA;
  `merged_translator`: the result as a plain `Translator` to save and serve.

Each saves to one `.keras` file (the tokenizer's vocabulary inside) and loads
with `keras.saving.load_model`.
"""

from keras_transformer.tasks.adaptation import Adaptation
from keras_transformer.tasks.adaptation import adapt_translator
from keras_transformer.tasks.adaptation import merged_translator
from keras_transformer.tasks.text_generator import TextGenerator
from keras_transformer.tasks.translation import Translation
from keras_transformer.tasks.translator import Translator

__all__ = ["Adaptation", "TextGenerator", "Translation", "Translator", "adapt_translator",
           "merged_translator"]
