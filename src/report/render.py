#!/usr/bin/env python3
"""report/render.py — renders a campaign's report.json (gathered by report/report.cpp) as one
self-contained HTML file: plotly.js is inlined, the charts are built with Plotly's figure objects,
and nothing is fetched when the page opens (it works offline, from a copied folder).

Per problem: the leaderboard; the best candidate's time per workload beside eager PyTorch,
torch.compile (when timed) and the speed-of-light bound; the search curve (best so far against
candidates spent, by agent); the budget spent by each agent as the search went; the budget log; the
findings with the measurements they cite; the best solution's source.

After the charts are drawn, the page writes what it drew into <pre id="ka-render-check"> (per
chart: the points of each trace and the SVG points on the page; script errors caught on the page),
so a headless browser's --dump-dom can check that it rendered (tests/test_report.cpp).

usage: render.py REPORT_JSON OUT_HTML
"""
import html
import json
import math
import sys

import plotly
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

AGENT_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
INCUMBENT = "#111111"

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 0 24px 48px; color: #222; }
h1 { margin-bottom: 4px; } h2 { border-bottom: 2px solid #ddd; padding-bottom: 4px; margin-top: 40px; }
h3 { margin-top: 28px; }
.meta { color: #555; font-size: 14px; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; margin: 12px 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 14px; min-width: 120px; }
.card b { display: block; font-size: 20px; } .card span { color: #666; font-size: 12px; }
.unsolved { background: #fdecea; border: 1px solid #f5c2c0; border-radius: 6px; padding: 8px 12px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border-bottom: 1px solid #e5e5e5; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.best td { background: #eef7ee; }
code, pre { font-family: SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
pre.src { background: #f7f7f7; border: 1px solid #e5e5e5; padding: 10px; overflow-x: auto; max-height: 480px; }
.chart { width: 100%; height: 420px; }
.note { color: #666; font-size: 13px; }
#ka-render-check { display: none; }
"""

# Caught before anything else runs: script errors and console errors end up in the render check.
ERROR_TRAP = """
window.__kaErrors = [];
window.addEventListener('error', function (e) { window.__kaErrors.push(String(e.message || e)); });
window.addEventListener('unhandledrejection', function (e) { window.__kaErrors.push('unhandled: ' + String(e.reason)); });
(function () { var ce = console.error; console.error = function () {
  window.__kaErrors.push(Array.prototype.join.call(arguments, ' ')); ce.apply(console, arguments); }; })();
"""

DRAW = """
(function () {
  var figs = JSON.parse(document.getElementById('ka-figures').textContent);
  var config = {displaylogo: false, responsive: true};
  var draws = Object.keys(figs).map(function (id) {
    return Plotly.newPlot(id, figs[id].data, figs[id].layout, config);
  });
  Promise.all(draws).then(function () {
    var charts = {};
    Object.keys(figs).forEach(function (id) {
      var gd = document.getElementById(id);
      charts[id] = {
        rendered: gd.classList.contains('js-plotly-plot') && gd.querySelector('.main-svg') !== null,
        traces: gd.data.map(function (t) { return {name: t.name, points: (t.x || []).length}; }),
        svg_points: gd.querySelectorAll('.point').length
      };
    });
    document.getElementById('ka-render-check').textContent =
        JSON.stringify({ok: window.__kaErrors.length === 0, errors: window.__kaErrors, charts: charts});
  }).catch(function (e) {
    window.__kaErrors.push('draw: ' + String(e));
    document.getElementById('ka-render-check').textContent = JSON.stringify({ok: false, errors: window.__kaErrors});
  });
})();
"""


def esc(x):
    return html.escape(str(x), quote=True)


def us(x):
    if x is None or x == 0:
        return "-"
    return f"{x:,.3f}" if x < 100 else f"{x:,.1f}"


def layout(title, xtitle, ytitle, **kw):
    base = dict(title=dict(text=title, x=0.01), template="plotly_white", margin=dict(l=70, r=20, t=50, b=60),
                xaxis=dict(title=xtitle), yaxis=dict(title=ytitle), hovermode="closest",
                legend=dict(orientation="h", y=-0.22))
    base.update(kw)
    return base


def agent_colour(agents, a):
    return INCUMBENT if a == "engine" else AGENT_COLOURS[agents.index(a) % len(AGENT_COLOURS)]


def workload_figure(p):
    """The best candidate per workload beside eager PyTorch, torch.compile and the SOL bound."""
    best = p["best"]
    rows = best["per_workload"]
    x = [r["label"] for r in rows]
    fig = go.Figure()
    series = [(f"best: {best.get('name') or best['candidate'][:12]}", "median_us", "#2ca02c", "circle"),
              ("PyTorch eager", "reference_us", "#1f77b4", "square"),
              ("torch.compile", "compile_us", "#9467bd", "diamond"),
              ("speed-of-light bound", "sol_us", "#d62728", "triangle-down")]
    for name, key, colour, symbol in series:
        pts = [(xi, r[key]) for xi, r in zip(x, rows) if r.get(key)]
        if not pts:
            continue
        fig.add_trace(go.Scatter(x=[a for a, _ in pts], y=[b for _, b in pts], name=name, mode="lines+markers",
                                 marker=dict(color=colour, symbol=symbol, size=9), line=dict(color=colour, width=1.5),
                                 hovertemplate="%{x}<br>%{y:.3f} µs<extra>" + esc(name) + "</extra>"))
    fig.update_layout(layout("Time per workload (µs, log scale; lower is better)", None, "µs per call",
                             yaxis=dict(type="log", title="µs per call"), margin=dict(l=70, r=20, t=50, b=110),
                             legend=dict(orientation="h", y=-0.38),
                             xaxis=dict(type="category", categoryorder="array", categoryarray=x)))
    return fig


def search_figure(p, agents):
    """Best so far against candidates spent: each agent's candidates, its own best so far, the incumbent."""
    search = p["search"]
    fig = go.Figure()
    for a in agents:
        mine = [(i + 1, s) for i, s in enumerate(search) if s["agent"] == a and s["passed"]]
        if not mine:
            continue
        colour = agent_colour(agents, a)
        fig.add_trace(go.Scatter(x=[i for i, _ in mine], y=[s["geomean_us"] for _, s in mine], name=a, mode="markers",
                                 legendgroup=a, marker=dict(color=colour, size=8, opacity=0.8),
                                 text=[s["name"] for _, s in mine],
                                 hovertemplate="#%{x} %{text}<br>%{y:.3f} µs<extra>" + esc(a) + "</extra>"))
        xs, ys, b = [], [], math.inf
        for i, s in mine:
            b = min(b, s["geomean_us"])
            xs.append(i)
            ys.append(b)
        fig.add_trace(go.Scatter(x=xs, y=ys, name=f"{a}: best so far", mode="lines", legendgroup=a, showlegend=False,
                                 line=dict(color=colour, width=1, dash="dot", shape="hv"), hoverinfo="skip"))
    xs, ys, b = [], [], math.inf
    for i, s in enumerate(search):
        if s["passed"]:
            b = min(b, s["geomean_us"])
        if b < math.inf:
            xs.append(i + 1)
            ys.append(b)
    if xs:
        fig.add_trace(go.Scatter(x=xs, y=ys, name="incumbent (best so far)", mode="lines",
                                 line=dict(color=INCUMBENT, width=2.5, shape="hv"),
                                 hovertemplate="after %{x} candidates: %{y:.3f} µs<extra>incumbent</extra>"))
    fig.update_layout(layout("Search: geometric-mean time of each passing candidate, and the best so far",
                             "candidates spent", "geometric mean µs (log)", yaxis=dict(type="log", title="geometric mean µs"),
                             xaxis=dict(title="candidates spent", tick0=1, dtick=max(1, round(len(search) / 10)))))
    return fig


def budget_figure(p, agents):
    """The share of the candidates spent so far that each agent proposed (stacked, %)."""
    search = p["search"]
    n = len(search)
    fig = go.Figure()
    counts = {a: 0 for a in agents}
    shares = {a: [] for a in agents}
    for i, s in enumerate(search):
        counts[s["agent"]] += 1
        for a in agents:
            shares[a].append(100.0 * counts[a] / (i + 1))
    for a in agents:
        fig.add_trace(go.Scatter(x=list(range(1, n + 1)), y=shares[a], name=a, mode="lines", stackgroup="budget",
                                 line=dict(color=agent_colour(agents, a), width=0.5),
                                 hovertemplate="after %{x} candidates: %{y:.0f}%<extra>" + esc(a) + "</extra>"))
    fig.update_layout(layout("Budget: each agent's share of the candidates spent so far", "candidates spent",
                             "share of candidates (%)", yaxis=dict(range=[0, 100], title="share of candidates (%)"),
                             xaxis=dict(title="candidates spent", tick0=1, dtick=max(1, round(n / 10)))))
    return fig


def cards(p):
    best, lb = p["best"], p["leaderboard"]
    items = [("candidates", str(len(lb))), ("passing", str(sum(1 for s in p["search"] if s["passed"])))]
    if best:
        items.append(("best geomean µs", us(best.get("geomean_us"))))
        if best.get("speedup"):
            items.append(("speedup vs eager", f"{best['speedup']:.2f}×"))
        if best.get("sol_score") is not None:
            items.append(("SOL score", f"{best['sol_score']:.3f}"))
        if best.get("sol_ratio") is not None:
            items.append(("× speed-of-light", f"{best['sol_ratio']:.2f}"))
    return '<div class="cards">' + "".join(f"<div class='card'><b>{esc(v)}</b><span>{esc(k)}</span></div>"
                                           for k, v in items) + "</div>"


def fmt(x, spec, suffix=""):
    return "-" if x is None or x == 0 else format(x, spec) + suffix


def leaderboard_table(p, shown=15):
    head = ("<tr><th>rank</th><th>candidate</th><th>agent</th><th>family</th><th>knobs</th><th>passed</th>"
            "<th>geomean µs</th><th>speedup</th><th>SOL score</th><th>× SOL</th></tr>")

    def row(r):
        passed = r.get("workloads", 0) > 0 and r.get("passed_workloads") == r.get("workloads")
        cls = " class='best'" if r.get("rank") == 1 and passed else ""
        knobs = json.dumps(r.get("knobs", {}), separators=(",", ":"))
        short = knobs if len(knobs) <= 80 else knobs[:78] + "…"
        cells = [f"<td class='num'>{r.get('rank')}</td>",
                 f"<td><code>{esc(r.get('name') or r['candidate'][:12])}</code></td>",
                 f"<td>{esc(r.get('agent', ''))}</td>", f"<td>{esc(r.get('family', ''))}</td>",
                 f"<td><code title='{esc(knobs)}'>{esc(short)}</code></td>",
                 f"<td class='num'>{r.get('passed_workloads')}/{r.get('workloads')}</td>",
                 f"<td class='num'>{us(r.get('geomean_us')) if passed else '-'}</td>",
                 f"<td class='num'>{fmt(r.get('speedup'), '.2f', '×')}</td>",
                 f"<td class='num'>{fmt(r.get('sol_score'), '.3f')}</td>",
                 f"<td class='num'>{fmt(r.get('sol_ratio'), '.2f')}</td>"]
        return f"<tr{cls}>{''.join(cells)}</tr>"

    lb = p["leaderboard"]
    out = f"<table>{head}{''.join(row(r) for r in lb[:shown])}</table>"
    if len(lb) > shown:
        out += (f"<details><summary>the other {len(lb) - shown} candidates</summary>"
                f"<table>{head}{''.join(row(r) for r in lb[shown:])}</table></details>")
    return out


def workload_table(p):
    rows = p["best"]["per_workload"]
    head = ("<tr><th>workload</th><th>best µs</th><th>eager µs</th><th>torch.compile µs</th><th>SOL µs</th>"
            "<th>speedup vs eager</th><th>× SOL</th></tr>")
    body = ""
    for r in rows:
        sp = r["reference_us"] / r["median_us"] if r.get("reference_us") and r.get("median_us") else None
        xs = r["median_us"] / r["sol_us"] if r.get("sol_us") and r.get("median_us") else None
        body += (f"<tr><td>{esc(r['label'])}</td><td class='num'>{us(r['median_us'])}</td>"
                 f"<td class='num'>{us(r.get('reference_us'))}</td><td class='num'>{us(r.get('compile_us'))}</td>"
                 f"<td class='num'>{us(r.get('sol_us'))}</td><td class='num'>{fmt(sp, '.2f', '×')}</td>"
                 f"<td class='num'>{fmt(xs, '.2f')}</td></tr>")
    return f"<details><summary>the figures</summary><table>{head}{body}</table></details>"


def budget_log_table(p):
    moves = p["budget_moves"]
    if not moves:
        return "<p class='note'>The budget log has no moves for this problem: the shares stayed equal.</p>"
    body = "".join(f"<tr><td>{esc(m['at'])}</td><td>{esc(m['agent'])}</td>"
                   f"<td class='num'>{m['share_before']:.3f} → {m['share_after']:.3f}</td><td>{esc(m['reason'])}</td></tr>"
                   for m in moves)
    return (f"<details><summary>the budget log ({len(moves)} moves, with their reasons)</summary><table>"
            f"<tr><th>at (UTC)</th><th>agent</th><th>share</th><th>reason</th></tr>{body}</table></details>")


def claim_text(f):
    c = f.get("claim", {})
    kind = f.get("kind")
    if kind == "best_config":
        return (f"{esc(c.get('family'))} {esc(json.dumps(c.get('knobs'), separators=(',', ':')))} runs in ≤ "
                f"{us(c.get('median_us'))} µs")
    if kind == "dead_region":
        why = "fails" if c.get("reason") == "fails" else f"is slower than {us(c.get('slower_than_us'))} µs"
        return f"{esc(c.get('family'))}: {esc(c.get('knob'))} = {esc(c.get('value'))} {why}"
    if kind == "near_sol":
        return f"≤ {us(c.get('median_us'))} µs, within {100 * c.get('within', 0):.0f}% of SOL {us(c.get('sol_us'))} µs"
    return f"<code>{esc(json.dumps(c))}</code>"


def findings_table(p):
    fs = p["findings"]
    if not fs:
        return "<p class='note'>No findings were published for this problem.</p>"
    body = ""
    def citation(m):
        return (f"#{m['id']} <code>{esc(m['candidate'])}</code> on {esc(m['label'])}: {esc(m['verdict'])}"
                + (f", {us(m['median_us'])} µs" if m.get("median_us") else "")
                + (f" (eager {us(m['reference_us'])} µs)" if m.get("reference_us") else ""))

    for f in fs:
        ms = f["cited"]
        cited = "<br>".join(citation(m) for m in ms[:2])
        if len(ms) > 2:
            cited += (f"<details><summary>{len(ms) - 2} more</summary>"
                      + "<br>".join(citation(m) for m in ms[2:]) + "</details>")
        scope = esc(f.get("bucket") or "all workloads") + (f" · from {esc(f['origin'])}" if f.get("origin") else "")
        body += (f"<tr><td class='num'>{f['id']}</td><td>{esc(f['kind'])}</td><td>{esc(f['author'])}</td>"
                 f"<td>{scope}</td><td>{claim_text(f)}</td><td>{cited}</td></tr>")
    return (f"<table><tr><th>id</th><th>kind</th><th>author</th><th>scope</th><th>claim</th>"
            f"<th>cited measurements</th></tr>{body}</table>")


def sources_html(p):
    best = p["best"]
    out = f"<p class='note'>Written to <code>{esc(p['dir'])}/best/</code>.</p>"
    for s in best.get("sources", []):
        out += (f"<details open><summary><code>{esc(s.get('path'))}</code></summary>"
                f"<pre class='src'>{esc(s.get('content', ''))}</pre></details>")
    return out


def problem_section(i, p, figures):
    agents = []
    for s in p["search"]:
        if s["agent"] not in agents:
            agents.append(s["agent"])
    devices = ", ".join(p.get("devices") or []) or "-"
    h = (f"<section id='p{i}'><h2>{esc(p['name'])}</h2><p class='meta'>op type {esc(p.get('op_type') or '-')}"
         f" · device {esc(devices)} · {len(p['workloads'])} workloads · out folder <code>{esc(p['dir'])}</code></p>")
    if p.get("description"):
        h += f"<p class='note'>{esc(p['description'])}</p>"
    if not p["best"]:
        why = p.get("unsolved_reason") or "no candidate passed every workload"
        h += f"<p class='unsolved'>No passing candidate: {esc(why)}</p>"
    h += cards(p)
    if p["leaderboard"]:
        h += "<h3>Leaderboard</h3>" + leaderboard_table(p)
    if p["best"] and p["best"]["per_workload"]:
        figures[f"p{i}-workloads"] = workload_figure(p)
        h += (f"<h3>The best candidate per workload</h3><div class='chart' id='p{i}-workloads'></div>"
              + workload_table(p))
    if p["search"]:
        figures[f"p{i}-search"] = search_figure(p, agents)
        figures[f"p{i}-budget"] = budget_figure(p, agents)
        h += (f"<h3>Search</h3><div class='chart' id='p{i}-search'></div>"
              f"<h3>Budget</h3><div class='chart' id='p{i}-budget'></div>" + budget_log_table(p))
    h += "<h3>Findings</h3>" + findings_table(p)
    if p["best"]:
        h += "<h3>The best solution's source</h3>" + sources_html(p)
    return h + "</section>"


def page(report):
    figures = {}
    sections = "".join(problem_section(i, p, figures) for i, p in enumerate(report["problems"]))
    toc = "".join(f"<li><a href='#p{i}'>{esc(p['name'])}</a>: "
                  + (f"best {us(p['best'].get('geomean_us'))} µs" if p["best"] else "no passing candidate") + "</li>"
                  for i, p in enumerate(report["problems"]))
    figs_json = json.dumps({k: json.loads(f.to_json()) for k, f in figures.items()}).replace("</", "<\\/")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>KernelArc campaign report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{CSS}</style>
<script>{ERROR_TRAP}</script>
<script>{get_plotlyjs()}</script>
</head><body>
<h1>KernelArc campaign report</h1>
<p class="meta">campaign <code>{esc(report.get('campaign', ''))}</code> · out folder <code>{esc(report.get('out', ''))}</code>
 · charts by Plotly {esc(plotly.__version__)}; rebuild with <code>kernelarc report {esc(report.get('out', ''))}</code></p>
<ul>{toc}</ul>
{sections}
<script type="application/json" id="ka-figures">{figs_json}</script>
<pre id="ka-render-check"></pre>
<script>{DRAW}</script>
</body></html>
"""


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: render.py REPORT_JSON OUT_HTML")
    with open(sys.argv[1], encoding="utf-8") as f:
        report = json.load(f)
    text = page(report)
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    import os
    os.replace(tmp, sys.argv[2])


if __name__ == "__main__":
    main()
