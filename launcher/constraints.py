"""The checks the launcher adds to the built-in constraints: those that need roles' code or the model file."""

from __future__ import annotations

from launcher.collector_check import STAT_LOGGERS_IMPORTABLE
from launcher.draft_model_check import DRAFT_MODEL_USABLE
from launcher.expert_parallel_check import EP_SIZE_FITS_THE_MODEL, EXPERT_BACKUP_FITS
from launcher.kernel_isa_check import KERNEL_ISA_ON_THIS_CPU
from launcher.model_file_check import MODEL_FILE_SERVABLE
from launcher.ray_backend_check import RAY_IMPORTABLE
from launcher.tokenizer_check import CHAT_TEMPLATE_USABLE, TOKENIZER_SUPPORTED
from runtime_context.constraints import Constraint

LAUNCHER_CONSTRAINTS: tuple[Constraint, ...] = (
    STAT_LOGGERS_IMPORTABLE,
    MODEL_FILE_SERVABLE,
    KERNEL_ISA_ON_THIS_CPU,
    EP_SIZE_FITS_THE_MODEL,
    EXPERT_BACKUP_FITS,
    RAY_IMPORTABLE,
    TOKENIZER_SUPPORTED,
    CHAT_TEMPLATE_USABLE,
    DRAFT_MODEL_USABLE,
)
