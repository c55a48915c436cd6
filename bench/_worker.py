"""A timing worker in its own process, driven over stdin/stdout by bench.timing.

One process per contender, so that one library's thread pool (OpenBLAS, OpenMP) never shares a
process with another's, and the naive plot baseline's patches never reach the app's own renders.
The driver alternates the workers and rests between their batches.

Commands, one JSON object a line: {"calls": n} times n calls and answers {"seconds": mean};
{"profile": n} runs n calls under cProfile and answers the functions that cost most; {"stop": true}.
"""

from __future__ import annotations

import cProfile
import gc
import json
import pstats
import sys
import time


def _mha(n: int, d_model: int, num_heads: int):
    """Our MultiHeadAttention, float32, seeded weights, and an input x of shape (N, d_model)."""
    import numpy as np

    from app.engine import MultiHeadAttention

    mha = MultiHeadAttention.init(d_model, num_heads, seed=0, dtype=np.float32)
    x = np.random.default_rng(1).standard_normal((n, d_model), dtype=np.float32)  # (N, d_model)
    return mha, x


def _ours(n: int, d_model: int, num_heads: int):
    mha, x = _mha(n, d_model, num_heads)
    return lambda: mha(x)  # (output (N, d_model), weights (h, N, N))


def _torch(n: int, d_model: int, num_heads: int):
    import torch

    torch.set_grad_enabled(False)
    mha, x = _mha(n, d_model, num_heads)
    model = torch_model(mha)
    xt = torch.from_numpy(x.copy()).unsqueeze(0)  # (1, N, d_model)
    return lambda: model(xt, xt, xt, need_weights=True, average_attn_weights=False)


def torch_model(mha):
    """torch.nn.MultiheadAttention (CPU, float32, eval) holding the same weights as our `mha`.

    torch stores column vectors (y = x Wᵀ + b), so in_proj_weight = [w_q|w_k|w_v]ᵀ and out_proj.weight
    = w_oᵀ. The engine's arrays are read-only and torch.from_numpy warns on those: copy first.
    """
    import numpy as np
    import torch

    model = torch.nn.MultiheadAttention(mha.d_model, mha.num_heads, batch_first=True, dtype=torch.float32).eval()
    with torch.no_grad():
        model.in_proj_weight.copy_(torch.from_numpy(np.concatenate([mha.w_q, mha.w_k, mha.w_v], 1).T.copy()))
        model.in_proj_bias.copy_(torch.from_numpy(np.concatenate([mha.b_q, mha.b_k, mha.b_v]).copy()))
        model.out_proj.weight.copy_(torch.from_numpy(mha.w_o.T.copy()))
        model.out_proj.bias.copy_(torch.from_numpy(mha.b_o.copy()))
    return model


def _render(kind_name: str, *_):
    """The app's cold render of one visual kind: kind.render(default params), engine to image bytes.

    kind.render is the whole sequence (compute, alt text, caption, draw, PNG/SVG) with no cache of
    rendered figures in between: the app's LRU lives in app.visuals.service and is not involved.
    """
    from app.visuals import get_kind

    kind = get_kind(kind_name)
    params = kind.parse({})
    return lambda: kind.render(params).image


def _naive(kind_name: str, *_):
    from bench.naive_plots import naive_render

    return naive_render(kind_name)


def _drawing(kind_name: str, *_):
    """Ours without the image: the engine, the words and kind.draw on Agg's canvas (canvas.draw()), the work
    the naive render shares. Its time over the naive's is the lowest ratio any image pipeline could reach."""
    from app.visuals import get_kind

    kind = get_kind(kind_name)
    params = kind.parse({})

    def draw() -> None:
        computed = kind.describe(params)
        gc.disable()  # as VisualKind.picture draws: the collector waits, then one young collection
        try:
            kind.draw(params, computed.result, kind.figure_inches(params, "wide", computed.result)).canvas.draw()
        finally:
            gc.collect(0)
            gc.enable()

    return draw


def _reference(*_):
    """The issue's reference figure, a 10×10 annotated heatmap, drawn and encoded as the app does."""
    from app.plots.figure import to_png
    from bench.reference import reference_heatmap

    return lambda: to_png(reference_heatmap())


def _reference_naive(*_):
    from bench.naive_plots import install, save
    from bench.reference import reference_heatmap

    install()
    return lambda: save(reference_heatmap(), "png")


def _model(threads: int, *_):
    """The engine's forward pass of the real model on bench.model's 32-token sentence, tokenising included."""
    from threadpoolctl import threadpool_limits

    from app.engine.pretrained import load_model
    from bench.model import SENTENCE, SENTENCE_TOKENS

    threadpool_limits(threads)  # NumPy's BLAS, as OPENBLAS_NUM_THREADS=1 does in the server
    model = load_model()
    assert len(model.run(SENTENCE).tokens) == SENTENCE_TOKENS
    return lambda: model.run(SENTENCE)


def _bert(threads: int, *_):
    """transformers' BertModel (torch, CPU, eager attention) on the same weights and token ids, with attentions."""
    import torch
    from transformers import BertModel

    from app.engine.pretrained import load_model
    from bench.model import SENTENCE, SENTENCE_TOKENS

    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    model = load_model()
    bert = BertModel.from_pretrained(str(model.weights_path.parent), attn_implementation="eager").eval()
    token_ids = torch.tensor([model.tokenize(SENTENCE).ids])  # (1, N)
    assert token_ids.shape[1] == SENTENCE_TOKENS
    return lambda: bert(token_ids, output_attentions=True)


FACTORIES = {"ours": _ours, "torch": _torch, "render": _render, "naive": _naive, "drawing": _drawing,
             "reference": _reference, "reference-naive": _reference_naive, "model": _model, "bert": _bert}


def profile(call, calls: int, top: int = 12) -> dict:
    """cProfile over `calls` calls: the functions with the most own time, and the total."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt or 1e-12
    rows = []
    for (path, line, function), (_, ncalls, tottime, cumtime, _) in stats.stats.items():
        rows.append({"function": f"{_short(path)}:{line}({function})", "calls_per_call": ncalls / calls,
                     "own_share": tottime / total, "cum_share": cumtime / total})
    rows.sort(key=lambda row: row["own_share"], reverse=True)
    return {"seconds_per_call": total / calls, "top_own": rows[:top],
            "top_cumulative": sorted(rows, key=lambda row: row["cum_share"], reverse=True)[:top]}


def _short(path: str) -> str:
    for marker in ("/site-packages/", "/work/main/", "/lib/python3"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def main() -> None:
    factory = FACTORIES[sys.argv[1]]
    args = [int(a) if a.lstrip("-").isdigit() else a for a in sys.argv[2:]]
    call = factory(*args)
    call()  # warm-up: imports, first-call allocations, thread-pool start
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if command.get("stop"):
            break
        if "profile" in command:
            print(json.dumps(profile(call, int(command["profile"]))), flush=True)
            continue
        calls = int(command["calls"])
        start = time.perf_counter()
        for _ in range(calls):
            call()
        elapsed = time.perf_counter() - start
        print(json.dumps({"seconds": elapsed / calls}), flush=True)


if __name__ == "__main__":
    main()
