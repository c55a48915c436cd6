"""Writes docs/benchmarks.md and its plot (docs/benchmarks.png, matplotlib's Figure API) from one run."""

from __future__ import annotations

from pathlib import Path

COMMAND = "bench/run"


def _status(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def _ms(value: float) -> str:
    return f"{value:.3g} ms" if value < 100 else f"{value:.0f} ms"


def _goals(results: dict) -> list[tuple[str, str, str, bool | None]]:
    """(goal, target, measured, met) rows for the summary table."""
    rows = []
    engine = results.get("engine")
    if engine:
        for row in engine["sizes"]:
            n, d, h = row["size"]
            target = 0.6 if n == 16 else 1.25
            rows.append((f"MHA forward vs torch, N={n}, d_model={d}, {h} heads", f"≤ {target}×",
                         f"{row['ratio']:.2f}× (IQR {row['ratio_iqr'][0]:.2f}–{row['ratio_iqr'][1]:.2f})",
                         row["ratio"] <= target))
        worst = max(max(r["output_diff"], r["weights_diff"]) for r in engine["outputs"])
        rows.append(("outputs and per-head weights equal torch's (fp32)", "≤ 1e-5",
                     f"max abs diff {worst:.1e}", worst <= 1e-5))
    for row in results.get("plots", []):
        rows.append((f"cold render `{row['kind']}` vs naive pyplot", "≤ 0.5×", f"{row['ratio']:.2f}×",
                     row["ratio"] <= 0.5))
    client = results.get("test_client")
    if client:
        rows.append(("cached plot vs same-size static file, requests/s (Flask test client)", "≥ 0.8×",
                     f"{client['ratio']:.2f}×", client["ratio"] >= 0.8))
    for label, load in results.get("load", {}).items():
        ratio = load["cached plot"]["rps"] / load["static file"]["rps"]
        rows.append((f"cached plot vs static file, requests/s (gunicorn + wrk, {label})", "≥ 0.8×",
                     f"{ratio:.2f}×", ratio >= 0.8))
        errors = sum(load[s]["errors"] for s in _SCENARIOS) + load["submissions"]["errors"]
        rows.append((f"errors under load ({label})", "0", str(errors), errors == 0))
        p99 = load["answer pages"]["p99_us"] / 1e3
        rows.append((f"answer pages p99 at 64 connections ({label})", "< 250 ms",
                     f"{p99:.0f} ms ({p99 / (load['static file']['p99_us'] / 1e3):.1f}× the static file's p99)",
                     p99 < 250))
        memory = load["memory"]["peak_mb"]
        rows.append((f"RSS per worker, peak ({label})", "< 150 MB", f"{memory:.0f} MB", memory < 150))
    for label, cold in results.get("cold_start", {}).items():
        rows.append((f"cold start to first served answer page ({label})", "< 2 s",
                     f"{cold['answer_page_s']:.2f} s ({cold['answer_page_s'] / cold['healthz_s']:.2f}× the "
                     f"time to the first /healthz, {cold['healthz_s']:.2f} s)", cold["answer_page_s"] < 2))
    return rows


_SCENARIOS = ("static file", "cached plot", "question pages", "answer pages", "plot URLs", "mix")


def write(results: dict, out: str) -> None:
    out_path = Path(out)
    png = out_path.with_suffix(".png")
    _plot(results, png)
    m = results["machine"]
    lines = [
        "# Benchmarks",
        "",
        f"Written by `{COMMAND}` (which installs what it needs, then runs `python -m bench`) on "
        f"{results['started']}, in {results['elapsed_s'] / 60:.1f} minutes."
        + (" **Quick run (`--quick`): a smoke test with few rounds; do not quote these numbers.**"
           if results.get("quick") else ""),
        "Options go through to `python -m bench`: `--quick` (a smoke test), `--only engine,plots,http`, "
        "`--seconds N` (each load scenario), `--keep` (with `--only`: carry the other sections over from the last run). `VENV=path bench/run` uses another venv. The raw numbers of "
        "this run are in `bench/last-run.json`."
        + "".join(f" The {section} section comes from the run of {started} (`--keep`)."
                  for section, started in results.get("carried_over", {}).items()),
        "",
        "The machine is shared and noisy, so **every figure is a ratio against a baseline measured in the "
        "same run**, in alternation (ABAB: each round runs one batch of each contender, the order flipping "
        "every round, with a 0.15 s rest between batches so one library's spinning BLAS/OpenMP threads do "
        "not steal the cores from the next). Each contender lives in its own worker process, so NumPy's "
        "OpenBLAS and torch's MKL/OpenMP never share a process. A ratio is the median over rounds of the "
        "per-round ratio; IQR is the spread of those per-round ratios. Absolute times are shown for "
        "orientation only.",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
        f"| CPU | {m['cpu']}, {m['cores']} cores |",
        f"| load average at start / end | {', '.join(f'{x:.2f}' for x in m['load_average'])} / "
        f"{', '.join(f'{x:.2f}' for x in m.get('load_average_end', ()))} |",
        f"| Python / NumPy / matplotlib | {m['python']} / {m['numpy']} / {m['matplotlib']} |",
        f"| torch | {m['torch']} |",
        f"| NumPy's BLAS (threadpoolctl) | {'; '.join(m['blas'])} |",
        f"| the engine's float32 softmax | {m.get('engine_softmax', 'NumPy (before the C kernel)')} |",
        f"| BLAS environment (left as CI has it) | "
        + ", ".join(f"`{k}`={v}" for k, v in m["environment"].items()) + " |",
        f"| kernel / wrk | {m['kernel']} / {m['wrk']} |",
        "",
        "## Goals",
        "",
        "| goal | target | measured | |",
        "|---|---|---|---|",
    ]
    for goal, target, measured, met in _goals(results):
        lines.append(f"| {goal} | {target} | {measured} | {_status(met)} |")
    lines += ["", f"![Ratios against their baselines]({png.name})", ""]
    lines += _engine_section(results.get("engine"))
    lines += _plots_section(results.get("plots"))
    lines += _http_section(results)
    lines += _done_section(results)
    out_path.write_text("\n".join(lines) + "\n")


def _engine_section(engine) -> list[str]:
    if not engine:
        return ["## Engine", "", "Not run (`--only`).", ""]
    from .engine import gflops_note

    lines = [
        "## Engine: `MultiHeadAttention` against `torch.nn.MultiheadAttention`",
        "",
        "Self-attention on one sequence `(N, d_model)`, float32, the same weights (ours copied into torch's "
        "`in_proj_weight = [w_q|w_k|w_v]ᵀ` and `out_proj`), torch on CPU with `need_weights=True, "
        "average_attn_weights=False` under `no_grad`, so both return the output and the per-head weights.",
        "",
        "| N, d_model, heads | ours | torch | ours / torch | IQR | ours GFLOP/s | sgemm GFLOP/s (side) | ours / sgemm "
        "| ours with 1 BLAS thread / torch | both on 1 thread | ours without the C kernel / torch |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in engine["sizes"]:
        n, d, h = row["size"]
        lines.append(f"| {n}, {d}, {h} | {_ms(row['ours_ms'])} | {_ms(row['torch_ms'])} | **{row['ratio']:.2f}×** | "
                     f"{row['ratio_iqr'][0]:.2f}–{row['ratio_iqr'][1]:.2f} | {row['gflops']:.1f} | "
                     f"{row['sgemm_gflops']:.1f} ({row['sgemm_side']}) | {row['of_sgemm']:.2f} | "
                     f"{row['single_blas_ratio']:.2f}× | "
                     + (f"{row['single_thread_ratio']:.2f}× |" if "single_thread_ratio" in row else "– |")
                     + (f" {row['numpy_softmax_ratio']:.2f}× |" if "numpy_softmax_ratio" in row else " – |"))
    lines += ["", gflops_note() + " The second-to-last column (for information, not a goal) runs ours with "
              "`OPENBLAS_NUM_THREADS=1`, as the container does (one BLAS thread per gunicorn worker), "
              "against torch with its default threads; the one after it runs both on one thread "
              "(`OPENBLAS_NUM_THREADS=1` for ours, `OMP_NUM_THREADS=1` and `MKL_NUM_THREADS=1` for torch), "
              "which takes thread hand-offs and the second core's other tenants out of the comparison. The last "
              "column runs ours with every softmax in NumPy, as where the engine's optional C softmax kernel is "
              "not built (the Docker image has no compiler; see docs/engine.md).", ""]
    scaling = engine["scaling"]
    lines += [
        f"**Scaling in N** (d_model 256, 8 heads): fitted exponent over the larger half of N = "
        f"{', '.join(map(str, scaling['n']))}: ours **{scaling['ours_exponent']:.2f}**, torch "
        f"**{scaling['torch_exponent']:.2f}** (2 is the N² of the scores; below 2 where the N·d² projections "
        "still weigh). Ours / torch per N: "
        + ", ".join(f"N={n}: {r:.2f}×" for n, r in zip(scaling["n"], scaling["ratio"])) + ".",
        "",
        "**Equality** (fp32, same input): " + "; ".join(
            f"N={r['size'][0]}: output {r['output_diff']:.1e}, weights {r['weights_diff']:.1e}"
            for r in engine["outputs"]) + " (max |ours − torch|).",
        "",
    ]
    return lines


def _plots_section(plots) -> list[str]:
    if not plots:
        return ["## Plots", "", "Not run (`--only`).", ""]
    lines = [
        "## Plots: a cold render against a naive pyplot render",
        "",
        "A cold render is `kind.render(default params)` with no cache in between: engine, figure, layout, "
        "PNG (SVG for `head-split`). The baseline (`bench/naive_plots.py`) draws the same figure the naive "
        "way: pyplot figures (`plt.figure`/`plt.subplots`), one `ax.text` per annotated cell, "
        "`fig.tight_layout()`, `fig.savefig()`, `plt.close()`. It reuses the app's drawing code for the "
        "panels, so it draws the same data, panels, titles, colour bars and cell numbers; its positions "
        "differ a little (tight_layout instead of the app's layout), which makes it a faithful approximation, "
        "not a pixel copy. The complexity kind's live timing of the engine (about 0.35 s by design) is "
        "replaced by fixed numbers in both, so that drawing is compared with drawing.",
        "",
        "| kind | ours | naive | ours / naive | IQR | bound: no layout at all / naive |",
        "|---|---|---|---|---|---|",
    ]
    for row in plots:
        lines.append(f"| `{row['kind']}` | {_ms(row['ours_ms'])} | {_ms(row['naive_ms'])} | **{row['ratio']:.2f}×** | "
                     f"{row['ratio_iqr'][0]:.2f}–{row['ratio_iqr'][1]:.2f} | {row['no_layout_ratio']:.2f}× |")
    return lines + ["", "The last column times the app's render with the layout step left out altogether "
                        "(axes where the bare grid puts them: not a usable figure). No layout can cost "
                        "less, so the gap between it and the ratio is what the app's one-pass grid layout "
                        "(`app/plots/layout.py`) costs.", ""]


def _http_section(results) -> list[str]:
    lines = ["## HTTP", ""]
    client = results.get("test_client")
    if client:
        lines += [
            f"**Cached plot against a static file, Flask test client** (in process, interleaved): the "
            f"multi-head plot ({client['bytes']:,} bytes) from the render cache against a file of the same size "
            f"served by `send_from_directory` (what Flask's `/static/` does) in the same app: "
            f"{client['plot_us']:.0f} µs against {client['static_us']:.0f} µs per request, i.e. "
            f"**{client['ratio']:.2f}×** the static file's requests per second.",
            "",
        ]
    if results.get("cold_start"):
        lines += ["**Cold start**: launch gunicorn (2 workers) on an existing database, then poll a student's "
                  "multi-head answer page every 10 ms until it is served (200). The server before it (which the "
                  "student answered on) leaves its rendered plots in the instance folder's disk cache; they are "
                  "deleted before the launch, except for the restart row.", "",
                  "| app | first /healthz | first answer page | ratio |", "|---|---|---|---|"]
        for label, cold in results["cold_start"].items():
            lines.append(f"| {label} | {cold['healthz_s']:.2f} s | {cold['answer_page_s']:.2f} s | "
                         f"{cold['answer_page_s'] / cold['healthz_s']:.2f}× |")
        lines.append("")
    for label, load in results.get("load", {}).items():
        static_rps = load["static file"]["rps"]
        static_p99 = load["static file"]["p99_us"]
        lines += [
            f"**gunicorn under load ({label})**: `gunicorn --workers 2 --threads 4` (the container's "
            "settings), SQLite on local disk, rate limits lifted (64 students from one address are the load "
            "here, not abuse). wrk 4.1 at 64 connections, 2 threads, "
            f"{load['static file']['duration_us'] / 1e6:.0f} s per scenario, 127.0.0.1 only. Question pages "
            "are fetched without a cookie (each a new visitor); answer pages with the cookie of a student who "
            "answered every question; plot URLs are those the answer pages show. Pre-render and the disk "
            "cache of rendered plots are create_app's defaults, the disk cache in a new, empty instance folder; "
            "\"no pre-render\" sets `FLASK_PLOT_PRERENDER=false`. Before wrk starts, the bench's student answers "
            "every question and opens each answer page once (an answer page draws no figure: its alt text comes from "
            "`describe`, so without pre-render the figures are drawn by the first plot requests under load).",
            "",
            "| scenario | req/s | ÷ static file | p50 | p99 | p99 ÷ static | errors |",
            "|---|---|---|---|---|---|---|",
        ]
        for name in _SCENARIOS:
            s = load[name]
            lines.append(f"| {name} | {s['rps']:.0f} | {s['rps'] / static_rps:.2f}× | {s['p50_us'] / 1e3:.0f} ms | "
                         f"{s['p99_us'] / 1e3:.0f} ms | {s['p99_us'] / static_p99:.1f}× | {s['errors']} |")
        sub = load["submissions"]
        lines += [
            f"| submissions (64 students, Python client) | {sub['rps']:.0f} | {sub['rps'] / static_rps:.2f}× | "
            f"{sub['p50_us'] / 1e3:.0f} ms | {sub['p99_us'] / 1e3:.0f} ms | {sub['p99_us'] / static_p99:.1f}× | "
            f"{sub['errors']} {' '.join(sub['error_kinds'])} |",
            "",
            f"Worker memory after the runs: RSS {load['memory']['rss_mb']:.0f} MB, peak {load['memory']['peak_mb']:.0f} MB "
            f"(largest of {load['memory']['workers']} workers).",
            "",
        ]
    if len(lines) == 2:
        lines += ["Not run (`--only`, or wrk missing).", ""]
    return lines


def _done_section(results: dict) -> list[str]:
    sizes = results.get("engine", {}).get("sizes", [])
    engine_text = (
        "In this run: " + ", ".join(f"N={r['size'][0]} {r['ratio']:.2f}× (goal {0.6 if r['size'][0] == 16 else 1.25}×)"
                                    for r in sizes) + ". At N=16 both libraries spend their time in per-call "
        "overhead rather than arithmetic, and torch's (handing tiny operations to its OpenMP threads) varies "
        "a lot from run to run on this machine (the hand-off to its second thread waits whenever the other "
        "core is busy); ours is about 0.1 ms, a third of it the fused Q/K/V matmul. "
        + ("With both libraries on one thread (the table's last column), the comparison is like for like: "
           + ", ".join(f"N={r['size'][0]} {r['single_thread_ratio']:.2f}×" for r in sizes) + ". "
           if all("single_thread_ratio" in r for r in sizes) else "")
        if sizes else "")
    boot = [c["healthz_s"] for c in results.get("cold_start", {}).values()]
    return [
        "## What was done, and what is left",
        "",
        "**Engine** (`app/engine/attention.py`, `app/engine/multihead.py`, `app/engine/_fastsoftmax.c`). "
        "Profiling the large sizes put the difference in the softmax, and within it in `exp`: NumPy's float32 "
        "`exp` (its AVX2 loop) costs about 1.5–2 ns per element on this CPU, 1.5× torch's, and a NumPy "
        "softmax is five passes over the scores, so the N=1024 forward's 8.4M scores took 18–30 ms of one "
        "core, where torch runs a fused softmax on both. Pure-NumPy measures came first: (1) the max "
        "subtraction only guards exp against overflow, so when the Cauchy–Schwarz bound "
        "max‖q_i‖·max‖k_j‖/sqrt(d) on every score is at most 64 the NumPy softmax skips it (three passes "
        "instead of five); (2) softmaxes run in 256 KiB row blocks that stay in L2; (3) small "
        "self-attention (under 16K scores) takes a shorter path with fewer NumPy and Python calls, "
        "bit-identical to the general one. That left N=256 and N=1024 at 1.4–1.6× torch. (4) So float32 "
        "softmaxes now go to a small optional C kernel, `app/engine/_fastsoftmax.c`: per row, in the L1 "
        "cache, the max, then `exp(x − max)` stored and summed, then a multiplication by the reciprocal, "
        "eight numbers at a time with AVX2 and FMA, with Cephes' polynomial `expf` (within 2 ulp), at under "
        "1 ns per number, releasing the GIL. It keeps the NumPy path's rules (masked keys exactly 0, an "
        "all-masked row all 0, NaN rows left to NumPy), `tests/test_fastsoftmax.py` holds it to a float64 "
        "softmax (5e-6 relative) and to the NumPy path, and every engine test runs with it and without. It "
        "is optional: `setup.py` builds it when a C compiler is there, and the engine falls back to NumPy "
        "otherwise (the table's last column). " + engine_text + "Tried and dropped, measured: numexpr 2.14 "
        "(PyPI's wheels have no VML, and its float32 exp ran at 4–5 ns per element on one thread), numba "
        "0.68 (PyPI's llvmlite has no SVML, so `math.exp` compiles to scalar `expf`; some 200 MB and a "
        "1.6 s first compile), a polynomial exp in NumPy ufunc passes (some 13 passes: slower than "
        "`np.exp`), scores, softmax and weights·V fused per tile of rows, each head start to finish on its "
        "own thread with one BLAS thread (no gain: on this machine two threads doing exp get only about "
        "1.3× one), and a threaded softmax at N=256 (slower: the hand-off and OpenBLAS's spinning threads). "
        "On a busy machine a multi-threaded BLAS call can also wait a scheduler tick for its second thread, "
        "in both libraries, which is what the wide IQRs show.",
        "",
        "**Plots** (`app/plots/layout.py`, `app/plots/figure.py`). An earlier round (one Agg renderer shared "
        "per pixel size, so text metrics are cached across renders; the layout run once instead of twice; "
        "cell numbers as one `PathCollection` of cached glyph outlines) left most kinds at 0.7–1.0× the "
        "naive render, and cProfile then put the rest in the constrained layout (every tick label, title "
        "and axis label measured twice, its tight-bbox machinery more often still) and in rasterising "
        "text. (1) The visuals now use a one-pass grid layout: each label is measured once and the cells "
        "are placed with arithmetic; colour bars sit beside their axes, legends below; labels compete for "
        "width only with labels at the same height. `tests/test_plots_layout.py` renders every kind at its "
        "default and at extreme parameters (8 heads, 12-word sentences with long words, 512 positions, "
        "16×16 pixels) and checks that no label is clipped or overlaps another axes or its labels (with "
        "the layout switched off, 23 of its 25 cases fail); a figure the layout does not know falls back "
        "to constrained layout. (2) The shared renderer keeps each string's rasterised text between "
        "renders, drawn at the nearest whole pixel, so repeated tick labels and titles are not laid out "
        "and rasterised with FreeType on every render. (3) PNGs are written as RGB with zlib level 3, "
        "outside the render lock: the same pixels, 6–13 % fewer bytes and about a third less encoding "
        "time than savefig's RGBA at level 6. (4) Tick styles are set before the ticks exist, the "
        "autoregressive grid is one set of line segments, and the head-split SVG is drawn once "
        "(byte-identical). Colour ranges, rows as queries and columns as keys, and every alt text are "
        "unchanged; the naive baseline draws the same figures as before (it follows the two figure edits). "
        "What is left is mostly matplotlib creating its tick objects, which the naive render pays too; "
        "complexity, long-range and order-blindness have upper quartiles near 0.5×, so their goal rests "
        "on the medians. The visual kinds also import their drawing modules only inside `render()`.",
        "",
        "**Serving** (`app/visuals/service.py`, `app/web/`). Rendered figures go to a disk cache "
        "(`PLOT_CACHE_DIR`) shared by the workers and kept across restarts: one file per figure under a "
        "stamp that hashes the drawing code and the library versions, written atomically with a checksum, "
        "pruned to a size bound, with a lock file per figure so one worker draws it and the others read "
        "it; a damaged file is drawn again and an unwritable folder degrades to memory with one warning. "
        "The pre-render starts after a worker's first response, takes disk hits first and pauses between "
        "figures, so it costs one worker rather than every worker. An answer page no longer draws its "
        "figure at all: the alt text and caption come from `kind.describe(params)` (the engine and the "
        "same text builders as the render, no matplotlib), and only the image request draws. So the first "
        "answer page after a cold start needs neither matplotlib's import (about a second here) nor a "
        "render.",
        "",
        "**HTTP** (pyinstrument of the views). A cached plot cost more than a static file mostly in "
        "Flask-Limiter's check; `RATE_LIMIT_PLOTS` now counts only renders and refused requests, so cached "
        "plots are never limited and cost about what a static file does. The answer page's profile was "
        "its template (about 37 %), the database (17 %: the attempt and its answers read twice), the "
        "session cookie (12 %) and Flask-Limiter (6 %): the attempt and its answers are now one prepared "
        "query per request, Flask-Limiter skips reads (all its limits are on POSTs), and rendered answer "
        "pages are kept in a per-process LRU keyed by everything the page shows (question, the student's "
        "variant if it has params, answer, progress, plot controls; dropped when the bank reloads), which "
        "took an answer page from about 2.5 ms to 1.1 ms in process. Cold start: `create_app` imports no "
        "matplotlib (a test checks it), so the first /healthz comes when Flask, NumPy, SQLAlchemy and "
        "pydantic are loaded and the banks validated" + (f" ({min(boot):.2f}–{max(boot):.2f} s after launch "
        "in this run)" if boot else "") + ". Worker memory stays near the 150 MB goal once matplotlib is "
        "loaded; its baseline is about 140 MB.",
        "",
        "**Found while measuring**: gunicorn's workers starting on a new SQLite database each run the "
        "auto-migration at once and raced table by table (`table responses already exists`, a worker "
        "failed to boot, gunicorn exited). `migrate` now retries until the schema converges, and "
        "`tests/test_persistence.py` races six processes on twelve new databases. The bench still runs "
        "`flask --app app init-db` first with `FLASK_DATABASE_AUTO_MIGRATE=false`, as the README advises "
        "for several servers.",
        "",
    ]


def _plot(results: dict, path: Path) -> None:
    """Three panels: engine ratio per size, plot ratio per kind, engine scaling; goals as lines."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.6, 7.0), dpi=100, layout="constrained")
    top, bottom = figure.subfigures(2, 1, height_ratios=[1, 1.1])
    engine_ax, scaling_ax = top.subplots(1, 2)
    plots_ax = bottom.subplots()
    engine = results.get("engine")
    if engine:
        labels = [f"N={r['size'][0]}\nd={r['size'][1]}, h={r['size'][2]}" for r in engine["sizes"]]
        ratios = [r["ratio"] for r in engine["sizes"]]
        goals = [0.6 if r["size"][0] == 16 else 1.25 for r in engine["sizes"]]
        colours = ["#2a9d8f" if r <= g else "#e76f51" for r, g in zip(ratios, goals)]
        engine_ax.bar(range(len(ratios)), ratios, color=colours)
        for i, goal in enumerate(goals):
            engine_ax.hlines(goal, i - 0.4, i + 0.4, colors="black", linestyles="--")
        engine_ax.axhline(1.0, color="0.6", linewidth=0.8)
        engine_ax.set_xticks(range(len(ratios)), labels=labels, fontsize=8)
        engine_ax.set_ylabel("ours / torch (time)")
        engine_ax.set_title("MHA forward vs torch (dashed: goal)", fontsize=10)
        scaling = engine["scaling"]
        scaling_ax.loglog(scaling["n"], scaling["ours_ms"], "o-", label=f"ours (slope {scaling['ours_exponent']:.2f})")
        scaling_ax.loglog(scaling["n"], scaling["torch_ms"], "s-", label=f"torch (slope {scaling['torch_exponent']:.2f})")
        scaling_ax.set_xlabel("N (d_model 256, 8 heads)")
        scaling_ax.set_ylabel("median time (ms), same run")
        scaling_ax.set_title("Scaling in N", fontsize=10)
        scaling_ax.legend(fontsize=8)
    plots = results.get("plots")
    if plots:
        names = [r["kind"] for r in plots]
        ratios = [r["ratio"] for r in plots]
        plots_ax.barh(range(len(names)), ratios, color=["#2a9d8f" if r <= 0.5 else "#e76f51" for r in ratios])
        plots_ax.axvline(0.5, color="black", linestyle="--", label="goal 0.5×")
        plots_ax.axvline(1.0, color="0.6", linewidth=0.8)
        plots_ax.set_yticks(range(len(names)), labels=names, fontsize=8)
        plots_ax.invert_yaxis()
        plots_ax.set_xlabel("cold render time, ours / naive pyplot")
        plots_ax.set_title("Visual kinds: cold render vs naive pyplot", fontsize=10)
        plots_ax.legend(fontsize=8, loc="lower right")
    figure.savefig(path, format="png", metadata={"Software": None})
