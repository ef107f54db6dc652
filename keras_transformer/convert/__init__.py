"""Weights in and out of other implementations, with logits equal to 1e-5.

* `from_keras_hub_gpt2`: a keras-hub `GPT2Backbone` (or its preset folder) -> `DecoderOnly`.
* `from_hf_gpt2`: a Hugging Face GPT-2 `model.safetensors`, folder, state dict or
  model -> `DecoderOnly`; `save_hf_gpt2` / `hf_gpt2_state_dict` / `hf_gpt2_config`
  export a `DecoderOnly` back to GPT-2's format.
* `from_hf_llama`: a Hugging Face `LlamaForCausalLM` (model, folder, `model.safetensors`
  or state dict + config) -> `DecoderOnly` with RMSNorm, SwiGLU, RoPE and grouped-query
  attention; `save_hf_llama` / `hf_llama_state_dict` / `hf_llama_config` export one back.
* `from_torch_transformer`: `torch.nn.TransformerEncoder` + `TransformerDecoder`
  stacks and a shared embedding -> `EncoderDecoder`; `torch_key_padding_mask` and
  `torch_causal_mask` give torch's (True = blocked) masks for the same ids.

Name-by-name tables are in docs/conversion.md. torch, transformers, keras-hub and
safetensors are imported only inside the functions that need them.
"""

from keras_transformer.convert.hf_gpt2 import from_hf_gpt2
from keras_transformer.convert.hf_gpt2 import hf_gpt2_config
from keras_transformer.convert.hf_gpt2 import hf_gpt2_state_dict
from keras_transformer.convert.hf_gpt2 import save_hf_gpt2
from keras_transformer.convert.hf_llama import from_hf_llama
from keras_transformer.convert.hf_llama import hf_llama_config
from keras_transformer.convert.hf_llama import hf_llama_state_dict
from keras_transformer.convert.hf_llama import save_hf_llama
from keras_transformer.convert.keras_hub_gpt2 import from_keras_hub_gpt2
from keras_transformer.convert.torch_transformer import from_torch_transformer
from keras_transformer.convert.torch_transformer import torch_causal_mask
from keras_transformer.convert.torch_transformer import torch_key_padding_mask

__all__ = [
    "from_hf_gpt2",
    "from_hf_llama",
    "from_keras_hub_gpt2",
    "from_torch_transformer",
    "hf_gpt2_config",
    "hf_gpt2_state_dict",
    "hf_llama_config",
    "hf_llama_state_dict",
    "save_hf_gpt2",
    "save_hf_llama",
    "torch_causal_mask",
    "torch_key_padding_mask",
]
