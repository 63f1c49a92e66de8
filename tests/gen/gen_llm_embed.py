"""Embeddings of gen_llm.py's tiny llama (tests/goldens/llm_llama.gguf) from
an independent numpy forward pass (gen_llm.py's Model, float64), for
tests/test_llm_embed.c: for each token sequence, the last hidden state
after the final norm of every token, averaged over the tokens (llama.cpp's
mean pooling), not normalized.

    python3 tests/gen/gen_llm_embed.py      # writes tests/goldens/llm_llama_embed.bin

File: int32 count, then per sequence int32 n, n int32 tokens, dim float32
(little-endian). The weights are read back from the GGUF (float32), so the
reference runs the very file tg loads.
"""
import ast
import os
import struct

import gguf
import numpy as np

HERE = os.path.dirname(__file__)
GOLDENS = os.path.join(HERE, "..", "goldens")

# gen_llm.py's definitions without its top-level make() calls (which would
# rewrite every llm golden)
tree = ast.parse(open(os.path.join(HERE, "gen_llm.py")).read())
tree.body = [n for n in tree.body if not isinstance(n, ast.Expr)]
ns = {"__file__": os.path.join(HERE, "gen_llm.py")}
exec(compile(tree, "gen_llm.py", "exec"), ns)

reader = gguf.GGUFReader(os.path.join(GOLDENS, "llm_llama.gguf"))
w = {t.name: np.array(t.data, dtype=np.float64) for t in reader.tensors}
cfg = dict(ns["base"], neox=False)    # as gen_llm.py made llm_llama.gguf
dim = cfg["dim"]
w["output.weight"] = np.eye(dim)      # the forward's "logits" are then the normed hidden state

SEQS = [[1, 5, 9, 13, 17, 21, 25], [3] + list(range(10, 30)), [(7 * i) % 53 for i in range(32)], [42]]

out = [struct.pack("<i", len(SEQS))]
for seq in SEQS:
    m = ns["Model"](cfg, w)
    hidden = [m.forward([t], pos) for pos, t in enumerate(seq)]   # one token at a time: each one's own row
    emb = np.mean(np.array(hidden), axis=0)
    out.append(struct.pack("<i", len(seq)) + np.array(seq, dtype="<i4").tobytes() + emb.astype("<f4").tobytes())
path = os.path.join(GOLDENS, "llm_llama_embed.bin")
open(path, "wb").write(b"".join(out))
print(f"wrote {path}: {len(SEQS)} sequences of {[len(s) for s in SEQS]} tokens, dim {dim}")

# stories260K (the shared test model; tests/test_serve_model.c asks tg serve
# for its embedding of these token ids): the same forward, L2-normalized as
# /v1/embeddings returns it
STORIES = os.path.join(HERE, "..", "..", "..", "shared", "testdata", "models", "stories260K.gguf")
if os.path.exists(STORIES):
    import json
    reader = gguf.GGUFReader(STORIES)
    w = {t.name: np.array(t.data, dtype=np.float64) for t in reader.tensors}
    cfg = dict(dim=64, layers=5, heads=8, kv=4, hd=8, ffn=172, vocab=512, neox=False)   # its llama.* metadata
    w["output.weight"] = np.eye(cfg["dim"])
    toks = [1, 403, 246, 260, 263, 488, 42]
    m = ns["Model"](cfg, w)
    emb = np.mean(np.array([m.forward([t], pos) for pos, t in enumerate(toks)]), axis=0)
    emb = emb / np.linalg.norm(emb)
    path = os.path.join(GOLDENS, "stories260k_embed.json")
    json.dump({"tokens": toks, "embedding": [float(x) for x in emb]}, open(path, "w"))
    print(f"wrote {path}")
