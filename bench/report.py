"""Writes docs/benchmarks.md and its plot (docs/benchmarks.png, matplotlib's Figure API) from one run's results."""

from __future__ import annotations

from pathlib import Path

COMMAND = "bench/run"
GOOD, BAD = "#2a9d8f", "#e76f51"


def _ms(value: float) -> str:
    return f"{value:.3g} ms" if value < 100 else f"{value:.0f} ms"


def _status(met: bool | None) -> str:
    return {True: "**met**", False: "**not met**", None: "not measured"}[met]


def _over(value: float, target: float) -> str:
    """How far a value is past its target, in words (for goals not met)."""
    return f"{(value / target - 1) * 100:.0f} % over the target"


# --- the goals table --------------------------------------------------------------------------


def goals(results: dict) -> list[tuple[str, str, str, bool | None]]:
    """(goal, target, measured, met) rows, in the issue's order; met is None when not measured."""
    from .http import COLD_START_GOAL_S, P99_GOAL_MS, RSS_GOAL_MB, summarise

    rows: list[tuple[str, str, str, bool | None]] = []
    engine = results.get("engine")
    if engine:
        row = engine["sizes"][0]
        n, d, h = row["size"]
        rows.append((f"engine `MultiHeadAttention` / `torch.nn.MultiheadAttention`, N={n}, d_model={d}, {h} heads "
                     "(fp32, CPU, need_weights)", f"≤ {row['goal']}×",
                     f"{row['ratio']:.2f}× (IQR {row['ratio_iqr'][0]:.2f}–{row['ratio_iqr'][1]:.2f}; "
                     f"{_ms(row['ours_ms'])} vs {_ms(row['torch_ms'])})", row["ratio"] <= row["goal"]))
        worst = max(max(r["output_diff"], r["weights_diff"]) for r in engine["outputs"])
        rows.append(("engine outputs and per-head weights equal torch's (fp32, N=" +
                     ", ".join(str(r["size"][0]) for r in engine["outputs"]) + ")", "≤ 1e-5",
                     f"max abs diff {worst:.1e}", worst <= 1e-5))
    else:
        rows.append(("engine `MultiHeadAttention` / torch at N=16", "≤ 0.8×", "not run", None))
    plots = results.get("plots")
    if plots:
        goal = plots["goal_ratio"]
        for row in plots["kinds"]:
            name = f"cold render `{row['kind']}` / naive pyplot render"
            if "error" in row:
                rows.append((name, f"≤ {goal}×", "failed to render (see Cold renders)", None))
            else:
                rows.append((name, f"≤ {goal}×", f"{row['ratio']:.2f}× (IQR {row['ratio_iqr'][0]:.2f}–"
                             f"{row['ratio_iqr'][1]:.2f})", row["ratio"] <= goal))
    else:
        rows.append(("each kind's cold render / naive pyplot render", "≤ 0.75×", "not run", None))
    summary = summarise(results.get("load"), results.get("cold_start"))
    if results.get("load"):
        rows.append(("answer pages at 64 connections through the image's nginx and gunicorn: errors", "0",
                     f"{summary['errors']} of {summary['page_requests']:,} requests",
                     summary["errors"] == 0))
        rows.append(("answer pages at 64 connections through the image's nginx and gunicorn (each waiting a random "
                     "1 s on average between pages): p99 latency", f"< {P99_GOAL_MS} ms",
                     f"{summary['p99_ms']:.0f} ms (median of {results['load']['rounds']} runs, worst "
                     f"{summary['p99_worst_ms']:.0f} ms; {summary['p99_vs_static']:.2f}× a static file's p99)",
                     summary["p99_ms"] < P99_GOAL_MS))
        rows.append(("RSS per worker (peak, after the load and every figure the pages show; the app on its engine, "
                     "without the real model's bank)", f"< {RSS_GOAL_MB} MB",
                     f"{summary['peak_mb']:.0f} MB ({summary['peak_vs_booted']:.2f}× a just-booted worker)",
                     summary["peak_mb"] < RSS_GOAL_MB))
    else:
        rows += [("answer pages at 64 connections: errors", "0", "not run", None),
                 ("answer pages at 64 connections: p99", "< 150 ms", "not run", None),
                 ("RSS per worker", "< 150 MB", "not run", None)]
    if results.get("cold_start"):
        rows.append(("cold start: gunicorn launch to the first answer page (the app on its engine, without the real "
                     "model's bank)", f"< {COLD_START_GOAL_S:g} s",
                     f"{summary['cold_start_s']:.2f} s (median of {results['cold_start']['rounds']}, worst "
                     f"{summary['cold_start_worst_s']:.2f} s; {summary['cold_start_vs_bare']:.2f}× a bare gunicorn's "
                     "first response)", summary["cold_start_s"] < COLD_START_GOAL_S))
    else:
        rows.append(("cold start to the first answer page", "< 2 s", "not run", None))
    from . import model

    return rows + model.goal_rows(results.get("model"))


# --- the document -----------------------------------------------------------------------------


def write(results: dict, out: str) -> None:
    out_path = Path(out)
    png = out_path.with_suffix(".png")
    _plot(results, png)
    rows = goals(results)
    lines = _how_section(results) + _machine_section(results["machine"])
    lines += ["## Goals", "", "| goal | target | measured | |", "|---|---|---|---|"]
    lines += [f"| {goal} | {target} | {measured} | {_status(met)} |" for goal, target, measured, met in rows]
    missed = [row for row in rows if row[3] is False]
    unmeasured = [row for row in rows if row[3] is None]
    lines += ["", f"{len(rows) - len(missed) - len(unmeasured)} of {len(rows)} goals met"
              + (f", {len(missed)} not met" if missed else "")
              + (f", {len(unmeasured)} not measured" if unmeasured else "") + " in this run.", "",
              f"![Each goal's ratio in this run]({png.name})", ""]
    lines += _engine_section(results.get("engine"))
    lines += _plots_section(results.get("plots"))
    why = results.get("why", {})
    lines += _load_section(results.get("load"), why.get("answer_page"))
    lines += _memory_section(results.get("load"), why.get("memory"))
    lines += _cold_start_section(results.get("cold_start"), why.get("create_app"))
    from . import model

    lines += model.section(results.get("model"))
    out_path.write_text("\n".join(lines).rstrip() + "\n" + _other_sections(out_path, lines))


def _other_sections(out_path: Path, lines: list[str]) -> str:
    """The sections of the existing file that this run does not write (bench.hostile's "Hostile load", the slow-
    client test's "Slow clients"), kept as they were, after this run's."""
    if not out_path.exists():
        return ""
    ours = {line for line in lines if line.startswith("## ")}
    kept, keeping = [], False
    for line in out_path.read_text().splitlines():
        if line.startswith("## "):
            keeping = line not in ours
        if keeping:
            kept.append(line)
    return "\n" + "\n".join(kept).rstrip() + "\n" if kept else ""


def _how_section(results: dict) -> list[str]:
    timings = results.get("timings", {})
    return [
        "# Benchmarks",
        "",
        f"Written by `{COMMAND}` on {results['started']} from one run of {results['elapsed_s'] / 60:.1f} minutes"
        + (" (" + ", ".join(f"{name} {t['seconds'] / 60:.1f} min" for name, t in timings.items()) + ")" if timings else "")
        + ". `bench/run` installs what the bench needs into the project's venv (the app as `make venv` installs it, "
        "then its `bench` extra: torch 2.13.0, the CPU build, and threadpoolctl; and Debian's `wrk` and `nginx`), then runs `python -m bench`. "
        "The raw numbers are in `bench/last-run.json`."
        + (" **Quick run (`--quick`): a smoke test with few rounds; do not quote these numbers.**"
           if results.get("quick") else "")
        + "".join(f" The {section} section comes from the run of {started} (`--keep`)."
                  for section, started in results.get("carried_over", {}).items()),
        "",
        "Options go through to `python -m bench`: `--quick` (a smoke test, written to a temporary folder, never "
        "over this file), `--only engine,plots,http,model`, `--seconds N` (each wrk run, default 10), `--keep` (with "
        "`--only`: the other sections from the last run), `--profile` (profile every goal, not only those "
        "missed). `VENV=path bench/run` uses another venv.",
        "",
        "The machine is shared and noisy, so **each goal is measured against a baseline in the same run**. "
        "The engine and the renders are timed in alternation (ABAB: each round runs one batch of each "
        "contender, the order flipping every round, with a 0.15 s rest between batches so one library's "
        "spinning BLAS/OpenMP threads do not steal the cores from the next). Each contender lives in its own "
        "worker process, so NumPy's OpenBLAS and torch's MKL/OpenMP never share a process and the naive "
        "baseline's patches never reach the app. A ratio is the median over rounds of that round's ratio; "
        "IQR is the spread of the per-round ratios. The server goals have absolute targets; each is shown "
        "with the same-run baseline it is read against (a static file under the same load, alternating "
        "with the answer pages; a just-booted worker; a bare gunicorn launched between the app's launches). "
        "Absolute times are for orientation only.",
        "",
    ]


def _machine_section(m: dict) -> list[str]:
    return [
        "## Machine",
        "",
        "| | |",
        "|---|---|",
        f"| CPU | {m['cpu']}, {m['cores']} cores, {m.get('memory_gb', 0):.0f} GB |",
        f"| load average at start / end (1, 5, 15 min) | {', '.join(f'{x:.2f}' for x in m['load_average'])} / "
        f"{', '.join(f'{x:.2f}' for x in m.get('load_average_end', ()))} |",
        f"| Python / NumPy / matplotlib | {m['python']} / {m['numpy']} / {m['matplotlib']} |",
        f"| torch | {m['torch']} |",
        f"| NumPy's BLAS (threadpoolctl) | {'; '.join(m['blas'])} |",
        "| BLAS environment of the bench | " + ", ".join(f"`{k}`={v}" for k, v in m["environment"].items()) + " |",
        f"| Flask / gunicorn / wrk | {m.get('flask', '?')} / {m.get('gunicorn', '?')} / {m['wrk']} |",
        f"| kernel | {m['kernel']} |",
        "",
    ]


def _engine_section(engine) -> list[str]:
    if not engine:
        return ["## Engine", "", "Not run (`--only`).", ""]
    lines = [
        "## Engine: `MultiHeadAttention` against `torch.nn.MultiheadAttention`",
        "",
        "Self-attention on one sequence `x` of shape `(N, d_model)`, float32, both on the CPU: ours is "
        "`MultiHeadAttention.init(d_model, heads, seed=0, dtype=np.float32)` called as `mha(x)`, pure NumPy "
        "(the engine has no other path); torch's is `torch.nn.MultiheadAttention(d_model, heads, "
        "batch_first=True)` in eval mode under `no_grad`, holding the same weights (`in_proj_weight = "
        "[w_q|w_k|w_v]ᵀ`, `out_proj.weight = w_oᵀ`), called as `model(x, x, x, need_weights=True, "
        "average_attn_weights=False)` on `(1, N, d_model)`. So both return the output and the per-head weights "
        "`(h, N, N)`. Both use their library's default threads. The goal is at the app's working size; N = 256 "
        "is reported without one.",
        "",
        "| N, d_model, heads | ours | torch | ours / torch | IQR | fastest tenth: ours, torch, ratio | goal | rounds × calls per batch |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in engine["sizes"]:
        n, d, h = row["size"]
        goal = f"≤ {row['goal']}×" if row["goal"] else "none (reported)"
        calls = row.get("calls_per_batch", {})
        lines.append(f"| {n}, {d}, {h} | {_ms(row['ours_ms'])} | {_ms(row['torch_ms'])} | **{row['ratio']:.2f}×** | "
                     f"{row['ratio_iqr'][0]:.2f}–{row['ratio_iqr'][1]:.2f} | "
                     + (f"{_ms(row['ours_fast_ms'])}, {_ms(row['torch_fast_ms'])}, {row['fast_decile_ratio']:.2f}× | "
                        if "fast_decile_ratio" in row else "– | ")
                     + f"{goal} | "
                     f"{row['rounds']} × {calls.get('ours', '?')} / {calls.get('torch', '?')} |")
    lines += ["", "The ratio is the median over rounds of the paired ratio (each round's two batches run back to back, "
              "in alternating order, about 0.1 s apart). As a cross-check, the fastest tenth column compares each "
              "contender's 10th-percentile batch: noise from the machine's other tenants only ever adds time, so "
              "the fast batches are the least disturbed. When the IQR is wide and the two ratios disagree, the "
              "run was noisier than the comparison can resolve; the goal is still judged on the paired median."]
    lines += ["", "**Equality** (float32, same weights and input; max |ours − torch|): " + "; ".join(
        f"N={r['size'][0]}: output {r['output_diff']:.1e}, weights {r['weights_diff']:.1e}" for r in engine["outputs"])
        + ". The goal is 1e-5.", ""]
    costs = engine.get("line_costs")
    if costs:
        n, d, h = costs["size"]
        lines += [
            f"**Where the time goes** at N={n}, d_model={d}, {h} heads: each line of `app/engine/` timed with a "
            f"line tracer over 400 calls (exclusive times: a line's NumPy work counts on it, another engine "
            f"function's lines on their own). One pass is {costs['untraced_us']:.0f} µs untraced, "
            f"{costs['traced_us']:.0f} µs traced: the tracer adds about a microsecond to every line, so cheap "
            "lines look dearer than they are.",
            "",
            "| line | source | µs per pass | runs per pass |",
            "|---|---|---|---|",
        ]
        for row in costs["lines"][:12]:
            source = row["source"].replace("|", "\\|")
            lines.append(f"| `{row['where']}` | `{source}` | {row['us_per_call']:.1f} | {row['hits_per_call']:.0f} |")
        lines.append("")
    return lines


def _plots_section(plots) -> list[str]:
    if not plots:
        return ["## Cold renders", "", "Not run (`--only`).", ""]
    goal = plots["goal_ratio"]
    lines = [
        "## Cold renders: each kind against a naive pyplot render of the same figure",
        "",
        "**Ours** is a cold render as the bench has always defined it: `kind.render(kind.parse({}))`, the kind's "
        "default params, called again and again in one process with no cache of rendered figures in between "
        "(the app's one cache, the LRU in `app/visuals/service.py`, is not involved). Each call is the whole "
        "sequence: the engine (`kind.compute`), the alt text and caption, `kind.draw` (through "
        "`app.plots.figure.new_figure`) and the PNG (SVG for `head-split`). What a process keeps between calls "
        "is what it keeps in service too: matplotlib's font and text-metrics caches (the naive render has them "
        "as well) and the app's outlines of cell-number strings.",
        "",
        "**Naive** (`bench/naive_plots.py`) draws the same figure the way a first version would: the same "
        "`kind.describe` (engine, alt text, caption) and `kind.draw`, but `new_figure` makes a pyplot figure "
        "(`plt.figure`, no layout engine), the heatmaps' cell numbers are one `ax.text` per cell, and the image "
        "is `fig.tight_layout()`, `fig.savefig(...)` at 100 dpi (SVG for an SVG kind), `plt.close(fig)`. So the "
        "panels, titles, labels, colour bars and numbers are the same, and positions differ a little.",
        "",
        "**Drawing alone** (a third worker in the same rounds, PNG kinds) is ours without the image: the engine, "
        "the words, `kind.draw` and `canvas.draw()`, the work both renders do. Its time over the naive render's is the "
        "lowest ratio that any way of turning the drawing into an image (layout, encoding, figure factory) could "
        "reach; where it is above the goal, only drawing less, which the naive render would share, could meet it.",
        "",
        f"Goal: ours ≤ {goal}× naive for every kind. {plots['rounds']} rounds of about 0.6 s batches per contender.",
        "",
    ]
    reference = plots.get("reference")
    if reference:
        lines += [f"**The issue's reference figure** (`bench/reference.py`: a 10×10 annotated heatmap with a colour bar, "
                  "drawn by `app.plots.figure.heatmap` on a fixed-position `Figure`, the naive way as above; the issue "
                  f"measured 0.72×): ours {_ms(reference['ours_ms'])}, naive {_ms(reference['naive_ms'])}, "
                  f"**{reference['ratio']:.2f}×** (IQR {reference['ratio_iqr'][0]:.2f}–{reference['ratio_iqr'][1]:.2f}).",
                  ""]
    lines += [
        "| kind | ours | naive | ours / naive | IQR | drawing alone / naive | |",
        "|---|---|---|---|---|---|---|",
    ]
    failed = []
    for row in plots["kinds"]:
        if "error" in row:
            failed.append(row)
            lines.append(f"| `{row['kind']}` | – | – | failed to render | – | – | not measured |")
            continue
        floor = f"{row['floor']:.2f}×" if "floor" in row else "– (SVG)"
        lines.append(f"| `{row['kind']}` | {_ms(row['ours_ms'])} | {_ms(row['naive_ms'])} | **{row['ratio']:.2f}×** | "
                     f"{row['ratio_iqr'][0]:.2f}–{row['ratio_iqr'][1]:.2f} | {floor} | "
                     + (_status(True) if row["ratio"] <= goal else f"{_status(False)}, {_over(row['ratio'], goal)}")
                     + " |")
    lines.append("")
    for row in failed:
        error = " ".join(row["error"].split())[-600:].replace("|", "\\|")
        lines += [f"`{row['kind']}` did not render in this run (its worker exited): `…{error}`", ""]
    for row in plots["kinds"]:
        if "profile" not in row:
            continue
        lines += [f"**Profile of `{row['kind']}`** (cProfile, 5 renders each; share of the render's own time):", ""]
        for label in ("ours", "naive"):
            prof = row["profile"][label]
            top = ", ".join(f"`{r['function']}` {r['own_share'] * 100:.0f} %" for r in prof["top_own"][:8])
            cumulative = ", ".join(f"`{r['function']}` {r['cum_share'] * 100:.0f} %" for r in prof["top_cumulative"][:10])
            lines += [f"- {label} ({prof['seconds_per_call'] * 1e3:.0f} ms per render under the profiler): most own "
                      f"time in {top}; most time including callees in {cumulative}."]
        lines.append("")
    return lines


def _calls(rows: list[dict], count: int = 8) -> str:
    return ", ".join(f"`{r['function']}` {r['ms_per_call']:.2f} ms" for r in rows[:count])


def _load_section(load, why=None) -> list[str]:
    if not load:
        return ["## Answer pages under load", "", "Not run (`--only`, or wrk missing).", ""]
    from .http import BANK, MODEL_BANK, THINK_MS, summarise

    summary = summarise(load, None)
    g = load["gunicorn"]
    lines = [
        "## Answer pages under load",
        "",
        f"The server is launched as the image launches it: `docker/entrypoint.sh gunicorn --config "
        f"docker/gunicorn.conf.py \"app:create_app()\"` (the secret-key check, `flask init-db`, then gunicorn), "
        f"with the Dockerfile's runtime `ENV` settings read from it: {g['GUNICORN_WORKERS']} workers × "
        f"{g['GUNICORN_THREADS']} threads (gthread), timeout {g['GUNICORN_TIMEOUT']} s, "
        f"`OPENBLAS_NUM_THREADS={g['OPENBLAS_NUM_THREADS']}`, auto-migration off, access log on. As in the image "
        "(`docker/serve.sh`), gunicorn listens on a unix socket behind nginx with `docker/nginx.conf`, which "
        "reads each request whole before gunicorn sees it. Only the places differ: nginx listens on 127.0.0.1, "
        "SQLite, the secret and nginx's files live in a temporary instance folder, and every bundled bank but the "
        f"real model's (`{MODEL_BANK}`) is served: with that bank the master loads the model and runs it on each "
        "variant's sentence, and a server with it has issue 13's goals, measured in the real-model section below; "
        "these goals (issue 11's) are the app's on its own engine. The app's modules are compiled to bytecode "
        "first, as the image's `pip install` of the wheel does (the image, and so the bench's server, sets "
        "`PYTHONDONTWRITEBYTECODE=1`). The per-session rate limits are lifted (64 connections from one address "
        "are the load here, not abuse).",
        "",
        f"A student answers every question of the seed bank (`{BANK}`) and opens each answer page once; then 8 connections "
        "open every page once more, so that both workers have computed each page's visual. Then wrk "
        f"(2 threads, {load['connections']} connections, keep-alive) requests that student's "
        f"{len(load['answer_paths'])} answer pages in turn, with its session cookie, for {load['seconds']} s. "
        f"After each response a connection waits a random time (exponential, mean {THINK_MS / 1000:g} s, at most "
        f"{4 * THINK_MS / 1000:g} s, within nginx's keep-alive) before its "
        f"next request, as {load['connections']} students reading their pages would, and before its first one, "
        "so that they arrive independently rather than in one burst at the first instant. (Until 2026-12-01 "
        "18:55 UTC the bench sent every connection's first request at the same instant, straight to gunicorn: "
        "that one burst of 64 made the p99, 268 ms in that day's last run of it.) Alternating with it (ABAB, "
        f"{load['rounds']} rounds each), the same wrk fetches `/static/style.css` from the same server, the "
        "baseline: Flask's own static route, with the same middleware, session and headers, but no database, "
        "template or visual. wrk runs on the same two cores as gunicorn. The goal's p99 is the median of the "
        "runs' p99s; errors are summed over all runs (connect, read, write, timeout over 10 s, and any status "
        "other than 2xx/3xx). Last, each scenario once with no wait at all (every connection sends its next "
        "request as soon as it has the last answer): the server's capacity, not a goal.",
        "",
        "| run | scenario | requests/s | p50 | p90 | p99 | max | errors |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def row(label: str, name: str, r: dict) -> str:
        return (f"| {label} | {name} | {r['rps']:.0f} | {r['p50_us'] / 1e3:.0f} ms | {r['p90_us'] / 1e3:.0f} ms | "
                f"{r['p99_us'] / 1e3:.0f} ms | {r['max_us'] / 1e3:.0f} ms | {r['errors']} |")

    for index in range(load["rounds"]):
        for name in ("answer pages", "static file"):
            lines.append(row(str(index + 1), name, load[name][index]))
    for name in ("answer pages", "static file"):
        if f"{name}, saturated" in load:
            lines.append(row("–", f"{name}, saturated (not a goal)", load[f"{name}, saturated"]))
    lines += ["", f"Answer pages: p99 **{summary['p99_ms']:.0f} ms** (median over runs; {summary['p99_vs_static']:.2f}× "
              f"the static file's p99 in the same rounds), **{summary['errors']} errors**."]
    if "capacity_rps" in summary:
        lines += ["", f"Capacity: {summary['capacity_rps']:.0f} answer pages per second with all "
                  f"{load['connections']} connections busy ({summary['capacity_vs_static']:.2f}× the static "
                  f"file's). Saturated, a request's latency is mostly its wait in the queue, on average "
                  f"{load['connections']} / throughput ({load['connections'] * 1e3 / summary['capacity_rps']:.0f} ms "
                  "here), whatever the page costs: that row measures throughput, the goal's rows latency."]
    lines.append("")
    if why and "error" not in why:
        lines += [f"**Why** (`python -m bench.why answer_page`, Flask's test client, one thread): an answer page "
                  f"takes {why['answer_page_ms']:.2f} ms against {why['static_file_ms']:.2f} ms for the static file "
                  f"({why['ratio']:.2f}×, interleaved). Costliest calls per page, including callees: "
                  f"{_calls([r for r in why['top'] if not r['function'].startswith(('werkzeug/test.py', 'flask/app.py'))], 10)}. Most own time: {_calls(why['top_own'], 8)}.", ""]
    elif why:
        lines += [f"**Why**: `python -m bench.why answer_page` failed: `{' '.join(why['error'].split())[-400:]}`", ""]
    return lines


def _memory_section(load, why=None) -> list[str]:
    if not load:
        return ["## Worker memory", "", "Not run.", ""]
    booted, pages, after = load["memory_booted"], load["memory_after_pages"], load["memory"]
    figures = load["figures"]
    entries = load.get("cache_entries", 256)
    per_visual = figures["image_bytes"] / max(figures["visuals"], 1)
    lines = [
        "## Worker memory",
        "",
        "RSS of each gunicorn worker from `/proc/PID/status` on the load test's server: just after boot (the "
        "app loaded, no request yet: the baseline), after the answer-page runs, and after 8 connections each "
        f"fetched every image those pages show ({figures['urls']} URLs: 1x, 2x and the phone layout), so that "
        "both workers have imported matplotlib and drawn every one of them. The goal is the largest peak "
        "(`VmHWM`) of any worker at the end.",
        "",
        "| when | largest RSS | largest peak (VmHWM) | each worker's RSS | of the largest: mapped files, heap |",
        "|---|---|---|---|---|",
    ]
    for label, m in (("just booted", booted), ("after the answer pages", pages), ("after every figure", after)):
        split = f"{m['file_mb']:.0f} MB, {m['anon_mb']:.0f} MB" if "file_mb" in m else "–"
        lines.append(f"| {label} | {m['rss_mb']:.0f} MB | {m['peak_mb']:.0f} MB | "
                     + ", ".join(f"{x:.0f} MB" for x in m.get("each_rss_mb", [])) + f" | {split} |")
    lines += [
        "",
        f"Peak **{after['peak_mb']:.0f} MB**, {after['peak_mb'] / max(booted['rss_mb'], 1e-9):.2f}× a just-booted "
        "worker. RSS counts the pages of mapped files too (the libraries), which every worker shares with the "
        "others, and the pages the master built before the fork, which the workers share until they write to "
        "them; the heap column is a worker's anonymous pages, shared or not. "
        + ("The real model's weights are mapped in a worker here (`/proc/PID/maps`): the banks served load it. "
           if after.get("model_mapped") else "No worker here has the real model loaded (no worker maps its weights, "
           "`/proc/PID/maps`); the real-model section measures one that has. ")
        + f"The figure fetches: {figures['requests']} requests in {figures['seconds']:.1f} s, slowest "
        f"{figures['max_s']:.2f} s (the first request for a figure draws it), {figures['errors']} errors"
        + (f" ({', '.join(figures['error_kinds'])})" if figures["errors"] else "")
        + (f"; {figures['retried_503']} times a worker's render slots were all taken (503 with Retry-After), and "
           "the request was repeated after the wait it named" if figures.get("retried_503") else "") + ".",
        "",
        f"What this does not reach: the render cache keeps up to {entries} visuals per worker, each with up to "
        f"four images (1x, 2x, wide and phone). These {figures['visuals']} visuals average "
        f"{per_visual / 1e3:.0f} kB of images each, so a worker whose cache is full of figures like them would "
        f"hold about {per_visual * entries / 1e6:.0f} MB more than here (an estimate, not measured: filling it "
        "takes hundreds of renders).",
        "",
    ]
    if why and "error" not in why:
        lines += ["**Why** (`python -m bench.why memory`: one process, one thread, `/proc/self/smaps_rollup`):", "",
                  "| step | RSS | of it anonymous (heap) | peak |", "|---|---|---|---|"]
        lines += [f"| {step['step']} | {step['rss_mb']:.0f} MB | {step['anonymous_mb']:.0f} MB | {step['peak_mb']:.0f} MB |"
                  for step in why["steps"]]
        lines += ["", "A worker draws one figure at a time too (`RENDER_LOCK`), but its threads share two malloc "
                  "arenas, and it served the answer pages first, so it ends a little higher than this "
                  "single-threaded process.", ""]
    elif why:
        lines += [f"**Why**: `python -m bench.why memory` failed: `{' '.join(why['error'].split())[-400:]}`", ""]
    return lines


def _cold_start_section(cold, why=None) -> list[str]:
    if not cold:
        return ["## Cold start", "", "Not run (`--only`, or wrk missing).", ""]
    from .http import summarise

    summary = summarise(None, cold)
    app, bare = cold["launches"]["app"], cold["launches"]["bare gunicorn"]
    lines = [
        "## Cold start",
        "",
        "A student answers every question on a first server, which is then stopped. Then the image's start is "
        "repeated on the same instance folder (its database and secret key): `docker/entrypoint.sh gunicorn ...` "
        f"as above, while the student's answer page `{cold['path']}` is polled every 10 ms with the student's "
        "cookie until it is served (200), and then that page's figure is fetched once. The goal's time runs "
        "from the moment the entrypoint hands over to gunicorn (`exec`) to the first served answer page; the "
        "entrypoint's own work before it (the secret-key check and `flask init-db`, each a Python start) is "
        "shown beside it. The baseline, launched between the app's launches (ABAB), is the same gunicorn with "
        "the same settings serving a WSGI app that imports nothing (`bench/wsgi.py`), timed to its first 200.",
        "",
        "| launch | entrypoint before gunicorn | gunicorn to first answer page | CPU time by then (master + busier worker) | then its figure (from gunicorn's start) | bare gunicorn's first response |",
        "|---|---|---|---|---|---|",
    ]
    for index, (a, b) in enumerate(zip(app, bare)):
        lines.append(f"| {index + 1} | {a['preamble_s']:.2f} s | {a['answer_page_s']:.2f} s | "
                     + (f"{a['cpu_s']['master']:.2f} + {max(a['cpu_s']['workers'], default=0):.2f} s | " if "cpu_s" in a else "– | ")
                     + f"{a['image_s']:.2f} s "
                     f"(status {a['image_status']}) | {b['first_response_s']:.2f} s |")
    lines += ["", f"Median **{summary['cold_start_s']:.2f} s** from gunicorn's start to the first answer page "
              f"({summary['cold_start_vs_bare']:.2f}× the bare gunicorn's {summary['bare_s']:.2f} s), "
              f"{summary['preamble_s'] + summary['cold_start_s']:.2f} s from the entrypoint's start. The answer "
              "page computes its visual's numbers and words but draws nothing; its figure, which needs "
              f"matplotlib's import and a render, follows at {summary['image_s']:.2f} s.", "",
              "The machine's other tenants slow a launch more than anything else here, since it is CPU-bound on "
              "two cores: the master imports and builds the app once (`preload_app`), then forks the workers. The CPU "
              "time they used "
              f"until the page was served (master + the busier worker, read from `/proc`) is {summary['cpu_bound_s']:.2f} s "
              "(median), about what the launch would take on two idle cores.", ""]
    if why and "error" not in why:
        lines += [f"**Why** (`python -m bench.why create_app`, one process): `import app` {why['import_app_s']:.2f} s, "
                  f"then `create_app()` {why['create_app_s']:.2f} s (under the profiler), which gunicorn's master runs "
                  f"once before it forks the workers. Costliest calls in `create_app()`, including callees: "
                  f"{_calls(why['top'], 10)}.", ""]
    elif why:
        lines += [f"**Why**: `python -m bench.why create_app` failed: `{' '.join(why['error'].split())[-400:]}`", ""]
    return lines


# --- the plot ---------------------------------------------------------------------------------


def _plot(results: dict, path: Path) -> None:
    """Three panels: the engine's ratio per size, each kind's render ratio, the server goals; goals dashed."""
    from matplotlib.figure import Figure

    from .http import COLD_START_GOAL_S, P99_GOAL_MS, RSS_GOAL_MB, summarise

    figure = Figure(figsize=(7.6, 7.2), dpi=100, layout="constrained")
    top, bottom = figure.subfigures(2, 1, height_ratios=[1, 1.15])
    engine_ax, server_ax = top.subplots(1, 2)
    plots_ax = bottom.subplots()
    engine = results.get("engine")
    if engine:
        sizes = engine["sizes"]
        ratios = [r["ratio"] for r in sizes]
        engine_ax.bar(range(len(sizes)), ratios,
                      color=[GOOD if r["goal"] is None or r["ratio"] <= r["goal"] else BAD for r in sizes])
        for i, row in enumerate(sizes):
            if row["goal"]:
                engine_ax.hlines(row["goal"], i - 0.4, i + 0.4, colors="black", linestyles="--")
        engine_ax.axhline(1.0, color="0.6", linewidth=0.8)
        engine_ax.set_xticks(range(len(sizes)), labels=[
            f"N={r['size'][0]}, d={r['size'][1]}, h={r['size'][2]}" + ("" if r["goal"] else "\n(no goal)")
            for r in sizes], fontsize=8)
        engine_ax.set_ylabel("ours / torch (time)")
    engine_ax.set_title("Engine vs torch (dashed: goal)", fontsize=10)
    summary = summarise(results.get("load"), results.get("cold_start"))
    server = []
    if "p99_ms" in summary:
        server += [("answer p99", summary["p99_ms"] / P99_GOAL_MS), ("RSS", summary["peak_mb"] / RSS_GOAL_MB)]
    if "cold_start_s" in summary:
        server.append(("cold start", summary["cold_start_s"] / COLD_START_GOAL_S))
    if results.get("model"):
        from . import model

        real = model.summarise(results["model"])
        if "forward" in real:
            server.append(("model pass", real["forward"]["ratio"] / model.FORWARD_GOAL))
        if "p99_ms" in real:
            server += [("model p99", real["p99_ms"] / model.P99_GOAL_MS),
                       ("model RSS", real["peak_mb"] / model.RSS_GOAL_MB),
                       ("2 workers", real["shared_ratio"] / model.SHARED_GOAL)]
        if "first_figure_s" in real:
            server.append(("model figure", real["first_figure_s"] / model.FIRST_FIGURE_GOAL_S))
    if server:
        server_ax.bar(range(len(server)), [v for _, v in server], color=[GOOD if v < 1 else BAD for _, v in server])
        server_ax.set_xticks(range(len(server)), labels=[name for name, _ in server], fontsize=8, rotation=90)
    server_ax.axhline(1.0, color="black", linestyle="--")
    server_ax.set_ylabel("measured / target")
    server_ax.set_title("Server goals (dashed: the target)", fontsize=10)
    plots = results.get("plots")
    if plots:
        kinds = plots["kinds"]
        goal = plots["goal_ratio"]
        ratios = [r.get("ratio", 0.0) for r in kinds]
        plots_ax.barh(range(len(kinds)), ratios, color=[GOOD if r.get("ratio", 9) <= goal else BAD for r in kinds])
        for i, row in enumerate(kinds):
            if "error" in row:
                plots_ax.text(0.02, i, "failed to render", va="center", fontsize=8, color=BAD)
        plots_ax.axvline(goal, color="black", linestyle="--", label=f"goal {goal}×")
        plots_ax.axvline(1.0, color="0.6", linewidth=0.8)
        plots_ax.set_yticks(range(len(kinds)), labels=[r["kind"] for r in kinds], fontsize=8)
        plots_ax.invert_yaxis()
        plots_ax.set_xlabel("cold render time, ours / naive pyplot")
        plots_ax.legend(fontsize=8, loc="lower right")
    plots_ax.set_title("Visual kinds: cold render vs naive pyplot", fontsize=10)
    figure.savefig(path, format="png", metadata={"Software": None})
