// The convergence plot of a tuning session, as inline SVG: every trial's value against the runs
// spent when it finished, the best so far as a step line, one colour per strategy; failed
// trials as crosses along the top, capped ones as triangles at their lower bound.
'use strict';

// Round tick values from at or below `lo` to at or above `hi`; whole numbers when `whole`.
function niceTicks(lo, hi, count, whole) {
  if (!(hi > lo)) { const d = Math.abs(lo) * 0.1 || 1; lo -= d; hi += d; }
  const raw = (hi - lo) / Math.max(1, count);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  let step = (whole ? [1, 2, 5, 10] : [1, 2, 2.5, 5, 10]).map((f) => f * mag).find((s) => s >= raw) || raw;
  if (whole) step = Math.max(1, Math.round(step));
  const ticks = [];
  const first = Math.floor(lo / step), last = Math.ceil(hi / step - 1e-9);
  for (let k = first; k <= last; k++) ticks.push(Number((k * step).toPrecision(12)));
  return ticks;
}

// series: [{name, trials: [{index, runs_before, repeats, ok, capped, value, config?}]}].
// options: {maximize, reference (the default's value or null), objective (axis label)}.
function convergencePlot(series, options) {
  const W = 760, H = 340, M = {l: 64, r: 16, t: 16, b: 44};
  const pw = W - M.l - M.r, ph = H - M.t - M.b;
  const better = (a, b) => (options.maximize ? a > b : a < b);
  const points = [];
  let maxRuns = 1;
  series.forEach((s, si) => s.trials.forEach((t) => {
    const x = (t.runs_before || 0) + (t.repeats || 0);
    maxRuns = Math.max(maxRuns, x);
    points.push({s: si, t, x});
  }));
  const values = points.filter((p) => p.t.value !== null && Number.isFinite(p.t.value)).map((p) => p.t.value);
  if (options.reference !== null && Number.isFinite(options.reference)) values.push(options.reference);
  let lo = values.length ? Math.min(...values) : 0, hi = values.length ? Math.max(...values) : 1;
  const yt = niceTicks(lo, hi, 5);
  lo = Math.min(lo, yt[0]); hi = Math.max(hi, yt[yt.length - 1]);
  const xt = niceTicks(0, maxRuns, Math.min(10, maxRuns), true);
  const xmax = Math.max(maxRuns, xt[xt.length - 1]);
  const X = (v) => M.l + (v / xmax) * pw;
  const Y = (v) => M.t + ph - ((v - lo) / ((hi - lo) || 1)) * ph;

  const root = svg('svg', {viewBox: `0 0 ${W} ${H}`, class: 'plot', role: 'img',
                           'aria-label': 'best so far and every trial against runs'});
  const grid = svg('g', {class: 'grid'});
  yt.forEach((v) => grid.append(svg('line', {x1: M.l, x2: M.l + pw, y1: Y(v), y2: Y(v)}),
                                svg('text', {x: M.l - 6, y: Y(v) + 4, class: 'ytick'}, num(v))));
  xt.forEach((v) => grid.append(svg('line', {x1: X(v), x2: X(v), y1: M.t, y2: M.t + ph}),
                                svg('text', {x: X(v), y: M.t + ph + 16, class: 'xtick'}, String(v))));
  root.append(grid,
              svg('rect', {x: M.l, y: M.t, width: pw, height: ph, class: 'frame'}),
              svg('text', {x: M.l + pw / 2, y: H - 6, class: 'axis'}, 'runs'),
              svg('text', {x: 14, y: M.t + ph / 2, class: 'axis', transform: `rotate(-90 14 ${M.t + ph / 2})`},
                  options.objective || 'value'));
  if (options.reference !== null && Number.isFinite(options.reference))
    root.append(svg('line', {x1: M.l, x2: M.l + pw, y1: Y(options.reference), y2: Y(options.reference), class: 'reference'},
                    svg('title', {}, 'default: ' + num(options.reference))));

  series.forEach((s, si) => {
    // Best so far: a step after each trial that improved on it, held to the last run.
    let best = null, d = '';
    const ordered = s.trials.slice().sort((a, b) => a.index - b.index);
    let last = 0;
    for (const t of ordered) {
      const x = (t.runs_before || 0) + (t.repeats || 0);
      last = Math.max(last, x);
      if (!t.ok || t.value === null) continue;
      if (best === null) { best = t.value; d = `M${X(x)},${Y(best)}`; continue; }
      if (better(t.value, best)) { d += ` H${X(x)} V${Y(t.value)}`; best = t.value; }
    }
    if (d) root.append(svg('path', {d: d + ` H${X(last)}`, class: `best s${si % 6}`},
                           svg('title', {}, s.name + ': best so far ' + num(best))));
  });
  const marks = svg('g', {class: 'marks'});
  for (const p of points) {
    const t = p.t, cls = `s${p.s % 6}`;
    const tip = svg('title', {}, `${series[p.s].name} trial ${t.index + 1}, ${p.x} runs: ` +
                    (t.ok ? num(t.value) : t.capped ? 'capped at ' + num(t.value) : 'failed') +
                    (t.config ? ' — ' + configText(t.config) : ''));
    const x = X(p.x);
    if (t.ok && t.value !== null) {
      marks.append(svg('circle', {cx: x, cy: Y(t.value), r: 3.5, class: 'trial ' + cls}, tip));
    } else if (t.capped && t.value !== null) {
      const y = Y(Math.min(Math.max(t.value, lo), hi));
      marks.append(svg('path', {d: `M${x - 4},${y + 3} L${x + 4},${y + 3} L${x},${y - 4} Z`, class: 'capped ' + cls}, tip));
    } else {
      const y = M.t + 6;
      marks.append(svg('path', {d: `M${x - 4},${y - 4} L${x + 4},${y + 4} M${x - 4},${y + 4} L${x + 4},${y - 4}`,
                                class: 'failed ' + cls}, tip));
    }
  }
  root.append(marks);
  return root;
}

// The legend beside a plot: one entry per strategy, then the marks.
function plotLegend(series) {
  const item = (swatch, text) => h('span', {class: 'legend-item'}, swatch, text);
  const sw = (cls, shape) => {
    const s = svg('svg', {viewBox: '0 0 16 16', width: 16, height: 16, class: 'swatch'});
    if (shape === 'line') s.append(svg('path', {d: 'M1,8 H15', class: 'best ' + cls}));
    else if (shape === 'circle') s.append(svg('circle', {cx: 8, cy: 8, r: 4, class: 'trial ' + cls}));
    else if (shape === 'capped') s.append(svg('path', {d: 'M4,11 L12,11 L8,4 Z', class: 'capped ' + cls}));
    else if (shape === 'failed') s.append(svg('path', {d: 'M4,4 L12,12 M4,12 L12,4', class: 'failed ' + cls}));
    else s.append(svg('path', {d: 'M1,8 H15', class: 'reference'}));
    return s;
  };
  return h('div', {class: 'legend'},
           series.map((s, i) => item(sw('s' + (i % 6), 'line'), s.name + ' (best so far)')),
           item(sw('s0', 'circle'), 'trial'), item(sw('s0', 'capped'), 'capped (lower bound)'),
           item(sw('s0', 'failed'), 'failed'), item(sw('', 'reference'), 'default'));
}
