"""One linear of the model (several checkpoint weights stacked along output rows, e.g. Q|K|V) converted into
the tensors of its weight mode. The leaf names are the scheduler's module buffers; the kind is told by them:

- blocks (``auto``): each stacked weight as its checkpoint stores it, of any type in
  ``roles.model_files.tensor_types`` (a GGUF's blocks, or an HF folder's bf16 / f16 / f32 rows):
  ``blocks_<i>`` (rows_i, row bytes_i) uint8 and ``block_types`` (parts,) int32 ggml type ids.
- dense (``exact``, and ``auto`` where the kernels cannot run a weight, see ``kernel_refusal``):
  ``weight`` (out, in) float32.
- int8 (symmetric per output channel): ``weight_int8`` (out, in) int8, ``scales`` (out,) bfloat16 and
  ``scales_float`` (out,) float32.
- int4 (asymmetric, groups of 32 inputs): ``packed`` (torch's CPU int4pack), ``codes`` (out, in/32, 32)
  uint8, ``group_scales`` and ``group_zeros`` (out, in/32, 1) float32 for the dequantising path, and
  ``scales_and_zeros`` (in/32, out, 2) bfloat16 for the int4 kernel. A GGUF's Q4_1 blocks map onto it
  exactly; other sources are quantised from float32.
"""

from __future__ import annotations

from roles.model_files.tensor_types import kernel_refusal
from roles.weight_format.gguf_blocks import block_parts
from roles.weight_format.weight_sources import WeightSource


def _blocks(weights: WeightSource, names: list[str]) -> dict | None:
    """The checkpoint's own blocks of every named weight, one part each, when the kernels run them all."""
    raws = [weights.raw_tensor(name) for name in names]
    if any(raw is None or kernel_refusal(raw.type_name, raw.cols) is not None for raw in raws):
        return None
    return block_parts(raws)


def linear_tensors(
    weights: WeightSource, names: list[str], weight_dtype: str, prefer_raw: bool = True
) -> dict:
    """The tensors of one linear whose output rows are the named weights stacked, in the given mode: the
    blocks as numpy arrays (``auto``), else torch tensors (``torch_linears``)."""
    if weight_dtype == "auto":
        blocks = _blocks(weights, names)
        if blocks is not None:
            return blocks
        weight_dtype = "exact"
    from roles.weight_format.torch_linears import converted_tensors

    return converted_tensors(weights, names, weight_dtype, prefer_raw)
