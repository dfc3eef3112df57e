"""A tiny random-weight LLaMA-architecture GGUF for the smoke test, written with the llama.cpp
source's own ``gguf-py`` and one of the vocabulary files the source ships
(``models/ggml-vocab-llama-spm.gguf``: a GGUF holding only ``tokenizer.*`` keys and LLaMA
hyper-parameters, no tensors).

Runs as ``python -m bundlegraph.pipeline.smoke.tinygguf --gguf-py DIR --vocab FILE --out FILE``
(``gguf-py`` needs numpy and PyYAML; run in a subprocess so the source's ``gguf`` package never
enters bundlegraph's own interpreter state). The file is written beside ``--out`` and renamed
into place.

Three shapes (:data:`SHAPES`, ``--shape``):

- ``tiny`` (:data:`HPARAMS`, the default): 2 layers, embedding 64, 4 query heads and 2 KV heads
  (grouped-query attention), feed-forward 128, context 256, RoPE over the whole head (16); 2-D
  weights F16 (cuBLAS / MMV paths on CUDA). 4.17 M parameters, 9 MB with the llama-spm
  vocabulary (32,000 tokens): the host and GPU checks' model.
- ``dense-1b`` (:data:`DENSE_HPARAMS`), the throughput check's dense model (:mod:`.throughput`):
  the proportions of Llama 3.2 1B (16 layers, embedding 2048, 32 query and 8 KV heads,
  feed-forward 8192, context 4096). 1.10 G parameters with llama-spm's vocabulary
  (:func:`n_params`), weights in the Q4_K_M mix (:data:`Q4_K_M`): the type most users download,
  and the k-quant MMQ / MMVQ kernels whose speed depends most on the archs and flags of a build.
- ``moe`` (:data:`MOE_HPARAMS`), the throughput check's mixture of experts: 8 layers,
  embedding 1024, 16 query and 4 KV heads, 8 experts of feed-forward 1024 with 2 used per token
  (the ``MUL_MAT_ID`` and top-k / ``ARGSORT`` paths that a dense model never runs). 0.30 G
  parameters, 0.07 G of them active per token; Q4_K_M mix too.

The k-quant blocks (Q4_K, Q6_K) are random bytes with fixed small scales: gguf-py cannot
quantize to k-quants (``gguf/quants.py`` raises ``NotImplementedError``) and a kernel's speed does
not depend on the values it multiplies (only its shape, type and the build). Layouts from
ggml's ``ggml-common.h`` (``block_q4_K``: ``d``, ``dmin`` as f16, 12 bytes of scales, 128 of
quants, 144 bytes per 256 weights; ``block_q6_K``: 128 + 64 bytes of quants, 16 scales, ``d``
as f16 last, 210 bytes per 256 weights).

Norms are F32 ones; other values N(0, 0.02) from a fixed seed, so the file is byte-identical for
the same vocabulary and shape. Tensor names and shapes follow llama.cpp's
``LLM_ARCH_LLAMA`` loader (``src/llama-model.cpp``) and ``gguf-py/gguf/constants.py``
(``MODEL_TENSOR`` names); numpy shapes are ggml's ``ne`` reversed, as ``GGUFWriter.add_tensor``
expects.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

HPARAMS = {"n_layer": 2, "n_embd": 64, "n_head": 4, "n_head_kv": 2, "n_ff": 128, "n_ctx": 256}
"""The tiny shape's hyper-parameters."""
DENSE_HPARAMS = {"n_layer": 16, "n_embd": 2048, "n_head": 32, "n_head_kv": 8, "n_ff": 8192, "n_ctx": 4096}
"""The ``dense-1b`` shape's hyper-parameters (Llama 3.2 1B's proportions)."""
MOE_HPARAMS = {
    "n_layer": 8,
    "n_embd": 1024,
    "n_head": 16,
    "n_head_kv": 4,
    "n_ff": 1024,
    "n_ctx": 4096,
    "n_expert": 8,
    "n_expert_used": 2,
}
"""The ``moe`` shape's hyper-parameters (``n_ff``: each expert's feed-forward length)."""
Q4_K_M = "Q4_K_M"
"""The weight type name of the k-quant mix: Q6_K for ``output``, ``attn_v`` and the feed-forward
down projections (dense or experts), Q4_K for every other 2-D or 3-D weight (the tensors llama.cpp's
``LLAMA_FTYPE_MOSTLY_Q4_K_M`` keeps at Q6_K, ``src/llama-quant.cpp``, here in every layer)."""
SHAPES: dict[str, tuple[dict[str, int], str, str]] = {
    "tiny": (HPARAMS, "F16", "bundlegraph-smoke-tiny"),
    "dense-1b": (DENSE_HPARAMS, Q4_K_M, "bundlegraph-bench-dense-1b"),
    "moe": (MOE_HPARAMS, Q4_K_M, "bundlegraph-bench-moe"),
}
"""Shape name -> (hyper-parameters, type of the weights as gguf-py names it or :data:`Q4_K_M`,
``general.name``)."""
KQUANT_BLOCK = {"Q4_K": (144, ((0, 0.0005), (2, 0.0005))), "Q6_K": (210, ((208, 0.0005),))}
"""Bytes per block of 256 weights, and the f16 scales written into each block (byte offset,
value) so that no weight is infinite or NaN (``ggml-common.h``)."""
ARCH = "llama"


def tensor_shapes(n_vocab: int, hp: dict[str, Any] = HPARAMS) -> dict[str, tuple[int, ...]]:
    """Tensor name -> numpy shape (ggml ``ne`` reversed) for the tiny model."""
    e, ff = hp["n_embd"], hp["n_ff"]
    kv = e // hp["n_head"] * hp["n_head_kv"]
    out: dict[str, tuple[int, ...]] = {
        "token_embd.weight": (n_vocab, e),
        "output_norm.weight": (e,),
        "output.weight": (n_vocab, e),
    }
    n_exp = hp.get("n_expert", 0)
    for i in range(hp["n_layer"]):
        b = f"blk.{i}"
        out |= {
            f"{b}.attn_norm.weight": (e,),
            f"{b}.attn_q.weight": (e, e),
            f"{b}.attn_k.weight": (kv, e),
            f"{b}.attn_v.weight": (kv, e),
            f"{b}.attn_output.weight": (e, e),
            f"{b}.ffn_norm.weight": (e,),
        }
        if n_exp:  # src/models/llama.cpp: ffn_gate_inp {n_embd, n_expert}, *_exps {.., .., n_expert}
            out |= {
                f"{b}.ffn_gate_inp.weight": (n_exp, e),
                f"{b}.ffn_gate_exps.weight": (n_exp, ff, e),
                f"{b}.ffn_up_exps.weight": (n_exp, ff, e),
                f"{b}.ffn_down_exps.weight": (n_exp, e, ff),
            }
        else:
            out |= {
                f"{b}.ffn_gate.weight": (ff, e),
                f"{b}.ffn_up.weight": (ff, e),
                f"{b}.ffn_down.weight": (e, ff),
            }
    return out


def weight_type(name: str, shape: tuple[int, ...], wtype: str) -> str:
    """The type tensor ``name`` of numpy ``shape`` is written in, for a shape whose weights are
    ``wtype``: norms are F32; under :data:`Q4_K_M` the router (``ffn_gate_inp``, tiny and read in
    F32 by llama.cpp's MoE path) is F32, ``output``, ``attn_v`` and the down projections Q6_K,
    the rest Q4_K; else ``wtype``."""
    if len(shape) == 1:
        return "F32"
    if wtype != Q4_K_M:
        return wtype
    if ".ffn_gate_inp." in name:
        return "F32"
    if name == "output.weight" or ".attn_v." in name or ".ffn_down" in name:
        return "Q6_K"
    return "Q4_K"


def kquant_bytes(rng: Any, qtype: str, shape: tuple[int, ...]) -> Any:
    """Random ``qtype`` blocks (:data:`KQUANT_BLOCK`) for a weight of numpy ``shape``: a uint8
    array of ``shape[:-1] + (shape[-1] // 256 * block bytes,)``. Raises ``ValueError`` when a row
    is not a whole number of 256-weight blocks."""
    import numpy as np

    size, scales = KQUANT_BLOCK[qtype]
    if shape[-1] % 256:
        raise ValueError(f"{qtype}: a row of {shape[-1]} weights is no whole number of 256-weight blocks")
    blocks = rng.integers(0, 256, size=(*shape[:-1], shape[-1] // 256, size), dtype=np.uint8)
    for off, value in scales:
        blocks[..., off : off + 2] = np.frombuffer(np.float16(value).tobytes(), dtype=np.uint8)
    return blocks.reshape(*shape[:-1], shape[-1] // 256 * size)


def n_params(n_vocab: int, hp: dict[str, Any] = HPARAMS) -> int:
    """The model's parameter count (every tensor of :func:`tensor_shapes`)."""
    import math

    return sum(math.prod(s) for s in tensor_shapes(n_vocab, hp).values())


def write_tiny_model(gguf: Any, vocab: Path, out: Path, seed: int = 0, shape: str = "tiny") -> dict[str, Any]:
    """Write the model of ``shape`` (:data:`SHAPES`) to ``out`` (atomically) using the imported
    ``gguf`` package; returns a summary ``{"n_vocab", "tensors", "params", "bytes"}``. Raises
    ``ValueError`` naming ``vocab`` when it holds no token list, or naming ``shape`` when unknown."""
    import numpy as np

    if shape not in SHAPES:
        raise ValueError(f"--shape {shape}: expected one of {', '.join(SHAPES)}")
    hp, wtype, name = SHAPES[shape]

    reader = gguf.GGUFReader(str(vocab))
    tok = reader.fields.get("tokenizer.ggml.tokens")
    if tok is None:
        raise ValueError(f"{vocab}: no tokenizer.ggml.tokens; not a llama.cpp vocabulary GGUF")
    n_vocab = len(tok.data)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    w = gguf.GGUFWriter(str(tmp), ARCH)
    w.add_name(name)
    w.add_context_length(hp["n_ctx"])
    w.add_embedding_length(hp["n_embd"])
    w.add_block_count(hp["n_layer"])
    w.add_feed_forward_length(hp["n_ff"])
    w.add_head_count(hp["n_head"])
    w.add_head_count_kv(hp["n_head_kv"])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(hp["n_embd"] // hp["n_head"])
    w.add_vocab_size(n_vocab)
    if "n_expert" in hp:
        w.add_expert_count(hp["n_expert"])
        w.add_expert_used_count(hp["n_expert_used"])
    w.add_file_type(gguf.LlamaFileType[f"MOSTLY_{wtype}"])
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(key, field.contents(), vtype, sub_type=sub)
    rng = np.random.default_rng(seed)
    shapes = tensor_shapes(n_vocab, hp)
    for tname, tshape in shapes.items():
        ttype = weight_type(tname, tshape, wtype)
        qtype = gguf.GGMLQuantizationType[ttype]
        if len(tshape) == 1:
            w.add_tensor(tname, np.ones(tshape, dtype=np.float32))
        elif ttype == "F32":
            w.add_tensor(tname, rng.standard_normal(tshape, dtype=np.float32) * 0.02)
        elif ttype == "F16":
            w.add_tensor(tname, (rng.standard_normal(tshape, dtype=np.float32) * 0.02).astype(np.float16))
        elif ttype in KQUANT_BLOCK:  # random blocks: gguf-py has no k-quant quantizer
            data = kquant_bytes(rng, ttype, tshape)
            w.add_tensor(tname, data, raw_shape=data.shape, raw_dtype=qtype)
        else:  # gguf-py's own quantizer, bit-exact with ggml's reference (gguf/quants.py)
            data = gguf.quants.quantize(rng.standard_normal(tshape, dtype=np.float32) * 0.02, qtype)
            w.add_tensor(tname, data, raw_shape=data.shape, raw_dtype=qtype)
    try:
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return {"n_vocab": n_vocab, "tensors": len(shapes), "params": n_params(n_vocab, hp), "bytes": out.stat().st_size}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf-py", required=True, help="the source's gguf-py directory")
    ap.add_argument("--vocab", required=True, help="a models/ggml-vocab-*.gguf file")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(Path(a.gguf_py).resolve()))
    import gguf  # the source's own gguf-py

    s = write_tiny_model(gguf, Path(a.vocab), Path(a.out), a.seed, a.shape)
    print(
        f"{a.shape} model: {a.out}: {s['tensors']} tensors, {s['params']} parameters, "
        f"vocabulary {s['n_vocab']} tokens, {s['bytes']} bytes "
        f"(gguf-py from {a.gguf_py})",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
