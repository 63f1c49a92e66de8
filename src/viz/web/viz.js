// viz.js: the VIZ page (docs/viz.md). It asks the server (src/viz/web.c) for
// /api/trace (schedules and kernels), /api/kernel?id=N (a kernel's AST, opts,
// source and rewrite steps, each with its graph) and /api/profile (runs,
// copies, memory per device), and draws graphs and the timeline as SVG with
// its own layered layout. The location hash picks what is shown:
// #kernel=N&step=P.S (pass P, step S; step=ast the AST) or #profile.
'use strict';
const $ = (id) => document.getElementById(id);
const SVG = 'http://www.w3.org/2000/svg';
let trace = null, kernel = null, profile = null, codeKind = 'src';

function el(tag, attrs, text, ns) {
  const e = ns ? document.createElementNS(SVG, tag) : document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
const svgEl = (tag, attrs, text) => el(tag, attrs, text, true);

function showError(msg) {
  const e = $('error');
  e.textContent = msg;
  e.hidden = false;
}

async function getJSON(url) {
  let r;
  try { r = await fetch(url); } catch (e) { throw new Error('the server did not answer ' + url + ' (is tg viz --serve still running?)'); }
  let body = null;
  try { body = await r.json(); } catch (e) { /* not JSON */ }
  if (!r.ok) throw new Error((body && body.error) || ('HTTP ' + r.status + ' for ' + url));
  if (!body) throw new Error(url + ' did not answer JSON');
  return body;
}

function kclass(name) {
  if (name.startsWith('copy')) return 'k-copy';
  if (name.startsWith('E_')) return 'k-E';
  if (name.startsWith('r_')) return 'k-r';
  return 'k-other';
}
const fmtUs = (us) => us < 0 ? 'did not run' : us >= 1000 ? (us / 1000).toFixed(3) + ' ms' : us.toFixed(1) + ' us';
function fmtBytes(b) {
  const u = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(1) : b) + ' ' + u[i];
}

// ---- the list of schedules and kernels

function drawSchedules() {
  const box = $('schedules');
  box.textContent = '';
  if (!trace.schedules.length) box.append(el('p', { class: 'dim' }, 'no schedules in this trace'));
  for (const s of trace.schedules) {
    const d = el('div', { class: 'sched' });
    const h = el('div', { class: 'sched-head' }, 'schedule ' + s.id + ' ');
    h.append(el('small', {}, 'at ' + fmtUs(s.ts_us) + ': schedule ' + fmtUs(s.schedule_us) + ', compile ' + fmtUs(s.compile_us) + ', run ' + fmtUs(s.run_us)));
    d.append(h);
    for (const it of s.items) {
      const row = el('div', { class: 'item ' + (it.kernel >= 0 ? 'kernel' : '') });
      row.append(el('span', { class: kclass(it.name) }, it.name), el('span', { class: 't' }, it.device + ' ' + fmtUs(it.run_us)));
      if (it.kernel >= 0) {
        row.dataset.id = it.kernel;
        row.title = 'show its rewrites, AST and source';
        row.onclick = () => { location.hash = 'kernel=' + it.kernel; };
      } else if (it.kind === 'kernel') row.title = 'its program ran before in this trace (its kernel is recorded there, once) or came from before the trace';
      d.append(row);
    }
    box.append(d);
  }
}

// ---- one kernel: its steps, the graph of the one picked, its source

async function showKernel(id, step) {
  if (!kernel || kernel.id !== id) {
    kernel = await getJSON('/api/kernel?id=' + id);
    drawKernel();
  }
  for (const r of document.querySelectorAll('#schedules .item.kernel')) r.classList.toggle('sel', +r.dataset.id === id);
  selectStep(step || 'ast');
}

function drawKernel() {
  const k = kernel;
  const head = $('kernel-head');
  head.textContent = '';
  head.classList.remove('dim');
  head.append(el('b', { class: kclass(k.name) }, k.name),
    document.createTextNode(' on ' + k.device + ', schedule ' + k.sched + ': run ' + fmtUs(k.run_us) + ', rendered in ' + fmtUs(k.render_us) +
      '; opts: ' + (k.opts || '(none)')));
  const ol = $('steps');
  ol.textContent = '';
  const ast = el('li', { class: 'step', 'data-step': 'ast' }, 'AST (' + (k.ast.nodes ? k.ast.nodes.length + ' nodes' : 'too big') + ')');
  ol.append(ast);
  k.passes.forEach((p, pi) => {
    const h = el('li', { class: 'pass' }, p.name + ' ');
    h.append(el('small', {}, p.fired + ' rules, ' + fmtUs(p.dur_us)));
    ol.append(h);
    p.steps.forEach((s, si) => ol.append(el('li', { class: 'step', 'data-step': pi + '.' + si, title: s.before + '\n-> ' + s.after }, (si + 1) + ' ' + s.rule)));
  });
  for (const li of ol.querySelectorAll('.step')) li.onclick = () => { location.hash = 'kernel=' + k.id + '&step=' + li.dataset.step; };
  drawCode();
}

function drawCode() {
  $('source').textContent = (codeKind === 'src' ? kernel.src : kernel.linear) || '(none recorded)';
  for (const a of document.querySelectorAll('.code-tabs a')) a.classList.toggle('on', a.dataset.code === codeKind);
}

function selectStep(key) {
  const k = kernel;
  for (const li of document.querySelectorAll('#steps .step')) li.classList.toggle('sel', li.dataset.step === key);
  const head = $('step-head');
  if (key === 'ast') {
    head.textContent = 'the kernel\'s AST as scheduled (' + (k.ast.nodes ? k.ast.nodes.length : k.ast.too_big) + ' nodes)';
    drawGraph(k.ast, false);
    return;
  }
  const [pi, si] = key.split('.').map(Number);
  const s = k.passes[pi] && k.passes[pi].steps[si];
  if (!s) { head.textContent = 'no step ' + key + ' in this kernel'; drawGraph({ nodes: [], edges: [] }, false); return; }
  head.textContent = 'pass ' + k.passes[pi].name + ', step ' + (si + 1) + ': [' + s.rule + ']\n   ' + s.before + '\n-> ' + s.after;
  drawGraph(s.graph || { nodes: [], edges: [] }, true);
}

// ---- the graph: layers by longest path from the sources, order by barycenters

function layout(nodes, edges) {
  const n = nodes.length, preds = nodes.map(() => []), succs = nodes.map(() => []), indeg = new Array(n).fill(0);
  for (const [a, b] of edges) { if (a === b) continue; preds[b].push(a); succs[a].push(b); indeg[b]++; }
  const layer = new Array(n).fill(0), queue = [];
  for (let i = 0; i < n; i++) if (!indeg[i]) queue.push(i);
  let seen = 0;
  while (queue.length) {
    const v = queue.shift();
    seen++;
    for (const w of succs[v]) { layer[w] = Math.max(layer[w], layer[v] + 1); if (!--indeg[w]) queue.push(w); }
  }
  if (seen < n) for (let i = 0; i < n; i++) if (indeg[i]) layer[i] = 0;   // a cycle: not from a trace tg wrote
  const nl = n ? Math.max(...layer) + 1 : 0, rows = Array.from({ length: nl }, () => []);
  for (let i = 0; i < n; i++) rows[layer[i]].push(i);
  const pos = new Array(n).fill(0);
  const renumber = () => rows.forEach((r) => r.forEach((v, i) => { pos[v] = i; }));
  renumber();
  const bary = (v, nb) => nb[v].length ? nb[v].reduce((s, u) => s + pos[u], 0) / nb[v].length : pos[v];
  for (let sweep = 0; sweep < 6; sweep++) {
    const down = sweep % 2 === 0;
    for (let l = down ? 1 : nl - 2; down ? l < nl : l >= 0; l += down ? 1 : -1) {
      const nb = down ? preds : succs, key = new Map(rows[l].map((v) => [v, bary(v, nb)]));
      rows[l].sort((a, b) => key.get(a) - key.get(b));
      rows[l].forEach((v, i) => { pos[v] = i; });
    }
  }
  return { layer, rows };
}

function label(nd) {
  if (nd.op === '..') return ['..', ''];
  const a = nd.arg.length > 30 ? nd.arg.slice(0, 29) + '…' : nd.arg;
  return [nd.op + (nd.dtype ? ' ' + nd.dtype : ''), a];
}

function drawGraph(g, step) {
  const svg = $('graph');
  svg.textContent = '';
  const nodes = g.nodes || [], edges = g.edges || [];
  if (!nodes.length) {
    svg.setAttribute('width', 400); svg.setAttribute('height', 40);
    svg.append(svgEl('text', { x: 10, y: 24 }, g.too_big ? 'a graph of ' + g.too_big + ' nodes: too big to record' : step ? 'no graph recorded for this step' : 'empty graph'));
    return;
  }
  const { layer, rows } = layout(nodes, edges);
  const H = 34, GAPX = 16, GAPY = 36, PAD = 14;
  const w = nodes.map((nd) => Math.max(46, 7 * Math.max(...label(nd).map((s) => s.length)) + 14));
  const rowW = rows.map((r) => r.reduce((s, v) => s + w[v], 0) + GAPX * Math.max(0, r.length - 1));
  const W = Math.max(...rowW) + 2 * PAD, x = new Array(nodes.length), y = new Array(nodes.length);
  rows.forEach((r, l) => {
    let cx = PAD + (W - 2 * PAD - rowW[l]) / 2;
    for (const v of r) { x[v] = cx; y[v] = PAD + l * (H + GAPY); cx += w[v] + GAPX; }
  });
  // wide graphs shrink to the box, down to half size (then it scrolls)
  const HT = PAD * 2 + rows.length * (H + GAPY) - GAPY, box = $('graph-scroll').clientWidth || W;
  const scale = Math.max(0.5, Math.min(1, (box - 4) / W));
  svg.setAttribute('viewBox', `0 0 ${W} ${HT}`);
  svg.setAttribute('width', W * scale);
  svg.setAttribute('height', HT * scale);
  const eg = svgEl('g', { class: 'edges' });
  for (const [a, b] of edges) {
    const x1 = x[a] + w[a] / 2, y1 = y[a] + H, x2 = x[b] + w[b] / 2, y2 = y[b], m = (y1 + y2) / 2;
    eg.append(svgEl('path', { class: 'edge', d: `M${x1},${y1} C${x1},${m} ${x2},${m} ${x2},${y2}` }));
  }
  svg.append(eg);
  nodes.forEach((nd, i) => {
    let cls = 'node ' + (step ? 'side' + nd.side : 'ast');
    if (nd.op === '..') cls += ' cut';
    if (step && (i === g.before || i === g.after)) cls += ' root';
    const gg = svgEl('g', { class: cls, transform: `translate(${x[i]},${y[i]})`, 'data-op': nd.op });
    const [l1, l2] = label(nd);
    gg.append(svgEl('rect', { width: w[i], height: H }), svgEl('text', { x: 7, y: l2 ? 14 : 21 }, l1));
    if (l2) gg.append(svgEl('text', { x: 7, y: 28 }, l2));
    gg.append(svgEl('title', {}, [nd.op, nd.dtype, nd.arg, nd.shape ? 'shape (' + nd.shape.join(', ') + ')' : '',
      step ? ['', 'only before (replaced)', 'only after (new)', 'before and after (kept)'][nd.side] : ''].filter(Boolean).join('\n')));
    svg.append(gg);
  });
}

// ---- the profile: host spans, then per device its kernels, copies and memory in use

let zoom = 1;
function drawProfile() {
  const p = profile, svg = $('timeline');
  svg.textContent = '';
  const LW = 150, LANE = 22, MEMH = 60, box = $('timeline-scroll');
  const W = Math.max(600, (box.clientWidth || 1200) - 20) * zoom, end = Math.max(p.end_us, 1);
  const X = (us) => LW + (us / end) * (W - LW - 10);
  const lanes = [];
  const host = p.spans.filter((s) => !s.name.startsWith('compile ')), perKernel = p.spans.filter((s) => s.name.startsWith('compile '));
  lanes.push({ name: 'host', spans: host });
  if (perKernel.length) lanes.push({ name: 'host: compiles', spans: perKernel });
  for (const d of p.devices) {
    lanes.push({ name: d.name + ' kernels', spans: d.kernels });
    if (d.copies.length) lanes.push({ name: d.name + ' copies', spans: d.copies });
    if (d.mem.length) lanes.push({ name: d.name + ' memory', mem: d.mem, peak: d.peak });
  }
  let y = 24;
  const axis = svgEl('g', { class: 'axis' });
  svg.append(axis);
  for (const lane of lanes) {
    // overlapping spans (compiles run in parallel) stack in rows
    const rowEnd = [];
    for (const sp of lane.spans || []) {
      let r = rowEnd.findIndex((e) => e <= sp.ts);
      if (r < 0) { r = rowEnd.length; rowEnd.push(0); }
      rowEnd[r] = sp.ts + sp.dur;
      sp.row = r;
    }
    const h = lane.mem ? MEMH : LANE * Math.max(1, rowEnd.length);
    svg.append(svgEl('text', { class: 'lane-label', x: 6, y: y + Math.min(h, 2 * LANE) / 2 + 4 }, lane.name));
    if (lane.mem) {
      const peak = Math.max(lane.peak, 1), Y = (b) => y + h - 2 - (b / peak) * (h - 6);
      let d = `M${X(0)},${Y(0)}`, last = 0;
      for (const [ts, used] of lane.mem) { d += ` L${X(ts)},${Y(last)} L${X(ts)},${Y(used)}`; last = used; }
      d += ` L${X(end)},${Y(last)} L${X(end)},${Y(0)} Z`;
      const path = svgEl('path', { class: 'memline', d });
      path.append(svgEl('title', {}, lane.name + ': peak ' + fmtBytes(lane.peak)));
      svg.append(path, svgEl('text', { x: LW + 4, y: y + 11 }, 'peak ' + fmtBytes(lane.peak)));
    } else {
      for (const s of lane.spans) {
        const g = svgEl('g', { class: 'span' }), x0 = X(s.ts), wd = Math.max(1, X(s.ts + s.dur) - x0), y0 = y + s.row * LANE;
        const fill = lane.name.startsWith('host') ? (s.name === 'schedule' ? '#9b7fd1' : s.name === 'run' ? '#5fb47b' : '#c9a0dc')
          : { 'k-E': '#4b8ef0', 'k-r': '#e5575c', 'k-copy': '#e8c040', 'k-other': '#52b26e' }[kclass(s.name)];
        g.append(svgEl('rect', { x: x0, y: y0 + 2, width: wd, height: LANE - 4, fill }));
        const info = s.name + ': ' + fmtUs(s.dur) + ' at ' + fmtUs(s.ts) + (s.sched ? ', schedule ' + s.sched : '') +
          (s.bytes ? ', ' + fmtBytes(s.bytes) : '') + (s.flops ? ', ' + (s.dur > 0 ? (s.flops / s.dur / 1e3).toFixed(2) : 0) + ' GFLOPS' : '');
        g.append(svgEl('title', {}, info));
        g.onmouseover = () => { $('profile-info').textContent = info; };
        if (wd > 7 * s.name.length) g.append(svgEl('text', { x: x0 + 3, y: y0 + LANE / 2 + 4 }, s.name));
        svg.append(g);
      }
    }
    y += h + 6;
  }
  for (const m of p.markers) {
    axis.append(svgEl('line', { x1: X(m.ts_us), x2: X(m.ts_us), y1: 14, y2: y, style: 'stroke:#d33;stroke-dasharray:4 3' }));
    svg.append(svgEl('text', { x: X(m.ts_us) + 3, y: 12, style: 'fill:#d33' }, m.name));
  }
  const ticks = 10;
  for (let i = 0; i <= ticks; i++) {
    const us = end * i / ticks;
    axis.append(svgEl('line', { x1: X(us), x2: X(us), y1: 14, y2: y }));
    svg.append(svgEl('text', { x: X(us) + 2, y: y + 14 }, fmtUs(us)));
  }
  if (!p.devices.length) svg.append(svgEl('text', { x: LW, y: y + 34 }, 'no kernel runs, copies or allocations in this trace'));
  svg.setAttribute('width', W);
  svg.setAttribute('height', y + 24);
}

async function showProfile() {
  if (!profile) profile = await getJSON('/api/profile');
  drawProfile();
}

// ---- routing by the location hash

async function route() {
  const h = new URLSearchParams(location.hash.slice(1));
  const isProfile = location.hash === '#profile';
  $('view-kernels').hidden = isProfile;
  $('view-profile').hidden = !isProfile;
  $('tab-kernels').classList.toggle('on', !isProfile);
  $('tab-profile').classList.toggle('on', isProfile);
  try {
    if (!trace) return;
    if (isProfile) await showProfile();
    else if (h.has('kernel')) {
      const id = Number(h.get('kernel'));
      if (!Number.isInteger(id) || id < 0) throw new Error('#kernel=' + h.get('kernel') + ' is not a kernel number');
      await showKernel(id, h.get('step'));
    }
  } catch (e) { showError(e.message); }
}

async function main() {
  for (const a of document.querySelectorAll('.code-tabs a')) a.onclick = (ev) => { ev.preventDefault(); codeKind = a.dataset.code; if (kernel) drawCode(); };
  $('tab-kernels').onclick = (ev) => { ev.preventDefault(); location.hash = kernel ? 'kernel=' + kernel.id : ''; if (!kernel) route(); };
  $('timeline-scroll').onwheel = (ev) => { if (!ev.ctrlKey || !profile) return; ev.preventDefault(); zoom = Math.min(256, Math.max(1, zoom * (ev.deltaY < 0 ? 1.5 : 1 / 1.5))); drawProfile(); };
  window.onhashchange = route;
  try {
    trace = await getJSON('/api/trace');
  } catch (e) {
    $('schedules').textContent = '';
    showError('tg viz: this trace cannot be shown.\n' + e.message);
    document.body.classList.add('failed');
    return;
  }
  $('trace-name').textContent = trace.trace + (trace.complete ? '' : ' (cut off)') + ': ' + trace.schedules.length + ' schedules, ' + trace.kernels.length +
    ' kernels, ' + trace.passes + ' rewrite passes' + (trace.dropped ? ', ' + trace.dropped + ' records left out (TG_VIZ_MAX_MB)' : '');
  drawSchedules();
  await route();
}
main();
