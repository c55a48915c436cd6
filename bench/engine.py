"""Engine figures: MultiHeadAttention against torch.nn.MultiheadAttention, GFLOP/s against the
machine's own sgemm rate, and scaling in N, all measured interleaved in the same run.
"""

from __future__ import annotations

import numpy as np

from .timing import Worker, interleave

WORKING = (16, 128, 4)
LARGE = [(256, 256, 8), (1024, 256, 8)]
SCALING_N = [64, 128, 256, 512, 1024]  # d_model 256, 8 heads


def forward_flops(n: int, d_model: int) -> int:
    """FLOPs (2 per multiply-add) of one self-attention forward over N tokens.

    Q/K/V projection 2·N·d·3d, scores and weights·V 2·2·N·N·d (over all heads), output 2·N·d·d;
    the softmax's O(N·N·h) is left out, as BLAS-bound work is what the sgemm rate measures.
    """
    return 2 * n * d_model * 3 * d_model + 4 * n * n * d_model + 2 * n * d_model * d_model


def sgemm_size(flops: int) -> int:
    """The side of a square float32 matmul with about the same FLOPs (2·n³)."""
    return max(8, round((flops / 2) ** (1 / 3)))


def check_outputs(sizes) -> list[dict]:
    """Our outputs and per-head weights against torch's, float32, same weights: max |difference|."""
    import torch

    from app.engine import MultiHeadAttention

    from ._worker import copy_weights

    torch.set_grad_enabled(False)
    rows = []
    for n, d_model, num_heads in sizes:
        mha = MultiHeadAttention.init(d_model, num_heads, seed=0, dtype=np.float32)
        model = torch.nn.MultiheadAttention(d_model, num_heads, batch_first=True).eval()
        copy_weights(mha, model)
        x = np.random.default_rng(1).standard_normal((n, d_model), dtype=np.float32)
        ours_out, ours_weights = mha(x)
        xt = torch.from_numpy(x.copy()).unsqueeze(0)
        torch_out, torch_weights = model(xt, xt, xt, need_weights=True, average_attn_weights=False)
        rows.append({
            "size": (n, d_model, num_heads),
            "output_diff": float(np.abs(ours_out - torch_out[0].numpy()).max()),
            "weights_diff": float(np.abs(ours_weights - torch_weights[0].numpy()).max()),
            "dtype": str(ours_out.dtype),
        })
    return rows


def run(rounds: int = 15, quick: bool = False) -> dict:
    results = {"sizes": [], "scaling": {}}
    for n, d_model, num_heads in [WORKING, *LARGE]:
        flops = forward_flops(n, d_model)
        side = sgemm_size(flops)
        workers = {"ours": Worker("ours", n, d_model, num_heads), "torch": Worker("torch", n, d_model, num_heads),
                   "sgemm": Worker("sgemm", side),
                   # For information: without the C softmax kernel (not built, e.g. the Docker image).
                   "ours, NumPy softmax": Worker("ours-numpy", n, d_model, num_heads),
                   # For information: the container runs with one OpenBLAS thread per worker process.
                   "ours, 1 BLAS thread": Worker("ours", n, d_model, num_heads, env={"OPENBLAS_NUM_THREADS": "1"}),
                   # Like for like on one core: no thread hand-offs, no waiting on the other core's tenants.
                   "torch, 1 thread": Worker("torch", n, d_model, num_heads,
                                             env={"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})}
        try:
            timed = interleave(workers, rounds, batch_seconds=0.15 if n < 1024 else 0.4)
        finally:
            for worker in workers.values():
                worker.close()
        ours_gflops = [flops / t / 1e9 for t in timed.times["ours"]]
        sgemm_gflops = [2 * side**3 / t / 1e9 for t in timed.times["sgemm"]]
        efficiency = sorted(o / s for o, s in zip(ours_gflops, sgemm_gflops))
        results["sizes"].append({
            "size": (n, d_model, num_heads),
            "ours_ms": timed.median("ours") * 1e3,
            "torch_ms": timed.median("torch") * 1e3,
            "ratio": timed.ratio("ours", "torch"),
            "ratio_iqr": timed.ratio_spread("ours", "torch"),
            "single_blas_ratio": timed.ratio("ours, 1 BLAS thread", "torch"),
            "numpy_softmax_ratio": timed.ratio("ours, NumPy softmax", "torch"),
            "single_thread_ratio": timed.ratio("ours, 1 BLAS thread", "torch, 1 thread"),
            "gflops": float(np.median(ours_gflops)),
            "sgemm_gflops": float(np.median(sgemm_gflops)),
            "sgemm_side": side,
            "of_sgemm": efficiency[len(efficiency) // 2],
            "rounds": rounds,
        })
    # Scaling in N: ours and torch interleaved at each N; the exponent is the least-squares slope
    # of log(time) on log(N) over the larger half of the sizes.
    sizes = SCALING_N[:3] if quick else SCALING_N
    ours_times, torch_times = [], []
    for n in sizes:
        workers = {"ours": Worker("ours", n, 256, 8), "torch": Worker("torch", n, 256, 8)}
        try:
            timed = interleave(workers, max(5, rounds // 2), batch_seconds=0.15 if n < 512 else 0.3)
        finally:
            for worker in workers.values():
                worker.close()
        ours_times.append(timed.median("ours"))
        torch_times.append(timed.median("torch"))
    larger = slice(len(sizes) // 2, None)
    log_n = np.log(sizes)
    results["scaling"] = {
        "n": sizes,
        "ours_ms": [t * 1e3 for t in ours_times],
        "torch_ms": [t * 1e3 for t in torch_times],
        "ours_exponent": float(np.polyfit(log_n[larger], np.log(ours_times)[larger], 1)[0]),
        "torch_exponent": float(np.polyfit(log_n[larger], np.log(torch_times)[larger], 1)[0]),
        "ratio": [o / t for o, t in zip(ours_times, torch_times)],
    }
    results["outputs"] = check_outputs([WORKING, *LARGE])
    return results


def gflops_note() -> str:
    return (f"FLOPs per forward = 2·N·d·3d (Q/K/V) + 4·N²·d (scores and weights·V) + 2·N·d² (output), "
            f"softmax excluded; the sgemm reference is a square float32 NumPy matmul of side "
            f"(FLOPs/2)^(1/3), timed in the same rounds. e.g. N=1024, d=256: {forward_flops(1024, 256) / 1e9:.2f} GFLOP, "
            f"side {sgemm_size(forward_flops(1024, 256))}.")
