"""A tiny random-weight LLaMA-architecture GGUF for the smoke test, written with the llama.cpp
source's own ``gguf-py`` and one of the vocabulary files the source ships
(``models/ggml-vocab-llama-spm.gguf``: a GGUF holding only ``tokenizer.*`` keys and LLaMA
hyper-parameters, no tensors).

Runs as ``python -m bundlegraph.pipeline.smoke.tinygguf --gguf-py DIR --vocab FILE --out FILE``
(``gguf-py`` needs numpy and PyYAML; run in a subprocess so the source's ``gguf`` package never
enters bundlegraph's own interpreter state). The file is written beside ``--out`` and renamed
into place.

Two shapes (:data:`SHAPES`, ``--shape``):

- ``tiny`` (:data:`HPARAMS`, the default): 2 layers, embedding 64, 4 query heads and 2 KV heads
  (grouped-query attention), feed-forward 128, context 256, RoPE over the whole head (16); 2-D
  weights F16 (cuBLAS / MMV paths on CUDA). 4.17 M parameters, 9 MB with the llama-spm
  vocabulary (32,000 tokens): the host and GPU checks' model.
- ``bench`` (:data:`BENCH_HPARAMS`): a real-shaped small LLaMA for the throughput check
  (:mod:`.throughput`): 12 layers, embedding 768, 12 query heads and 4 KV heads, feed-forward
  2048, context 2048, head 64 (the proportions of a ~125 M-parameter LLaMA); 2-D weights Q8_0
  (quantized with gguf-py's own bit-exact ``quants.quantize``), the type real models ship in and
  the one whose CUDA kernels (MMQ for prompts, MMVQ for generation) depend most on the archs a
  build targets. 124.7 M parameters, 133 MB with the llama-spm vocabulary
  (:func:`n_params`).

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
BENCH_HPARAMS = {"n_layer": 12, "n_embd": 768, "n_head": 12, "n_head_kv": 4, "n_ff": 2048, "n_ctx": 2048}
"""The bench shape's hyper-parameters (the throughput check's model)."""
SHAPES: dict[str, tuple[dict[str, int], str, str]] = {
    "tiny": (HPARAMS, "F16", "bundlegraph-smoke-tiny"),
    "bench": (BENCH_HPARAMS, "Q8_0", "bundlegraph-smoke-bench"),
}
"""Shape name -> (hyper-parameters, type of the 2-D weights as gguf-py names it, ``general.name``)."""
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
    for i in range(hp["n_layer"]):
        b = f"blk.{i}"
        out |= {
            f"{b}.attn_norm.weight": (e,),
            f"{b}.attn_q.weight": (e, e),
            f"{b}.attn_k.weight": (kv, e),
            f"{b}.attn_v.weight": (kv, e),
            f"{b}.attn_output.weight": (e, e),
            f"{b}.ffn_norm.weight": (e,),
            f"{b}.ffn_gate.weight": (ff, e),
            f"{b}.ffn_up.weight": (ff, e),
            f"{b}.ffn_down.weight": (e, ff),
        }
    return out


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
    qtype = gguf.GGMLQuantizationType[wtype]

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
        if len(tshape) == 1:
            w.add_tensor(tname, np.ones(tshape, dtype=np.float32))
        elif qtype == gguf.GGMLQuantizationType.F16:
            w.add_tensor(tname, (rng.standard_normal(tshape, dtype=np.float32) * 0.02).astype(np.float16))
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
