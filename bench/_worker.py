"""A timing worker in its own process, driven over stdin/stdout by bench.timing.

One process per contender, so that one library's thread pool (OpenBLAS, OpenMP) never shares
a process with another's; the driver alternates the workers and rests between their batches.
"""

from __future__ import annotations

import json
import sys
import time


def _ours(n: int, d_model: int, num_heads: int):
    import numpy as np

    from app.engine import MultiHeadAttention

    mha = MultiHeadAttention.init(d_model, num_heads, seed=0, dtype=np.float32)
    x = np.random.default_rng(1).standard_normal((n, d_model), dtype=np.float32)  # (N, d_model)
    return lambda: mha(x)


def _ours_numpy(n: int, d_model: int, num_heads: int):
    """Ours with every softmax in NumPy, as where the C kernel is not built (e.g. the Docker image)."""
    import app.engine.attention

    app.engine.attention.use_kernel = False
    return _ours(n, d_model, num_heads)


def _torch(n: int, d_model: int, num_heads: int):
    import numpy as np
    import torch

    from app.engine import MultiHeadAttention

    torch.set_grad_enabled(False)
    mha = MultiHeadAttention.init(d_model, num_heads, seed=0, dtype=np.float32)
    model = torch.nn.MultiheadAttention(d_model, num_heads, batch_first=True, dtype=torch.float32).eval()
    copy_weights(mha, model)
    x = np.random.default_rng(1).standard_normal((n, d_model), dtype=np.float32)
    xt = torch.from_numpy(x.copy()).unsqueeze(0)  # (1, N, d_model)
    return lambda: model(xt, xt, xt, need_weights=True, average_attn_weights=False)


def copy_weights(mha, model) -> None:
    """Ours into torch's: torch stores column vectors (y = x Wᵀ + b), so in_proj_weight = [w_q|w_k|w_v]ᵀ.

    The engine's arrays are read-only and torch.from_numpy warns on those: copy first.
    """
    import numpy as np
    import torch

    with torch.no_grad():
        model.in_proj_weight.copy_(torch.from_numpy(np.concatenate([mha.w_q, mha.w_k, mha.w_v], 1).T.copy()))
        model.in_proj_bias.copy_(torch.from_numpy(np.concatenate([mha.b_q, mha.b_k, mha.b_v]).copy()))
        model.out_proj.weight.copy_(torch.from_numpy(mha.w_o.T.copy()))
        model.out_proj.bias.copy_(torch.from_numpy(mha.b_o.copy()))


def _sgemm(n: int, *_):
    import numpy as np

    rng = np.random.default_rng(2)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    return lambda: a @ b


def _render(kind_name: str, *_):
    """A cold render of one visual kind with its default params (the render cache is not involved)."""
    from app.visuals import get_kind
    from bench.stubs import stub_complexity_timing

    stub_complexity_timing()
    kind = get_kind(kind_name)
    params = kind.parse({})
    return lambda: kind.render(params).image


def _render_no_layout(kind_name: str, *_):
    """A render with the layout step left out (axes where the grid puts them, overlapping labels).

    Not a figure anyone should see: it bounds what any layout work could save, since a fixed,
    computed layout costs more than none.
    """
    import app.plots.figure as figure_module

    figure_module.settle_layout = lambda figure: figure.set_layout_engine(None)
    return _render(kind_name)


def _naive(kind_name: str, *_):
    from bench.naive_plots import naive_render

    return naive_render(kind_name)


FACTORIES = {"ours": _ours, "ours-numpy": _ours_numpy, "torch": _torch, "sgemm": _sgemm, "render": _render, "render-no-layout": _render_no_layout,
             "naive": _naive}


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
        calls = int(command["calls"])
        start = time.perf_counter()
        for _ in range(calls):
            call()
        elapsed = time.perf_counter() - start
        print(json.dumps({"seconds": elapsed / calls}), flush=True)




if __name__ == "__main__":
    main()
