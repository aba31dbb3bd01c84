// The dashboard's building blocks: elements built from data as text (never parsed as HTML),
// the API client with the browser session's token, and number formats.
'use strict';

// h('td', {class: 'x'}, 'text', child, [more]) builds an element. Strings and numbers become
// text nodes, so whatever the store holds is shown as written, never interpreted.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.setAttribute('class', v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// SVG elements, for the plots.
const SVG_NS = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {}))
    if (v !== null && v !== undefined && v !== false) el.setAttribute(k, String(v));
  return append(el, children);
}

function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// A link inside the dashboard: every part of the route is encoded, so a name cannot add a
// segment, a query or a scheme.
function route(...parts) {
  return '#/' + parts.map((p) => encodeURIComponent(String(p))).join('/');
}
function link(text, ...parts) {
  return h('a', {href: route(...parts)}, text);
}

// --- the token: this browser session only (sessionStorage), sent as a bearer token --------
const TOKEN_KEY = 'syspilot.token';
const token = {
  get() { return sessionStorage.getItem(TOKEN_KEY) || ''; },
  set(t) { sessionStorage.setItem(TOKEN_KEY, t); },
  forget() { sessionStorage.removeItem(TOKEN_KEY); },
};

class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || ('HTTP ' + status));
    this.status = status;
    this.code = e.code || '';
    this.hint = e.hint || '';
  }
}

// Calls the API of the server that served this page (same origin, no cookies).
async function api(path, options) {
  const o = options || {};
  const headers = {Accept: 'application/json'};
  const t = token.get();
  if (t) headers.Authorization = 'Bearer ' + t;
  let body;
  if (o.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(o.body);
  }
  const res = await fetch(path, {method: o.method || 'GET', headers, body, cache: 'no-store',
                                 credentials: 'omit', redirect: 'error'});
  let data = null;
  try { data = await res.json(); } catch (_) { data = null; }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

// A path under /v1/ from parts, each encoded.
function apiPath(...parts) {
  return '/v1/' + parts.map((p) => encodeURIComponent(String(p))).join('/');
}

// --- formats ---------------------------------------------------------------------------
function num(v, digits) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  const d = digits === undefined ? 3 : digits;
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
  return Number(v.toFixed(d)).toString();
}
function pct(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  return Math.round(v * 100) + '%';
}
function speedupText(s, spread) {
  if (s === null || s === undefined) return '–';
  let t = s.toFixed(2) + '×';
  if (spread !== null && spread !== undefined && Number.isFinite(spread)) t += ' ± ' + pct(spread);
  return t;
}
function configText(c) {
  const keys = Object.keys(c || {}).sort();
  if (!keys.length) return 'default';
  return keys.map((k) => k + '=' + c[k]).join(' ');
}
function when(t) { return t ? String(t).replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC') : '–'; }

function badge(text, kind) { return h('span', {class: 'badge ' + (kind || String(text).replace(/[^a-z-]/g, ''))}, text); }

function table(headers, rows, attrs) {
  return h('table', attrs || {},
           h('thead', {}, h('tr', {}, headers.map((x) => h('th', {}, x)))),
           h('tbody', {}, rows));
}
