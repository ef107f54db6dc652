"""Generation: the cached decode loop, samplers and beam search for both families.

Use it through `DecoderOnly.generate` and `EncoderDecoder.generate`.
"""

from keras_transformer.generation.beam_search import Hypotheses
from keras_transformer.generation.beam_search import coverage_penalty
from keras_transformer.generation.beam_search import length_penalty
from keras_transformer.generation.compiled import CompiledLoops
from keras_transformer.generation.decoding import compilations
from keras_transformer.generation.samplers import GREEDY
from keras_transformer.generation.samplers import Sampler
from keras_transformer.generation.settings import DecodeSettings

__all__ = ["GREEDY", "CompiledLoops", "DecodeSettings", "Hypotheses", "Sampler", "compilations",
           "coverage_penalty", "length_penalty"]
