"""The paper's training recipe for `model.fit`: loss, schedules, metrics, callbacks, data."""

from keras_transformer.training.checkpoint_averaging import CheckpointAveraging
from keras_transformer.training.decay_masked_adamw import DecayMaskedAdamW
from keras_transformer.training.inverse_sqrt_schedule import InverseSqrtSchedule
from keras_transformer.training.label_smoothed_cross_entropy import LabelSmoothedCrossEntropy
from keras_transformer.training.recipes import gpt_optimizer
from keras_transformer.training.recipes import gpt_recipe
from keras_transformer.training.recipes import paper_optimizer
from keras_transformer.training.recipes import paper_recipe
from keras_transformer.training.schedule_from_fit import ScheduleFromFit
from keras_transformer.training.step_limit import StepLimit
from keras_transformer.training.stop_on_non_finite_loss import StopOnNonFiniteLoss
from keras_transformer.training.teacher_forcing import next_token_windows
from keras_transformer.training.teacher_forcing import shift_right
from keras_transformer.training.teacher_forcing import translation_pairs
from keras_transformer.training.time_limit import TimeLimit
from keras_transformer.training.token_metrics import MaskedAccuracy
from keras_transformer.training.token_metrics import Perplexity
from keras_transformer.training.warmup_cosine_schedule import WarmupCosineSchedule

__all__ = [
    "CheckpointAveraging",
    "DecayMaskedAdamW",
    "InverseSqrtSchedule",
    "LabelSmoothedCrossEntropy",
    "MaskedAccuracy",
    "Perplexity",
    "ScheduleFromFit",
    "StepLimit",
    "StopOnNonFiniteLoss",
    "TimeLimit",
    "WarmupCosineSchedule",
    "gpt_optimizer",
    "gpt_recipe",
    "next_token_windows",
    "paper_optimizer",
    "paper_recipe",
    "shift_right",
    "translation_pairs",
]
