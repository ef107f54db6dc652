"""Cached decoding computes exactly what repeated full forward passes compute."""

import keras
import numpy as np
import pytest
from decoding_reference import PAD
from decoding_reference import START
from decoding_reference import assert_outputs_vary
from decoding_reference import at_working_scale
from decoding_reference import full_pass
from decoding_reference import full_pass_greedy_decoder_only
from decoding_reference import full_pass_sampled_decoder_only
from decoding_reference import sampled_token
from keras import ops

import keras_transformer as kt
from keras_transformer.generation import Sampler
from keras_transformer.generation import compilations

VOCAB = 40


@pytest.mark.parametrize(
    "overrides",
    [
        dict(),  # GPT-2: pre-LN, learned positions
        dict(ln_position="post", position="sinusoidal", activation="relu"),
        dict(ln_position="post", position="learned"),
        dict(ln_position="pre", position="sinusoidal"),
        dict(attention_window=3),  # GPT-3: dense and banded layers alternate
        dict(attention_window=2, banded_layers="all"),
        # Positions made by attention, grouped-query attention, LLaMA's block:
        # the cached step rotates (or biases) at its absolute position.
        dict(position="rotary"),
        dict(position="rotary", ln_position="post", rotary_fraction=0.5),
        dict(position="alibi"),
        dict(position="alibi", ln_position="post", attention_window=3),
        dict(num_kv_heads=2, ln_position="post"),
        dict(num_kv_heads=2, position="rotary", norm="rms", feed_forward="swiglu",
             use_bias=False, qk_norm=True),
        dict(num_kv_heads=1, position="alibi", attention_window=2, banded_layers="all"),
        dict(num_kv_heads=1, position="rotary", attention_window=3, feed_forward="geglu"),
        # GPT-J's parallel block, then with Gemma 2's soft-capped scores (explicit and
        # blocked banded kernels, ring caches).
        dict(parallel_block=True),
        dict(parallel_block=True, attention_softcap=2.0, position="rotary",
             attention_window=3),
    ],
)
def test_decoder_only_cached_greedy_and_sampled_equal_full_passes(overrides):
    model = kt.DecoderOnly.from_preset(
        "gpt2_tiny", vocab_size=VOCAB, dropout=0.0, num_layers=3, pad_id=PAD, **overrides
    )
    at_working_scale(model)
    rng = np.random.default_rng(0)
    prompts = rng.integers(3, VOCAB, size=(3, 5))
    prompts[1, 3:] = PAD  # right padding
    prompts[2, :2] = PAD  # left padding
    out = model.generate(prompts, max_new_tokens=7)
    assert out.shape == (3, 12)
    reals = [[int(t) for t in prompt if t != PAD] for prompt in prompts]
    for row, real in enumerate(reals):
        assert out[row].tolist() == full_pass_greedy_decoder_only(model, real, 12 - len(real))
    # A random model's greedy output tends to repeat one token, which a position or cache
    # bug may leave unchanged; sampled tokens vary, and must match the full passes too.
    sampler = Sampler(top_k=10, seed=3)
    sampled = model.generate(prompts, max_new_tokens=7, sampler=sampler)
    expected = full_pass_sampled_decoder_only(model, reals, 12, sampler)
    assert sampled.tolist() == expected
    assert_outputs_vary([row[len(real):] for row, real in zip(expected, reals)])


def test_padding_mask_says_which_prompt_positions_are_real():
    """Without a padding id, `padding_mask` marks the prompts; id 0 is an ordinary token."""
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0)
    assert model.config.pad_id is None
    prompts = np.array([[0, 7, 0, 9], [5, 0, 6, 6], [8, 8, 0, 0]])
    mask = np.array([[1, 1, 1, 1], [0, 1, 1, 1], [1, 1, 0, 0]], bool)
    out = model.generate(prompts, max_new_tokens=4, padding_mask=mask)
    for row in range(3):
        real = prompts[row][mask[row]].tolist()
        assert out[row].tolist() == full_pass_greedy_decoder_only(model, real, 8 - len(real))
    assert out[0, :4].tolist() == [0, 7, 0, 9]  # every 0 of the prompt kept


def test_pad_inside_a_prompt_is_refused_not_dropped():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, pad_id=PAD)
    with pytest.raises(ValueError, match=r"rows \[1\] have padding \(pad_id=0\) between tokens"):
        model.generate(np.array([[5, 6, 7], [5, 0, 7]]), max_new_tokens=2)


def test_decoder_only_stop_ids_end_rows():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0)
    prompts = np.random.default_rng(1).integers(3, VOCAB, size=(4, 3))
    free = model.generate(prompts, max_new_tokens=6)
    stop = int(free[0, 4])  # a token row 0 emits at its second new position
    out = model.generate(prompts, max_new_tokens=6, stop_ids=(stop,))
    for row in range(4):
        # No padding id: a stopped row repeats its stop id.
        expected = full_pass_greedy_decoder_only(model, prompts[row].tolist(), 6, (stop,), stop)
        assert out[row].tolist() == expected
    first = 3 + free[0, 3:].tolist().index(stop)  # where row 0 first emits it
    assert out[0, first] == stop and (out[0, first + 1 :] == stop).all()


def test_end_id_is_the_default_stop():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0,
                                       tie_embeddings=False)
    prompts = np.random.default_rng(1).integers(3, VOCAB, size=(4, 3))
    free = model.generate(prompts, max_new_tokens=6)
    stop = int(free[0, 4])
    with_end = kt.DecoderOnly.from_config(dict(model.get_config(), end_id=stop))
    with_end.set_weights(model.get_weights())
    stopped = with_end.generate(prompts, max_new_tokens=6)
    np.testing.assert_array_equal(stopped, model.generate(prompts, max_new_tokens=6,
                                                          stop_ids=(stop,)))
    assert not np.array_equal(stopped, free)  # the end id did end a row early
    np.testing.assert_array_equal(with_end.generate(prompts, max_new_tokens=6, stop_ids=()),
                                  free)  # stop_ids=() opts out


def test_a_stop_id_equal_to_the_padding_id_ends_a_row():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0,
                                       tie_embeddings=False)  # varied outputs
    prompts = np.random.default_rng(1).integers(3, VOCAB, size=(4, 3))
    free = model.generate(prompts, max_new_tokens=6)
    token = int(free[1, 4])
    padded = kt.DecoderOnly.from_config(dict(model.get_config(), pad_id=token, end_id=token))
    padded.set_weights(model.get_weights())
    rows = [r for r in range(4) if token not in prompts[r]]  # the padding id is no prompt token
    out = padded.generate(prompts[rows], max_new_tokens=6)  # stop_ids default (end_id,)
    stopped = 0
    for i, row in enumerate(rows):
        expected = full_pass_greedy_decoder_only(model, prompts[row].tolist(), 6, (token,), token)
        assert out[i].tolist() == expected
        stopped += token in expected[3:-1]  # generated although it is the padding id
    assert stopped >= 1


def test_gpt_preset_trains_on_and_generates_every_id():
    """GPT-2 has no padding token: id 0 is weighed by the loss, generated and kept."""
    model = kt.DecoderOnly.from_preset("gpt2_tiny", dropout=0.0)
    assert model.config.pad_id is None
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    ids = np.zeros((16, 9), "int32")  # a corpus of id 0 only ("!" in GPT-2)
    ids[:, ::2] = np.random.default_rng(0).integers(1, 128, size=(16, 5))
    before = model.evaluate(ids[:, :-1], ids[:, 1:], verbose=0, return_dict=True)["loss"]
    model.fit(ids[:, :-1], ids[:, 1:], epochs=30, batch_size=16, verbose=0)
    after = model.evaluate(ids[:, :-1], ids[:, 1:], verbose=0, return_dict=True)["loss"]
    assert after < before - 1.0
    out = model.generate(np.array([[0, 17, 0, 42]]), max_new_tokens=1)
    assert out.tolist() == [[0, 17, 0, 42, 0]]


@pytest.mark.parametrize(
    "ln_position,overrides",
    [
        ("post", {}),
        ("pre", {}),
        ("post", dict(position="rotary", num_kv_heads=2)),
        ("pre", dict(position="alibi", num_kv_heads=1, norm="rms", qk_norm=True)),
        ("pre", dict(attention_softcap=1.0, position="rotary")),  # self and cross capped
    ],
)
def test_encoder_decoder_cached_greedy_and_sampled_equal_full_passes(ln_position, overrides):
    model = kt.EncoderDecoder.from_preset(
        "transformer_tiny", vocab_size=VOCAB, dropout=0.0, ln_position=ln_position,
        start_id=START, end_id=None, **overrides,
    )
    at_working_scale(model)
    rng = np.random.default_rng(2)
    source = rng.integers(3, VOCAB, size=(3, 6))
    source[1, 4:] = PAD
    out = model.generate(source, max_length=7, beam_size=None)
    assert out.shape == (3, 7)
    sampler = Sampler(top_k=10, seed=4)
    sampled = model.generate(source, max_length=7, beam_size=None, sampler=sampler)
    drawn = []
    for row in range(3):
        greedy, target = [START], [START]
        for _ in range(7):
            logits = full_pass(model, {"source": source[row : row + 1],
                                       "target": np.array([greedy])})[0, -1]
            logits[PAD] = -np.inf
            greedy.append(int(np.argmax(logits)))
            # Sampled: the token at target position i is drawn at step i (start at 0).
            logits = full_pass(model, {"source": source[row : row + 1],
                                       "target": np.array([target])})[0, -1]
            target.append(sampled_token(logits, sampler, sampler.seed, len(target), row, 3,
                                        (PAD,)))
        assert out[row].tolist() == greedy[1:]
        assert sampled[row].tolist() == target[1:]
        drawn.append(target[1:])
    assert_outputs_vary(drawn)


def test_encoder_decoder_defaults_come_from_the_config():
    model = kt.EncoderDecoder.from_preset("transformer_tiny", vocab_size=VOCAB, dropout=0.0)
    assert (model.config.start_id, model.config.end_id) == (kt.data.START_ID, kt.data.END_ID)
    source = np.array([[5, 6, 7, 8]])
    explicit = model.generate(source, start_id=kt.data.START_ID, stop_ids=(kt.data.END_ID,),
                              max_length=6)
    np.testing.assert_array_equal(model.generate(source, max_length=6), explicit)


def test_encoder_decoder_default_length_is_source_plus_50():
    model = kt.EncoderDecoder.from_preset("transformer_tiny", vocab_size=VOCAB, dropout=0.0)
    source = np.full((1, 4), 5)
    assert model.generate(source, beam_size=None).shape == (1, 54)


def test_a_learned_table_must_hold_each_sources_real_length_plus_50():
    """The default limit is per source, its real tokens + 50: padding after a source needs
    no table rows (the output is still the batch's width + 50 wide)."""
    model = kt.EncoderDecoder.from_preset("transformer_tiny", vocab_size=VOCAB, dropout=0.0,
                                          position="learned", max_length=60)
    padded = np.array([[5, 6, 7, 8, 9, 10] + [model.config.pad_id] * 4])  # 6 real tokens
    out = model.generate(padded, beam_size=None)
    assert out.shape == (1, 60)  # 10 + 50 columns; the row decodes 56 positions at most
    with pytest.raises(ValueError, match="Decoding needs 61 positions .* max_length=60"):
        model.generate(np.full((1, 10), 5), beam_size=None)  # 10 real tokens


def test_sampled_calls_compile_once_per_bucket():
    """Ten seeds and three prompt widths in one bucket: one compilation."""
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0)
    rng = np.random.default_rng(0)
    for call in range(10):
        width = (3, 5, 7)[call % 3]
        prompts = rng.integers(0, VOCAB, size=(2, width))
        out = model.generate(prompts, max_new_tokens=4, sampler=Sampler(top_k=8, seed=call))
        assert out.shape == (2, width + 4)
        np.testing.assert_array_equal(out[:, :width], prompts)
    assert compilations(model) == 1
    model.generate(rng.integers(0, VOCAB, size=(2, 12)), max_new_tokens=4,
                   sampler=Sampler(top_k=8))
    assert compilations(model) == 2  # a width in the next bucket
    translator = kt.EncoderDecoder.from_preset("transformer_tiny", vocab_size=VOCAB)
    for width in (3, 5, 8):
        translator.generate(rng.integers(4, VOCAB, size=(2, width)), beam_size=2)
    assert compilations(translator) == 1  # source + 50 tokens, bucketed too


def test_seed_none_draws_afresh_and_a_fixed_seed_repeats():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", dropout=0.0)
    prompts = np.full((4, 2), 7)
    fresh = [model.generate(prompts, max_new_tokens=8, sampler=Sampler()) for _ in range(2)]
    assert not np.array_equal(fresh[0], fresh[1])
    fixed = [model.generate(prompts, max_new_tokens=8, sampler=Sampler(seed=3)) for _ in range(2)]
    np.testing.assert_array_equal(fixed[0], fixed[1])


def test_bucket_padding_does_not_change_the_output():
    """The same prompt decoded in a wider bucket's loop gives the same tokens."""
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0, num_layers=1,
                                       tie_embeddings=False)
    prompt = np.random.default_rng(3).integers(0, VOCAB, size=(2, 6))
    narrow = model.generate(prompt, max_new_tokens=5)  # bucket 8
    padded = np.concatenate([prompt, np.zeros((2, 4), "int32")], axis=1)  # width 10: bucket 16
    mask = np.repeat(np.arange(10)[None, :] < 6, 2, axis=0)
    wide = model.generate(padded, max_new_tokens=5, padding_mask=mask)  # 9 new tokens per row
    assert wide.shape == (2, 15)
    np.testing.assert_array_equal(wide[:, :11], narrow)
    assert len({s.input_length for s in model.compiled_loops.settings()}) == 2  # two buckets ran


def test_calls_of_equal_total_length_do_not_share_a_prefill():
    """Width 5 + 11 new (bucket 8) and width 12 + 3 new (bucket 16) fill 19 positions alike."""
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0,
                                       tie_embeddings=False)
    rng = np.random.default_rng(4)
    model.generate(rng.integers(0, VOCAB, size=(2, 5)), max_new_tokens=11)
    prompts = rng.integers(0, VOCAB, size=(2, 12))
    out = model.generate(prompts, max_new_tokens=3)
    for row, prompt in enumerate(prompts):
        assert out[row].tolist() == full_pass_greedy_decoder_only(model, prompt.tolist(), 3)
    assert compilations(model) == 2


def test_decode_length_beyond_learned_table_raises():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, max_length=8)
    with pytest.raises(ValueError, match="max_length=8"):
        model.generate(np.full((1, 4), 5), max_new_tokens=5)


def test_mixed_bfloat16_cached_tokens_match_the_full_pass():
    """Under mixed_bfloat16 each cached greedy token is the full pass's argmax, or a near tie.

    Teacher-forced on our own output, so one tie does not change every later
    step. A near tie: the full pass's top-2 logits within 2 bf16 steps (2^-7
    relative) of each other.
    """
    keras.config.set_dtype_policy("mixed_bfloat16")
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0,
                                       num_layers=3)
    prompts = np.random.default_rng(5).integers(0, VOCAB, size=(8, 4))
    out = model.generate(prompts, max_new_tokens=12)
    logits = ops.convert_to_numpy(ops.cast(model(out[:, :-1]), "float32"))[:, 3:]  # (8, 12, V)
    expected = logits.argmax(-1)
    top2 = np.sort(logits, axis=-1)[..., -2:]
    near_tie = top2[..., 1] - top2[..., 0] <= 2 * 2.0**-7 * np.maximum(np.abs(top2[..., 1]), 1)
    differ = out[:, 4:] != expected
    assert not (differ & ~near_tie).any(), np.argwhere(differ & ~near_tie)
    assert differ.mean() <= 0.1, f"{differ.sum()} of {differ.size} tokens differ (all near ties)"


@pytest.mark.parametrize("family", ["DecoderOnly", "EncoderDecoder"])
@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_decode_steps_skip_keras_call_bookkeeping_where_nothing_autocasts(monkeypatch, policy,
                                                                           family):
    """After its first call, a loop runs without `Layer.__call__`: compiled on JAX and
    TensorFlow, and on torch through direct sublayer calls (the encoder and the memory's
    keys and values too: the loop's context reaches them), except where a mixed policy
    needs `__call__`'s autocasting."""
    keras.config.set_dtype_policy(policy)
    prompts = np.random.default_rng(3).integers(3, VOCAB, size=(2, 4))
    if family == "DecoderOnly":
        model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0,
                                           num_layers=2)
    else:
        translator = kt.EncoderDecoder.from_preset("transformer_tiny", vocab_size=VOCAB,
                                                   dropout=0.0)

        class Model:  # the same call shape for both families
            def generate(self, sources, max_new_tokens):
                return translator.generate(sources, max_length=max_new_tokens, beam_size=2,
                                           beta=0.3)

        model = Model()
    calls = []
    original = keras.layers.Layer.__call__

    def counting(self, *args, **kwargs):
        calls.append(self.name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(keras.layers.Layer, "__call__", counting)
    first = model.generate(prompts, max_new_tokens=6)  # JAX and TF trace through __call__
    calls.clear()
    assert model.generate(prompts, max_new_tokens=6).tolist() == first.tolist()
    if keras.backend.backend() == "torch" and policy != "float32":
        assert len(calls) > 6, calls  # every step's sublayers go through __call__
    else:
        assert calls == []


def test_a_model_quantized_after_decoding_decodes_as_its_full_pass():
    """Quantized sublayers run their `quantized_call` in the loop too (torch's direct calls
    keep `__call__` for them), also when the model was quantized after a first `generate`."""
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0, num_layers=2)
    prompts = np.random.default_rng(3).integers(3, VOCAB, size=(2, 4))
    model.generate(prompts, max_new_tokens=6)  # the loop exists before quantizing
    model.quantize("int8")
    out = model.generate(prompts, max_new_tokens=6)
    for row, prompt in enumerate(prompts):
        assert out[row].tolist() == full_pass_greedy_decoder_only(
            model, [int(t) for t in prompt], 6)


@pytest.mark.parametrize(
    "overrides",
    [
        dict(position="rotary"),
        dict(position="rotary", ln_position="post", rotary_fraction=0.5, num_kv_heads=2),
        dict(position="alibi"),
        dict(position="alibi", attention_window=3, banded_layers="all", num_kv_heads=1),
        dict(position="rotary", attention_window=3, norm="rms", feed_forward="swiglu",
             use_bias=False, qk_norm=True, num_kv_heads=2),
        dict(position="learned", num_kv_heads=1, ln_position="post"),
        dict(parallel_block=True, attention_softcap=1.0, position="alibi", attention_window=3,
             banded_layers="all"),
    ],
)
def test_cached_chunks_and_steps_give_the_logits_of_the_full_pass(overrides):
    """Prefill, a chunk of 3, then single steps at int and tensor positions, vs one full pass.

    With weights at a working scale, a cached step that rotated (or biased) at the wrong
    position, or read the wrong key/value heads, is off by far more than the tolerance.
    """
    model = kt.DecoderOnly.from_preset(
        "gpt2_tiny", vocab_size=VOCAB, dropout=0.0, num_layers=2, **overrides
    )
    at_working_scale(model)
    ids = np.random.default_rng(1).integers(0, VOCAB, size=(2, 11))
    full = ops.convert_to_numpy(model(ids))  # (2, 11, VOCAB)
    caches = model.empty_cache(2, 11)
    pieces = [(0, 5, 0), (5, 8, 5), (8, 9, 8), (9, 10, ops.convert_to_tensor(9, "int32")),
              (10, 11, 10)]
    for start, end, index in pieces:
        logits, caches = model.call_with_cache(ids[:, start:end], caches, index)
        np.testing.assert_allclose(
            ops.convert_to_numpy(logits), full[:, start:end], atol=1e-4, rtol=1e-4,
            err_msg=f"positions {start}..{end - 1}",
        )
