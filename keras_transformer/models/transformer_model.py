"""What both model families share: embeddings, block stacks, the output head."""

import contextlib
import inspect

import keras

from keras_transformer.generation.compiled import CompiledLoops
from keras_transformer.layers.clone_initializer import clone_initializer
from keras_transformer.layers.learned_position_embedding import LearnedPositionEmbedding
from keras_transformer.layers.normalization import make_norm
from keras_transformer.layers.sinusoidal_embedding import SinusoidalEmbedding
from keras_transformer.layers.decode_context import context_or_default
from keras_transformer.layers.token_embedding import TokenEmbedding
from keras_transformer.layers.transformer_block import TransformerBlock
from keras_transformer.models import calibration_stages
from keras_transformer.models import host_checks
from keras_transformer.models import lora
from keras_transformer.models import presets
from keras_transformer.models.backend_neutral_config import backend_neutral
from keras_transformer.models.config import BLOCK_FIELDS
from keras_transformer.models.config import block_from_arguments
from keras_transformer.training.schedule_from_fit import ScheduleFromFit
from keras_transformer.training.schedule_from_fit import sizable_schedule
from keras_transformer.training.stop_on_non_finite_loss import StopOnNonFiniteLoss

# Where `fit` finds `validation_data` however it was passed (by name or by position).
_FIT_SIGNATURE = inspect.signature(keras.Model.fit)


MODEL_ARGUMENTS = ("name", "dtype")
"""`keras.Model` arguments that `from_preset` passes on beside the preset's."""

KERAS_ARGUMENTS = MODEL_ARGUMENTS + ("trainable",)
"""`keras.Model` arguments a model takes beside its own (`get_config` writes all three)."""


def constructor_arguments(local_variables):
    """A subclass constructor's own arguments, from its `locals()` (the keywords left in
    `**kwargs`, block fields and `keras.Model`'s, travel on separately)."""
    return {
        k: v
        for k, v in local_variables.items()
        if k not in ("self", "kwargs", "__class__")
    }


def _remat_scope(remat, block_name):
    """Where a block is built: Keras' per-layer rematerialization of that block alone.

    `"list_of_layers"` names the block, so its sublayers (built in the scope
    too) are not rematerialized again inside it; `TransformerBlock` makes
    Keras' remat work with its arguments and dropout.
    """
    if not remat:
        return contextlib.nullcontext()
    return keras.RematScope(mode="list_of_layers", layer_names=[block_name])


def _is_auto(value):
    return isinstance(value, str) and value == "auto"


class TransformerModel(keras.Model):
    """Base of `EncoderDecoder` and `DecoderOnly`; not used directly.

    Subclasses take their own arguments (vocabulary, depth, width, embeddings,
    special ids), `block` and, as keywords, any field of `BlockConfig`;
    `make_config` turns them into a `TransformerConfig`, and this class
    creates the layers that config asks for. A subclass lists its own
    arguments in its signature and its `get_config`, and its family's block
    defaults once, in `BLOCK_DEFAULTS`; block toggles are listed nowhere here.
    Weights are created at construction, so `count_params()` works at once.
    """

    BLOCK_DEFAULTS = {}
    """The family's block fields where they differ from `BlockConfig`'s defaults: what a
    `block` given as a dict or as keywords starts from (a `BlockConfig` is taken as it is)."""

    def __init__(self, arguments, **kwargs):
        keras_arguments = {k: kwargs.pop(k) for k in KERAS_ARGUMENTS if k in kwargs}
        config = self.make_config(**arguments, **kwargs)  # kwargs: block fields, by name
        super().__init__(**keras_arguments)
        compute_dtype = self.dtype_policy.compute_dtype
        if "float" not in compute_dtype:
            raise ValueError(
                "`dtype` must be a floating-point dtype policy (e.g. 'float32', "
                f"'mixed_bfloat16'); received compute dtype {compute_dtype}."
            )
        self.config = c = config
        self.compiled_loops = CompiledLoops(self)  # generate's compile cache
        self._init_rule = self.initialization()
        self.token_embedding = TokenEmbedding(
            c.vocab_size,
            c.d_model,
            scale=c.scale_embeddings,
            initializer=clone_initializer(self._init_rule.token_embedding, "token_embedding"),
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        if c.position == "learned":
            self.position_embedding = LearnedPositionEmbedding(
                c.max_length,
                initializer=clone_initializer(self._init_rule.position_table, "position_embedding"),
                dtype=self.dtype_policy,
                name="position_embedding",
            )
        elif c.position == "sinusoidal":
            self.position_embedding = SinusoidalEmbedding(
                layout=c.position_layout, dtype=self.dtype_policy, name="position_embedding"
            )
        else:  # rotary or ALiBi: the attention layers encode positions
            self.position_embedding = None
        self.embedding_dropout = keras.layers.Dropout(
            c.block.dropout, dtype=self.dtype_policy, name="embedding_dropout"
        )
        if not c.tie_embeddings:
            self.output_projection = keras.layers.Dense(
                c.vocab_size,
                use_bias=False,
                kernel_initializer=clone_initializer(
                    self._init_rule.token_embedding, "output_projection"
                ),
                dtype=self.dtype_policy,
                name="output_projection",
            )

    # --- per-family choices --------------------------------------------------
    @classmethod
    def make_config(cls, block=None, **arguments):
        """The `TransformerConfig` of constructor arguments, without building anything.

        The family's own arguments take their defaults from the constructor's
        signature; every other keyword must name a field of `BlockConfig` and
        joins `block` (`config.block_from_arguments`, over `BLOCK_DEFAULTS`).

        Args:
            block: a `BlockConfig`, a dict of its fields, or None.
            **arguments: the family's own arguments and block fields as keywords.

        Raises:
            ValueError: a keyword that is neither, a block field given twice,
                or a value the config refuses.
        """
        own = cls.own_arguments()
        flat = {k: arguments.pop(k) for k in list(arguments) if k not in own}
        unknown = sorted(set(flat) - set(BLOCK_FIELDS))
        if unknown:
            raise ValueError(
                f"{cls.__name__} got unknown keyword argument(s) {unknown}; it takes "
                f"{', '.join(own)}, block, {', '.join(KERAS_ARGUMENTS)} and, as keywords, "
                f"the fields of BlockConfig: {', '.join(BLOCK_FIELDS)}."
            )
        missing = [name for name, default in own.items()
                   if default is inspect.Parameter.empty and name not in arguments]
        if missing:
            raise ValueError(f"{cls.__name__} needs {', '.join(missing)}.")
        arguments = {**{k: v for k, v in own.items() if v is not inspect.Parameter.empty},
                     **arguments}
        block = block_from_arguments(block, flat, cls.BLOCK_DEFAULTS, owner=cls.__name__)
        return cls.family_config(block=block, **arguments)

    @classmethod
    def own_arguments(cls):
        """`{name: default}` of the constructor's own arguments (`inspect.Parameter.empty`
        where required), `block` and the `**kwargs` aside."""
        return {name: parameter.default
                for name, parameter in inspect.signature(cls.__init__).parameters.items()
                if name not in ("self", "block", "kwargs")}

    @staticmethod
    def family_config(block, **arguments):
        """The `TransformerConfig` of the family's own arguments (complete) and `block`."""
        raise NotImplementedError

    def initialization(self):
        """This family's `Initialization` (`keras_transformer.models.initialization`)."""
        raise NotImplementedError

    # --- construction helpers -------------------------------------------------
    def _block(self, name, self_attention="bidirectional", cross_attention=False):
        with _remat_scope(self.config.remat, name):
            return TransformerBlock(
                self.config.block,
                self_attention=self_attention,
                window=self.config.attention_window if self_attention == "banded" else None,
                cross_attention=cross_attention,
                kernel_initializer=clone_initializer(self._init_rule.kernel, name),
                output_kernel_initializer=clone_initializer(
                    self._init_rule.output_kernel, f"{name}/output"
                ),
                dtype=self.dtype_policy,
                name=name,
            )

    def _final_norm(self, name):
        """The extra norm closing a pre-LN stack; post-LN stacks end normalized."""
        c = self.config
        if c.block.ln_position != "pre":
            return None
        return make_norm(c.block.norm, c.block.layer_norm_epsilon, self.dtype_policy, name)

    def _build_shared(self):
        hidden_shape = (None, None, self.config.d_model)
        self.token_embedding.build((None, None))
        if self.position_embedding is not None:
            self.position_embedding.build(hidden_shape)
        if not self.config.tie_embeddings:
            self.output_projection.build(hidden_shape)

    def _build_stack(self, blocks, final_norm, memory_shape=None):
        hidden_shape = (None, None, self.config.d_model)
        for block in blocks:
            block.build(hidden_shape, memory_shape=memory_shape)
        if final_norm is not None:
            final_norm.build(hidden_shape)

    # --- the forward pass pieces ---------------------------------------------
    def embed(self, ids, start_index=0, training=None, context=None):
        """Token embedding (scaled if asked) + positions, then dropout: `(B, T, d_model)`.

        With rotary or ALiBi positions nothing is added: attention encodes them.

        Args:
            ids: int token ids `(B, T)`.
            start_index: absolute position of `ids[:, 0]` (for cached steps).
            training: whether dropout is active.
            context: a `DecodeContext` (a decode step's); None: `DEFAULT_CONTEXT`.
        """
        context = context_or_default(context)
        hidden = context.call(self.token_embedding, ids)
        if self.position_embedding is not None:
            hidden = hidden + context.call(self.position_embedding, hidden,
                                           start_index=start_index)
        return context.call(self.embedding_dropout, hidden, training=training)

    @staticmethod
    def run_stack(
        blocks, final_norm, hidden, padding_mask, training=None, caches=None,
        cache_index=None, keep_until=None, context=None, **memory,
    ):
        """Runs `hidden` through `blocks` (and the pre-LN final norm).

        With `caches` (one per block, for cached decoding) returns
        `(hidden, updated caches)`; the blocks run the same code either way.

        Args:
            blocks: the `TransformerBlock`s of one stack, in order.
            final_norm: the stack's closing LayerNorm (pre-LN), or None.
            hidden: `(B, T, d_model)` embedded inputs.
            padding_mask: bool `(B, T)`, `True` for real positions, or None.
            training: whether dropout is active.
            caches: one key/value cache per block, or None for a full pass.
            cache_index: absolute position of `hidden`'s first row (with `caches`).
            keep_until: positions from here on will be fed again (banded
                layers' ring caches do not keep them); default all.
            context: a `DecodeContext` (a decode step's); None: `DEFAULT_CONTEXT`.
            **memory: `memory` and `memory_mask` for decoder blocks with
                cross-attention.
        """
        context = context_or_default(context)
        updated = []
        for i, block in enumerate(blocks):
            if caches is None:
                hidden = context.call(block, hidden, padding_mask=padding_mask,
                                      training=training, context=context, **memory)
            else:
                hidden, cache = context.call(
                    block, hidden, padding_mask=padding_mask, cache=caches[i],
                    cache_index=cache_index, training=training, keep_until=keep_until,
                    context=context, **memory,
                )
                updated.append(cache)
        if final_norm is not None:
            hidden = context.call(final_norm, hidden)
        return hidden if caches is None else (hidden, updated)

    def logits(self, hidden, context=None, training=None):
        """Pre-softmax projection `(B, T, d_model)` -> `(B, T, vocab_size)`.

        Args:
            hidden: `(B, T, d_model)` outputs of the last block.
            context: a `DecodeContext` (a decode step's); None: `DEFAULT_CONTEXT`.
            training: whether this is a training pass: passed to an untied
                `output_projection` explicitly. Keras' JAX trainer runs the model's
                `call` through `stateless_call`, not `__call__`, so no outer call
                sets `training` for a sublayer the model calls itself; a float8
                projection then ran as in inference in `fit`, gave its scales and
                amax histories no update, and JAX's zero "gradients" overwrote them
                with zeros (the blocks get `training` and pass it on).
        """
        context = context_or_default(context)
        if self.config.tie_embeddings:
            return self.token_embedding.project(hidden, context)
        return context.call(self.output_projection, hidden, training=training)

    # --- training defaults ---------------------------------------------------
    def training_recipe(self):
        """This family's `compile` arguments (optimizer, loss, metrics)."""
        raise NotImplementedError

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """`keras.Model.compile`, where `"auto"` takes this family's training recipe.

        `EncoderDecoder` uses the 2017 paper's recipe
        (`keras_transformer.training.paper_recipe`), `DecoderOnly` GPT's
        (`gpt_recipe`). Pass any argument to override that part alone.

        Args:
            optimizer: a Keras optimizer, or `"auto"` for the recipe's.
            loss: a Keras loss, or `"auto"` for the recipe's label-smoothed
                cross-entropy that ignores `pad_id`.
            metrics: a list of metrics, or `"auto"` for masked accuracy and
                perplexity.
            **kwargs: any other `keras.Model.compile` argument. `jit_compile` is
                saved as given: `"auto"` (the default) stays `"auto"` in the saved
                compile config, for the loading backend to resolve.
        """
        recipe = self.training_recipe()
        super().compile(
            optimizer=recipe["optimizer"] if _is_auto(optimizer) else optimizer,
            loss=recipe["loss"] if _is_auto(loss) else loss,
            metrics=recipe["metrics"] if _is_auto(metrics) else metrics,
            **kwargs,
        )
        # jit_compile saved as asked: Keras saves "auto" resolved for the saving backend (True
        # on JAX, False on torch and on TensorFlow without a GPU), and a JAX file then loaded
        # on torch with jit_compile=True, which sends predict and generate through
        # torch.compile. "auto" lets the loading backend resolve it. Keras makes this config
        # afresh at each compile (keras.Model.compile called directly saves what it saves).
        self._compile_config.config["jit_compile"] = kwargs.get("jit_compile", "auto")

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            *args, **kwargs):
        """`keras.Model.fit`, with the schedule sized to the run and its inputs checked.

        With the GPT recipe's default (`gpt_optimizer(total_steps=None)`) the
        cosine runs over this call's steps, `(epochs - initial_epoch) *
        steps_per_epoch` (`ScheduleFromFit`); data of unknown length then needs
        `steps_per_epoch` (a ValueError says so). A schedule that already has a
        length keeps it. NumPy inputs and labels (`validation_data` too) are
        checked on the host first (`host_checks.check_arrays`: ids in the
        vocabulary, labels of the inputs' shape), and the run stops at the first
        NaN or infinite loss with a warning that names the usual causes
        (`StopOnNonFiniteLoss`, which reads the loss each batch; pass your own
        `StopOnNonFiniteLoss` or `keras.callbacks.TerminateOnNaN` to replace it).

        Args:
            x: inputs, as for `keras.Model.fit`.
            y: labels, as for `keras.Model.fit`.
            batch_size: as for `keras.Model.fit`.
            epochs: as for `keras.Model.fit`.
            verbose: as for `keras.Model.fit`.
            callbacks: a callback, a list of them or a `CallbackList`.
            *args: `keras.Model.fit`'s further positional arguments.
            **kwargs: any other `keras.Model.fit` argument.
        """
        validation_data = _FIT_SIGNATURE.bind(
            self, x, y, batch_size, epochs, verbose, callbacks, *args, **kwargs
        ).arguments.get("validation_data")
        host_checks.check_fit_arrays(self, x, y, validation_data)
        given = list(callbacks.callbacks if isinstance(callbacks, keras.callbacks.CallbackList)
                     else [callbacks] if isinstance(callbacks, keras.callbacks.Callback)
                     else callbacks or [])
        added = []
        if not any(isinstance(c, (StopOnNonFiniteLoss, keras.callbacks.TerminateOnNaN))
                   for c in given):  # the user's own NaN callback replaces ours
            added.append(StopOnNonFiniteLoss())
        schedule = sizable_schedule(getattr(self, "optimizer", None))
        if schedule is not None and not any(
                isinstance(c, ScheduleFromFit) and c.schedule is schedule for c in given):
            added.append(ScheduleFromFit(schedule))
        if isinstance(callbacks, keras.callbacks.CallbackList):  # fit uses it as it is
            for callback in added:
                callback.set_model(self)
                callback.set_params(callbacks.params)
                callbacks.callbacks.append(callback)
            configure = getattr(callbacks, "_configure_async_dispatch", None)
            if configure is not None:  # batch hooks now exist: Keras must not run them async
                configure(callbacks.callbacks)
        else:
            callbacks = [*given, *added]
        return super().fit(x, y, batch_size, epochs, verbose, callbacks, *args, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        """`keras.Model.evaluate`, with NumPy inputs and labels checked as `fit` checks them.

        Args:
            x: inputs, as for `keras.Model.evaluate`.
            y: labels, as for `keras.Model.evaluate`.
            *args: `keras.Model.evaluate`'s further positional arguments.
            **kwargs: any other `keras.Model.evaluate` argument.
        """
        host_checks.check_arrays(self, x, y)
        return super().evaluate(x, y, *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        """`keras.Model.predict`, with NumPy inputs checked as `fit` checks them.

        Args:
            x: inputs, as for `keras.Model.predict`.
            *args: `keras.Model.predict`'s further positional arguments.
            **kwargs: any other `keras.Model.predict` argument.
        """
        host_checks.check_arrays(self, x)
        return super().predict(x, *args, **kwargs)

    def get_compile_config(self):
        # The optimizer under its public name, so that a file saved on torch loads anywhere.
        return backend_neutral(super().get_compile_config())

    def compile_from_config(self, config):
        # Restores the compiled state of a saved model through our compile().
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    # --- presets and serialization -------------------------------------------
    @classmethod
    def preset_config(cls, preset, **overrides):
        """The `TransformerConfig` of a preset, without building it (for counts).

        Args:
            preset: a preset of this family (see `keras_transformer.models.PRESETS`).
            **overrides: constructor arguments that replace the preset's (block
                fields as keywords, or a whole `block`).
        """
        arguments, _ = cls._preset_arguments(preset, overrides)  # name/dtype: not config
        return cls.make_config(**arguments)

    @classmethod
    def from_preset(cls, preset, **overrides):
        """Builds `preset`; any constructor argument can be overridden.

        Args:
            preset: a preset of this family (see `keras_transformer.models.PRESETS`).
            **overrides: constructor arguments that replace the preset's: the
                family's own, any field of `BlockConfig` as a keyword (it
                replaces that field alone) or `block` (a `BlockConfig`: it
                replaces the preset's block), and the base `keras.Model`
                arguments `name` and `dtype`.

        Example:
        >>> import keras_transformer as kt
        >>> model = kt.DecoderOnly.from_preset("gpt2_tiny", dropout=0.0, dtype="bfloat16")
        >>> model.config.block.dropout, model.dtype_policy.name
        (0.0, 'bfloat16')
        """
        arguments, model_arguments = cls._preset_arguments(preset, overrides)
        return cls(**arguments, **model_arguments)

    @classmethod
    def _preset_arguments(cls, preset, overrides):
        family, arguments = presets.get_preset(preset)
        if family != cls.__name__:
            raise ValueError(
                f"Preset {preset!r} is a {family} preset; use "
                f"keras_transformer.models.{family}.from_preset({preset!r})."
            )
        allowed = [*cls.own_arguments(), "block", *MODEL_ARGUMENTS]
        unknown = sorted(set(overrides) - set(allowed) - set(BLOCK_FIELDS))
        if unknown:
            raise ValueError(
                f"Unknown override(s) {unknown} for preset {preset!r}; "
                f"{cls.__name__} takes: {', '.join(allowed)} and the fields of BlockConfig: "
                f"{', '.join(BLOCK_FIELDS)}."
            )
        model_arguments = {k: overrides[k] for k in MODEL_ARGUMENTS if k in overrides}
        overrides = {k: v for k, v in overrides.items() if k not in MODEL_ARGUMENTS}
        return presets.override(arguments, overrides), model_arguments

    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """`keras.Model.quantize`; the next `generate` compiles its decode loop afresh (the
        loops compiled before captured the float weights).

        `"gptq"` and `"awq"` calibrate on data, block after block, through the
        stages of `get_quantization_layer_structure`; they quantize the Dense
        layers of the blocks only (the token embedding and an untied output
        projection keep the compute dtype, as in keras-hub), and refuse a config
        without `dataset` or `tokenizer` before changing any layer.

        Args:
            mode: `"int8"`, `"int4"`, `"float8"`, `"gptq"` or `"awq"`.
            config: a Keras `QuantizationConfig`, or None for the mode's default
                (`"gptq"` and `"awq"` need a `keras.quantizers.GPTQConfig` or
                `AWQConfig` with a `dataset` and a `tokenizer`).
            filters: which layers to quantize (Keras' regex, list or callable).
            **kwargs: further arguments of `keras.Model.quantize`.

        Example:
        >>> import keras, numpy as np, keras_transformer as kt
        >>> model = kt.DecoderOnly.from_preset("llama_tiny")
        >>> ids = np.random.default_rng(0).integers(4, 128, size=(64, 32))  # your token ids
        >>> config = keras.quantizers.GPTQConfig(
        ...     dataset=ids, tokenizer=object(),  # Keras asks for one; it reads only texts
        ...     num_samples=8, sequence_length=32, group_size=32)
        >>> model.quantize("gptq", config=config)  # doctest: +SKIP
        >>> model.blocks[0].feed_forward.outer.dtype_policy.name  # doctest: +SKIP
        'gptq/4/32_from_float32'
        """
        if lora.lora_layers(self) and mode not in lora.LORA_QUANTIZATION_MODES:
            raise ValueError(f"`mode` {mode!r} cannot quantize a model with LoRA adapters: Keras "
                             "merges adapters into int8 and int4 kernels only. Quantize to int8 "
                             "or int4, or save the merged model first (merge_lora) and quantize "
                             "that.")
        calibrated = mode in calibration_stages.CALIBRATED_MODES
        if calibrated:
            calibration_stages.check_config(self, mode, config)  # before any layer changes
            structure = (config.quantization_layer_structure
                         or self.get_quantization_layer_structure(mode))
            filters = calibration_stages.within_blocks(structure, filters)
        with calibration_stages.zero_points_in_range(mode):  # GPTQ/AWQ zero points fit a byte
            super().quantize(mode, config=config, filters=filters, **kwargs)
        self.compiled_loops.clear()
        calibration_stages.save_what_loads(self)

    def get_quantization_layer_structure(self, mode=None):
        """The stages `quantize("gptq")` and `quantize("awq")` calibrate one after the other.

        A pre-block stage embeds each calibration window (as `embed` does,
        without dropout), then one stage per block runs it as the forward pass
        does (`run_stack`), encoder blocks before decoder blocks; an
        `EncoderDecoder` makes each window a source (its first half) and a
        target (`start_id`, then the second half). See
        `keras_transformer.models.calibration_stages` for the details and for
        the calibration text to pass.

        Args:
            mode: the quantization mode; None for modes other than `"gptq"` and `"awq"`.

        Returns:
            `{"pre_block_layers": [...], "sequential_blocks": [...]}`, or None.

        Example:
        >>> import keras_transformer as kt
        >>> model = kt.EncoderDecoder.from_preset("transformer_tiny")
        >>> structure = model.get_quantization_layer_structure("gptq")
        >>> [stage.name for stage in structure["sequential_blocks"]]
        ['encoder_block_0_stage', 'encoder_block_1_stage', 'decoder_block_0_stage', 'decoder_block_1_stage']
        >>> model.get_quantization_layer_structure("int8") is None
        True
        """
        if mode not in calibration_stages.CALIBRATED_MODES:
            return None
        return calibration_stages.quantization_layer_structure(self)

    # --- export ----------------------------------------------------------------
    def export(self, filepath, format="tf_saved_model", verbose=None, input_signature=None,
               **kwargs):
        """`keras.Model.export`, whose input signature defaults to this model's inputs.

        The default is `input_signature()`: int32 token ids of any batch size and
        length (a dict `{"source", "target"}` for an `EncoderDecoder`). The forward
        pass exports (logits); the cached decode loop of `generate` does not.

        Args:
            filepath: where to write the export.
            format: an export format of Keras (`"tf_saved_model"`, ...).
            verbose: whether to print what was written.
            input_signature: the inputs' specs; None: `input_signature()`.
            **kwargs: further arguments of `keras.Model.export`.

        Example:
        >>> import tempfile, keras_transformer as kt
        >>> model = kt.DecoderOnly.from_preset("gpt2_tiny")
        >>> model.export(tempfile.mkdtemp() + "/served", verbose=False)  # doctest: +SKIP
        """
        if format == "onnx":
            raise NotImplementedError(
                "`format` 'onnx' does not export these models with Keras "
                f"{keras.version()}: from TensorFlow the graph fails in onnxruntime, from "
                "PyTorch the exporter refuses rms_norm, JAX needs jax2onnx (docs/deploy.md, "
                "Export for serving); export 'tf_saved_model'.")
        if input_signature is None:
            input_signature = [self.input_signature()]
        return super().export(filepath, format=format, verbose=verbose,
                              input_signature=input_signature, **kwargs)

    def input_signature(self):
        """The `keras.InputSpec` (or dict of them) of this model's inputs: int32 ids of
        dynamic batch size and length."""
        raise NotImplementedError

    @property
    def _default_save_signature(self):
        # TensorFlow's SavedModel writer (the TensorFlow backend only) asks each model for a
        # serving function; Keras' default feeds it ids of the compute dtype (float32), which
        # this model refuses. This one takes `input_signature()`.
        import tensorflow as tf

        spec = keras.tree.map_structure(lambda s: tf.TensorSpec(s.shape, s.dtype),
                                  self.input_signature())
        return tf.function(lambda inputs: self(inputs), input_signature=[spec])

    # --- low-rank adaptation (keras_transformer.models.lora) ------------------
    def default_lora_layer_names(self):
        """The layers `enable_lora` adapts by default: the attention projections of queries,
        keys and values (`qkv`, fused in self-attention; `query` and `key_value` in
        cross-attention). The output projection and the feed-forward layers are left out,
        as keras-hub leaves them out."""
        return ["qkv", "query", "key_value"]

    def enable_lora(self, rank, target_layer_names=None):
        """Freezes every weight and adds rank-`rank` LoRA adapters to the target layers.

        As keras-hub's `Backbone.enable_lora`, but the target layers' biases
        are frozen too: only the adapters train afterwards; compile the model
        again before `fit`. `save` writes the kernels with the adapters merged in;
        `save_lora_weights` writes the adapters alone.

        Args:
            rank: the adapters' rank, a whole number >= 1.
            target_layer_names: names of the layers to adapt; None:
                `default_lora_layer_names()`.

        Raises:
            ValueError: `rank` is not a whole number >= 1, no layer has one of
                the names, or LoRA is already enabled.

        Example:
        >>> import keras_transformer as kt
        >>> model = kt.DecoderOnly.from_preset("llama_tiny")
        >>> model.enable_lora(2)
        >>> sorted({w.path.rsplit("/", 1)[-1] for w in model.trainable_weights})
        ['lora_kernel_a', 'lora_kernel_b']
        """
        if target_layer_names is None:
            target_layer_names = self.default_lora_layer_names()
        lora.enable_lora(self, rank, target_layer_names)

    def merge_lora(self):
        """A new model of the same configuration with the adapters merged into its kernels:
        no LoRA, every weight trainable, not compiled; for serving, or to quantize.

        Returns:
            A model of this class.

        Raises:
            ValueError: LoRA is not enabled.

        Example:
        >>> import keras, numpy as np, keras_transformer as kt
        >>> model = kt.DecoderOnly.from_preset("llama_tiny")
        >>> model.enable_lora(2)
        >>> merged = model.merge_lora()
        >>> ids = np.array([[5, 6, 7]], "int32")
        >>> logits = [keras.ops.convert_to_numpy(m(ids)) for m in (model, merged)]
        >>> bool(np.allclose(*logits, atol=1e-5)), len(merged.trainable_weights) > 4
        (True, True)
        """
        return lora.merged_model(self)

    def save_lora_weights(self, filepath):
        """Writes the LoRA adapters (not the frozen weights) to `filepath`, a `.lora.h5` file.

        Args:
            filepath: the file to write; its name ends in `.lora.h5`.

        Raises:
            ValueError: LoRA is not enabled, or the name does not end in `.lora.h5`.
        """
        lora.save_lora_weights(self, filepath)

    def load_lora_weights(self, filepath):
        """Loads adapters `save_lora_weights` wrote, enabling LoRA on the same layers first
        when this model has none.

        Args:
            filepath: a `.lora.h5` file `save_lora_weights` wrote.

        Raises:
            ValueError: the file is not such a file, holds adapters of another rank than
                the enabled ones, or of another model (other layers or shapes).
        """
        lora.load_lora_weights(self, filepath)

    def get_config(self):
        """What `__init__` takes: `keras.Model`'s arguments here; each family adds its own
        arguments and `block`, a dict of every `BlockConfig` field."""
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self._layer_dtype_policies()),
        }

    def _layer_dtype_policies(self):
        """The model's dtype policy, as a `DTypePolicyMap` of each sublayer's own policy by
        path where it differs from the model's (once `quantize` has run, every quantized
        sublayer's; keras-hub's backbones do the same): built with it, every sublayer
        finds its own policy and builds its quantized weights."""
        policy = self.dtype_policy
        if isinstance(policy, keras.dtype_policies.DTypePolicyMap):
            policy = policy.default_policy
        own = {layer.path: layer.dtype_policy for layer in self._flatten_layers(include_self=False)
               if layer.path and layer.dtype_policy.name != policy.name}
        if not own:
            return policy
        policy_map = keras.dtype_policies.DTypePolicyMap(default_policy=policy)
        for path, layer_policy in own.items():
            policy_map[path] = layer_policy
        return policy_map

    def _settle_sublayers(self):
        """Once the layers are built: each sublayer built from a `DTypePolicyMap` gets its
        own entry of the map, and GPTQ/AWQ layers a save that writes what their load reads
        (`calibration_stages.save_what_loads`), so a loaded quantized model saves again.

        Keras finds a layer's entry by path for `quantization_mode`, but its quantized
        Dense, EinsumDense and Embedding read `self.dtype_policy.quantization_mode` when
        they save (Keras 3.15): with the map, that is the map's mode (None), and saving a
        loaded quantized model failed ("Invalid dtype: object"). `get_config` writes the
        map again from the layers.
        """
        for layer in self._flatten_layers(include_self=False):
            if layer.path and isinstance(layer._dtype_policy, keras.dtype_policies.DTypePolicyMap):
                layer._dtype_policy = layer._dtype_policy[layer.path]
        calibration_stages.save_what_loads(self)  # a loaded GPTQ/AWQ model saves again

    @classmethod
    def from_config(cls, config):
        """The model of a `get_config` dict: `block` nested (this version) or its fields flat
        beside the model's own arguments (files saved before `block` existed); both are
        what `__init__` takes.

        Args:
            config: a dict `get_config` wrote, now or before `block` existed.
        """
        return cls(**config)
