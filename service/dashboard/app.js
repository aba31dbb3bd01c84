// The dashboard's pages, routed by the part of the address after '#': libraries and their
// versions, a contract with its provenance, the diff of two versions, tuning sessions,
// analyses and jobs. Every page reads the JSON API with the browser session's token.
'use strict';

const main = () => document.getElementById('main');
// Replaces the page's content (children as append() takes them: nested lists, nulls skipped).
function page(...children) { append(clear(main()), children); }
const state = {who: null, timer: null, generation: 0};

// --- access ----------------------------------------------------------------------------
async function whoami() {
  try {
    state.who = await api('/v1/whoami');
  } catch (e) {
    if (e.status === 401) {
      token.forget();
      state.who = await api('/v1/whoami');
      return 'The token was refused (' + e.message + '); give another.';
    }
    throw e;
  }
  return '';
}

function canRead() { return state.who && (state.who.public_read || state.who.scope); }
function canWrite() { return state.who && state.who.scope === 'write'; }

function renderWho() {
  const el = clear(document.getElementById('who'));
  if (!state.who) return;
  if (state.who.scope) {
    el.append(badge(state.who.scope + ' token', 'scope'),
              h('button', {type: 'button', class: 'link', onclick: () => { token.forget(); start(); }}, 'forget token'));
  } else if (state.who.public_read) {
    el.append(badge('public read', 'scope'),
              h('button', {type: 'button', class: 'link', onclick: () => tokenForm('')}, 'use a token'));
  }
}

// Asks for a token; it is kept for this browser session only (sessionStorage).
function tokenForm(message) {
  done(null);
  const input = h('input', {type: 'password', id: 'token', autocomplete: 'off', spellcheck: 'false',
                            placeholder: 'spt_…', required: true, size: 60});
  const form = h('form', {class: 'token-form', id: 'token-form'},
                 h('h1', {}, 'A token, please'),
                 h('p', {}, 'This server needs a bearer token to show its data. Create one on the server with ',
                   h('code', {}, 'syspilot serve token create --scope read'),
                   ' (or ', h('code', {}, '--scope write'), ' to start jobs). It is kept for this browser session only.'),
                 message ? h('p', {class: 'error'}, message) : null,
                 h('label', {for: 'token'}, 'Token '), input, ' ', h('button', {type: 'submit'}, 'Use token'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    token.set(input.value.trim());
    start();
  });
  page(form);
  input.focus();
  ready('token');
}

// --- page life cycle -------------------------------------------------------------------
// Marks the page rendered (tests and the benchmark wait for it) and stops the previous
// page's refresh.
function ready(name) {
  document.body.dataset.page = name;
  document.body.dataset.state = 'ready';
  try { performance.mark('syspilot:rendered:' + name); } catch (_) { /* marks are optional */ }
}
function done(nextTimer) {
  if (state.timer) clearTimeout(state.timer);
  state.timer = nextTimer;
}

function errorBox(e) {
  return h('div', {class: 'error'}, h('strong', {}, 'Error: '), e.message || String(e),
           e.hint ? h('div', {class: 'hint'}, e.hint) : null);
}

async function show(render) {
  const gen = ++state.generation;
  done(null);
  document.body.dataset.state = 'loading';
  try {
    await render(gen);
  } catch (e) {
    if (gen !== state.generation) return;
    if (e.status === 401) { token.forget(); await whoami().catch(() => {}); renderWho(); tokenForm(e.message); return; }
    page(errorBox(e));
    ready('error');
  }
}

function setSection(name) {
  for (const a of document.querySelectorAll('#nav a'))
    a.classList.toggle('active', a.dataset.section === name);
}

// --- libraries -------------------------------------------------------------------------
// A stored version's revision, status, drafter (with its model), review and date.
function versionCells(v) {
  return [h('td', {class: 'num'}, v.revision), h('td', {}, badge(v.status)),
          h('td', {}, v.drafter + (v.model ? ' (' + v.model + ')' : '')),
          h('td', {}, v.review === 'reviewed' ? badge('reviewed') : h('span', {class: 'muted'}, 'draft')),
          h('td', {class: 'nowrap'}, when(v.created_at))];
}

async function librariesPage() {
  setSection('libraries');
  const libs = (await api('/v1/libraries')).libraries;
  // A name the API cannot be asked about (stored by another tool) is shown, not linked.
  const valid = (name) => /^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$/.test(name);
  const rows = [];
  for (const l of libs) {
    (l.stored || []).slice().reverse().forEach((v, k) => rows.push(h('tr', {},
      h('td', {}, k !== 0 ? '' : valid(l.name) ? link(l.name, 'library', l.name) : l.name),
      h('td', {}, valid(l.name) ? link(v.version, 'contract', l.name, v.version) : v.version),
      versionCells(v))));
  }
  page(
    h('h1', {}, 'Libraries and their versions'),
    libs.length ? table(['library', 'version', 'revision', 'status', 'drafter', 'review', 'made'], rows, {class: 'libraries'})
                : h('p', {class: 'muted'}, 'No contract is stored yet: run syspilot synth, or start a synthesis job.'));
  ready('libraries');
}

async function libraryPage(lib) {
  setSection('libraries');
  const data = await api(apiPath('libraries', lib, 'contracts'));
  const vs = data.versions;
  const from = h('select', {id: 'diff-from'}, vs.map((v) => h('option', {value: v.version}, v.version)));
  const to = h('select', {id: 'diff-to'}, vs.map((v) => h('option', {value: v.version}, v.version)));
  if (vs.length > 1) { from.selectedIndex = vs.length - 2; to.selectedIndex = vs.length - 1; }
  const form = h('form', {class: 'inline'}, 'Compare ', from, ' with ', to, ' ', h('button', {type: 'submit'}, 'Show the diff'));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); location.hash = route('diff', lib, from.value, to.value); });
  page(
    h('p', {class: 'crumbs'}, link('Libraries', ''), ' / ', lib),
    h('h1', {}, lib),
    table(['version', 'revision', 'status', 'drafter', 'review', 'made', 'digest'],
          vs.slice().reverse().map((v) => h('tr', {},
            h('td', {}, link(v.version, 'contract', lib, v.version)), versionCells(v),
            h('td', {}, h('code', {}, String(v.digest).slice(0, 12)))))),
    vs.length > 1 ? form : h('p', {class: 'muted'}, 'One version stored: nothing to compare yet.'));
  ready('library');
}

// --- a contract --------------------------------------------------------------------------
function provenancePanel(panel, title, facts, extra) {
  clear(panel).append(h('h3', {}, title));
  if (extra) panel.append(extra);
  if (!facts || !facts.length) {
    panel.append(h('p', {class: 'muted'}, 'No fact of this contract\'s sources was found at this place.'));
    return;
  }
  panel.append(h('ul', {class: 'facts'}, facts.map((f) => h('li', {},
    h('div', {}, badge(f.kind.replace(/_/g, ' '), 'kind'), ' ', h('code', {}, f.file + ':' + f.line),
      f.name ? [' ', h('strong', {}, f.name)] : null, f.function ? [' in ', h('code', {}, f.function)] : null,
      f.via ? [' via ', h('code', {}, f.via)] : null),
    f.signature ? h('div', {}, h('code', {}, f.signature)) : null,
    f.sentence ? h('blockquote', {class: 'sentence'}, f.sentence) : null,
    f.doc ? h('blockquote', {class: 'sentence'}, f.doc) : null,
    f.detail ? h('div', {class: 'muted'}, f.detail) : null,
    h('div', {class: 'muted small'}, 'source snapshot: ', f.source || '–')))));
}

async function contractPage(lib, version) {
  setSection('libraries');
  const [c, prov] = await Promise.all([api(apiPath('libraries', lib, 'contracts', version)),
                                       api(apiPath('libraries', lib, 'contracts', version, 'provenance')).catch(() => null)]);
  const refs = (prov && prov.refs) || {}, docs = (prov && prov.docs) || {};
  const panel = h('aside', {class: 'provenance', id: 'provenance'},
                  h('h3', {}, 'Provenance'), h('p', {class: 'muted'}, 'Choose a reference (@ "file:line") or a doc sentence to see the facts it came from.'));
  const onRef = (ref) => {
    provenancePanel(panel, ref, refs[ref], ref.includes('#') ? h('p', {class: 'muted'}, 'A symbol of the library\'s binary.') : null);
    panel.scrollIntoView({block: 'nearest'});
  };
  const onDoc = (sentence) => {
    provenancePanel(panel, 'Documentation', docs[sentence], h('blockquote', {class: 'sentence'}, sentence));
    panel.scrollIntoView({block: 'nearest'});
  };
  const shown = renderLpcl(c.lpcl, onRef, onDoc);
  const contract = c.contract || {};
  const origin = (s) => (s.provenance && s.provenance.origin) || '';
  const controls = (contract.controls || []).map((k) => h('tr', {class: origin(k) === 'manual' ? 'manual' : ''},
    h('td', {}, h('button', {type: 'button', class: 'link', onclick: () => {
      const el = shown.controlLines.get(k.name);
      if (el) { el.scrollIntoView({block: 'center'}); el.classList.add('flash'); setTimeout(() => el.classList.remove('flash'), 1200); }
    }}, k.name)),
    h('td', {}, k.kind + (k.carrier ? ' of ' + k.carrier : '')),
    h('td', {}, k.type), h('td', {}, (k.domain && k.domain.text) || ''),
    h('td', {}, k.default ? k.default.text : ''), h('td', {}, (k.sets || []).join(', ')),
    h('td', {}, origin(k) === 'manual' ? badge('manual') : badge(origin(k) || '–', 'origin')),
    h('td', {class: 'refs'},
      ((k.provenance && k.provenance.refs) || []).map((r) => h('button', {type: 'button', class: 'tok-ref', onclick: () => onRef(r)}, r)),
      k.doc ? h('button', {type: 'button', class: 'tok-doc', onclick: () => onDoc(k.doc)}, 'doc') : null)));
  const diags = Array.isArray(c.diagnostics) ? c.diagnostics : [];
  page(
    h('p', {class: 'crumbs'}, link('Libraries', ''), ' / ', link(lib, 'library', lib), ' / ', version),
    h('h1', {}, lib + ' ', h('span', {class: 'muted'}, version)),
    h('div', {class: 'facts-line'},
      badge(c.status), ' ', c.review === 'reviewed' ? badge('reviewed') : badge('draft', 'draft'),
      ' revision ', String(c.revision), ', drafted by ', h('strong', {}, c.drafter + (c.model ? ' (' + c.model + ')' : '')),
      ', made ', when(c.created_at), c.reviewed_at ? ', reviewed ' + when(c.reviewed_at) : '',
      c.source ? [', from ', h('code', {}, c.source)] : null),
    diags.length ? h('div', {class: 'error'}, h('strong', {}, diags.length + ' open diagnostic(s)'),
                     h('ul', {}, diags.map((d) => h('li', {}, (d.severity || '') + ': ' + (d.message || JSON.stringify(d)))))) : null,
    h('h2', {}, 'Controls'),
    h('p', {class: 'muted'}, 'Statements marked manual were written by a reviewer; the others were drafted from the facts they cite.'),
    table(['control', 'how', 'type', 'domain', 'default', 'sets', 'origin', 'provenance'], controls, {class: 'controls'}),
    h('div', {class: 'contract-grid'},
      h('section', {}, h('h2', {}, 'LPCL'), shown.element),
      panel));
  ready('contract');
}

// --- the diff of two versions ----------------------------------------------------------
async function diffPage(lib, from, to) {
  setSection('libraries');
  const q = '?from=' + encodeURIComponent(from) + '&to=' + encodeURIComponent(to);
  const [d, a, b] = await Promise.all([api(apiPath('libraries', lib, 'diff') + q),
                                       api(apiPath('libraries', lib, 'contracts', from)),
                                       api(apiPath('libraries', lib, 'contracts', to))]);
  const changes = (d.changes && d.changes.changes) || [];
  const ops = lineDiff(a.lpcl, b.lpcl);
  page(
    h('p', {class: 'crumbs'}, link('Libraries', ''), ' / ', link(lib, 'library', lib), ' / diff'),
    h('h1', {}, lib + ': ' + from + ' → ' + to),
    h('h2', {}, 'What changed in meaning'),
    changes.length
      ? table(['change', 'statement', 'name', 'field', 'before', 'after'], changes.map((c) => h('tr', {class: 'change-' + c.kind},
          h('td', {}, badge(c.kind)), h('td', {}, c.entity), h('td', {}, h('code', {}, c.name)), h('td', {}, c.field || ''),
          h('td', {}, c.before ? h('code', {}, c.before) : ''), h('td', {}, c.after ? h('code', {}, c.after) : ''))), {class: 'changes'})
      : h('p', {class: 'muted'}, 'No semantic change: the contracts mean the same (layout, comments and provenance aside).'),
    h('h2', {}, 'Text'),
    ops ? renderLineDiff(ops, 3) : h('p', {class: 'muted'}, 'The texts are too long to compare here; the semantic changes above are complete.'));
  ready('diff');
}

// --- tuning sessions -------------------------------------------------------------------
function programText(s) { return [s.program].concat(s.args || []).join(' '); }
function machineText(m) {
  if (!m) return '–';
  return (m.host || '?') + ' (' + m.ncpus + ' CPUs' + (m.ngpus ? ', ' + m.ngpus + ' GPUs' : '') + ')';
}

async function sessionsPage() {
  setSection('sessions');
  const list = (await api('/v1/sessions')).sessions;
  page(
    h('h1', {}, 'Tuning sessions'),
    list.length ? table(['session', 'program', 'machine', 'strategy', 'budget', 'runs', 'trials', 'best speedup', 'state', 'started'],
      list.map((s) => h('tr', {},
        h('td', {}, link('#' + s.id, 'session', s.id)), h('td', {}, h('code', {}, programText(s))),
        h('td', {}, machineText(s.machine)), h('td', {}, s.strategy + (s.compare ? ' (compared)' : '')),
        h('td', {class: 'num'}, s.budget), h('td', {class: 'num'}, s.runs),
        h('td', {class: 'num'}, s.trials + (s.failed || s.capped ? ` (${s.failed} failed, ${s.capped} capped)` : '')),
        h('td', {class: 'num'}, speedupText(s.speedup, s.speedup_spread)),
        h('td', {}, badge(s.status), s.verdict ? [' ', h('span', {class: 'muted'}, verdictText(s.verdict))] : null),
        h('td', {class: 'nowrap'}, when(s.created_at)))), {class: 'sessions'})
    : h('p', {class: 'muted'}, 'No tuning session is stored: run syspilot tune --db ' + 'STORE -- APP.'));
  ready('sessions');
}

function copyButton(text) {
  const b = h('button', {type: 'button', class: 'copy'}, 'Copy');
  b.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(text); b.textContent = 'Copied'; } catch (_) { b.textContent = 'Select and copy'; }
  });
  return b;
}

function trialStatus(t) {
  if (t.ok) return 'ok';
  if (t.capped) return 'capped';
  return 'failed';
}

// tune's conclusion in words.
function verdictText(v) {
  return {configuration: 'apply this configuration', 'keep defaults': 'keep your defaults',
          failed: 'every trial failed'}[v] || v;
}

function renderSession(s) {
  const chosen = s.chosen;
  const series = [{name: s.strategy, trials: s.trials}].concat(
    (s.compared || []).map((c) => ({name: c.strategy + ' (#' + c.id + ')', trials: c.trials})));
  const reference = s.reference ? s.reference.value : null;
  const bestIndex = s.best ? s.best.trial : -1;
  const exportText = chosen ? (chosen.export.length ? chosen.export.join('\n') : '# the defaults: nothing to set') : '';
  const trials = s.trials.map((t, i) => h('tr', {class: trialStatus(t) + (i === bestIndex ? ' best' : ''), dataset: {trial: t.index}},
    h('td', {class: 'num'}, t.index + 1), h('td', {class: 'num'}, t.runs_before + t.repeats),
    h('td', {}, t.strategy), h('td', {}, h('code', {}, configText(t.config))),
    h('td', {class: 'num'}, t.value === null ? '–' : num(t.value) + (t.repeats > 1 ? ' ± ' + pct(t.spread) : '')),
    h('td', {class: 'num'}, t.repeats),
    h('td', {}, t.ok ? (i === bestIndex ? badge('best') : 'ok') : t.capped ? badge('capped') : badge('failed'),
      !t.ok && t.failure ? [' ', h('span', {class: 'muted'}, t.failure)] : null),
    h('td', {}, t.node || '')));
  const space = (s.space && s.space.params) || [];
  return [
    h('p', {class: 'crumbs'}, link('Tuning sessions', 'sessions'), ' / #' + s.id),
    h('h1', {}, 'Session ' + s.id + ' ', badge(s.status), s.status === 'running' ? h('span', {class: 'live'}, ' updating') : null),
    h('p', {}, h('code', {class: 'cmd'}, programText(s))),
    h('dl', {class: 'facts-grid'},
      h('dt', {}, 'strategy'), h('dd', {}, s.strategy),
      h('dt', {}, 'objective'), h('dd', {}, s.objective + (s.maximize ? ', maximised' : ', minimised')),
      h('dt', {}, 'budget'), h('dd', {}, s.runs + ' of ' + s.budget + ' runs'),
      h('dt', {}, 'trials'), h('dd', {}, s.trials.length + ' (' + s.failed + ' failed, ' + s.capped + ' capped)'),
      h('dt', {}, 'machine'), h('dd', {}, machineText(s.machine)),
      h('dt', {}, 'started'), h('dd', {}, when(s.created_at) + (s.finished_at ? ', ended ' + when(s.finished_at) : '')),
      s.analysis ? [h('dt', {}, 'analysis'), h('dd', {}, link('analysis #' + s.analysis, 'analysis', s.analysis))] : null),
    h('section', {class: 'chosen', id: 'chosen'},
      h('h2', {}, 'Chosen configuration'),
      chosen ? [
        h('p', {}, h('span', {class: 'speedup', id: 'speedup'}, speedupText(chosen.speedup, chosen.speedup_spread)),
          ' over the default', chosen.speedup_basis ? h('span', {class: 'muted'}, ' (' + chosen.speedup_basis + ')') : null,
          chosen.verdict ? [' — ', h('strong', {}, verdictText(chosen.verdict))] : null,
          h('span', {class: 'muted'}, ' · ' + (chosen.source === 'minimised' ? 'the best configuration, minimised' : chosen.source))),
        h('div', {class: 'export'}, h('pre', {id: 'export'}, exportText), copyButton(exportText)),
        chosen.export_error ? h('p', {class: 'error'}, chosen.export_error) : null]
      : h('p', {class: 'muted'}, 'No trial has succeeded yet.')),
    h('h2', {}, 'Convergence'),
    h('div', {class: 'plot-box', id: 'plot'}, convergencePlot(series, {maximize: s.maximize, reference, objective: s.objective}),
      plotLegend(series)),
    h('h2', {}, 'Trials'),
    table(['#', 'runs', 'strategy', 'configuration', 'value', 'repeats', 'status', 'node'], trials, {class: 'trials', id: 'trials'}),
    space.length ? [h('h2', {}, 'Search space'),
      table(['control', 'how', 'library', 'default', 'values'], space.map((p) => h('tr', {},
        h('td', {}, h('code', {}, p.name)), h('td', {}, p.kind + (p.carrier ? ' of ' + p.carrier : '')),
        h('td', {}, p.library || ''), h('td', {}, p.default || ''), h('td', {}, (p.values || []).join(', ')))))] : null,
    (s.guides || []).length ? [h('h2', {}, 'Guided by'), h('ul', {}, s.guides.map((g) => h('li', {}, h('code', {}, g.id || ''),
      g.constraint ? [' — ', h('code', {}, g.constraint)] : null)))] : null,
  ];
}

async function sessionPage(id, gen) {
  setSection('sessions');
  const s = (await api(apiPath('sessions', id))).session;
  if (gen !== state.generation) return;
  const y = window.scrollY;
  page(renderSession(s));
  window.scrollTo(0, y);
  ready('session');
  // A running session is read again while it runs.
  if (s.status === 'running')
    done(setTimeout(() => { if (gen === state.generation) show((g) => sessionPage(id, g)); }, 2000));
}

// --- analyses --------------------------------------------------------------------------
async function analysesPage() {
  setSection('analyses');
  const list = (await api('/v1/analyses')).analyses;
  page(
    h('h1', {}, 'Analyses'),
    list.length ? table(['analysis', 'application', 'contracts', 'hypotheses', 'by', 'made'], list.map((a) => {
      const s = a.summary || {};
      return h('tr', {}, h('td', {}, link('#' + a.id, 'analysis', a.id)), h('td', {}, h('code', {}, (a.argv || []).join(' '))),
        h('td', {}, (s.contracts || []).join(', ')),
        h('td', {}, badge((s.confirmed || 0) + ' confirmed', 'confirmed'), ' ', badge((s.refuted || 0) + ' refuted', 'refuted'), ' ',
          badge((s.unknown || 0) + ' unknown', 'unknown')),
        h('td', {}, a.origin), h('td', {class: 'nowrap'}, when(a.created_at)));
    }), {class: 'analyses'})
    : h('p', {class: 'muted'}, 'No analysis is stored: run syspilot analyze -- APP.'));
  ready('analyses');
}

// Confirmed first, then undecided, then refuted; in the analysis' order within each.
function byVerdict(hs) {
  const rank = {confirmed: 0, unknown: 1, refuted: 2};
  return hs.map((x, i) => [x, i]).sort((a, b) => ((rank[a[0].verdict] ?? 1) - (rank[b[0].verdict] ?? 1)) || a[1] - b[1])
           .map((x) => x[0]);
}

function hypothesisCard(hy) {
  const ev = hy.evidence || [];
  const checks = hy.checks || [];
  const threshold = (c) => c.op + ' ' + num(c.threshold) + (c.or ? ' or ' + c.or.signal + ' ' + c.or.op + ' ' + num(c.or.threshold) : '');
  return h('article', {class: 'hypothesis verdict-' + hy.verdict, dataset: {verdict: hy.verdict}},
    h('h3', {}, badge(hy.verdict), ' ', hy.title || hy.id),
    h('p', {}, h('code', {}, hy.id), ' — ', (hy.libraries || []).join(' / ')),
    h('dl', {class: 'facts-grid'},
      h('dt', {}, 'why considered'), h('dd', {}, hy.basis || '–'),
      h('dt', {}, 'predicts'), h('dd', {}, hy.symptom || '–'),
      h('dt', {}, 'decided by'), h('dd', {class: 'reason'}, hy.reason || 'not decided (no profile, or no probe)'),
      (hy.controls || []).length ? [h('dt', {}, 'controls'), h('dd', {}, h('code', {}, hy.controls.join(' ')))] : null,
      hy.constraint ? [h('dt', {}, 'constraint'), h('dd', {}, h('code', {}, hy.constraint))] : null),
    ev.length
      ? table(['signal', 'measured', 'threshold', 'passed', 'how'], ev.map((e) => h('tr', {class: e.passed ? 'pass' : 'fail'},
          h('td', {}, h('code', {}, e.signal)), h('td', {class: 'num'}, num(e.value)), h('td', {}, e.op + ' ' + num(e.threshold)),
          h('td', {}, e.passed ? '✓' : '✗'), h('td', {}, e.note || ''))), {class: 'evidence'})
      : checks.length ? table(['signal', 'threshold', 'what it shows'], checks.map((c) => h('tr', {},
          h('td', {}, h('code', {}, c.signal)), h('td', {}, threshold(c)), h('td', {}, c.why || ''))), {class: 'checks'}) : null,
    (hy.sources || []).length ? h('details', {}, h('summary', {}, 'contract statements it came from'),
      h('ul', {}, hy.sources.map((x) => h('li', {}, h('code', {}, x))))) : null);
}

async function analysisPage(id) {
  setSection('analyses');
  const a = (await api(apiPath('analyses', id))).analysis;
  const d = a.document || {};
  const libs = (d.libraries || []).filter((l) => l.direct || l.contract || l.found_by === 'dlopen');
  const signals = Object.entries(d.signals || {});
  page(
    h('p', {class: 'crumbs'}, link('Analyses', 'analyses'), ' / #' + a.id),
    h('h1', {}, 'Analysis ' + a.id),
    h('p', {}, h('code', {class: 'cmd'}, (a.argv || []).join(' ')), ' ', h('span', {class: 'muted'}, 'by ' + a.origin + ', ' + when(a.created_at))),
    (a.sessions || []).length ? h('p', {}, 'Tuning sessions started from it: ', a.sessions.map((s, i) => [i ? ', ' : '', link('#' + s, 'session', s)])) : null,
    h('h2', {}, 'Hypotheses'),
    (d.hypotheses || []).length ? h('div', {class: 'hypotheses', id: 'hypotheses'}, byVerdict(d.hypotheses).map(hypothesisCard))
                                : h('p', {class: 'muted'}, 'No rule matched this composition.'),
    h('h2', {}, 'Libraries'),
    table(['library', 'resolves to', 'found by', 'contract', 'processes'], libs.map((l) => h('tr', {},
      h('td', {}, h('code', {}, l.soname)), h('td', {}, h('code', {}, l.real_path || l.path || '')),
      h('td', {}, l.found_by || 'not found'), h('td', {}, l.contract || '–'), h('td', {class: 'num'}, l.processes || '')))),
    h('h2', {}, 'How they meet'),
    (d.relations || []).length ? h('ul', {}, d.relations.map((r) => h('li', {},
      h('code', {}, r.kind === 'nested' ? r.inner + ' inside ' + r.outer : r.outer + ' beside ' + r.inner),
      ' (' + r.how + ')', r.where ? [' at ', h('code', {}, r.where)] : null)))
      : h('p', {class: 'muted'}, d.source_scanned ? 'No nesting or co-running found.' : 'No source or manifest given: every pair is possible.'),
    signals.length ? [h('h2', {}, 'Signals of the default run'),
      table(['signal', 'value'], signals.map(([k, v]) => h('tr', {}, h('td', {}, h('code', {}, k)), h('td', {class: 'num'}, num(v)))), {class: 'signals'})] : null,
    (d.diagnostics || []).length ? [h('h2', {}, 'Diagnostics'), h('ul', {}, d.diagnostics.map((x) => h('li', {},
      (x.severity || '') + ': ' + (x.message || ''), x.hint ? h('span', {class: 'muted'}, ' — ' + x.hint) : null)))] : null);
  ready('analysis');
}

// --- jobs ------------------------------------------------------------------------------
function synthesisForm() {
  const field = (label, input) => h('label', {}, h('span', {}, label), input);
  const lib = h('input', {name: 'library', required: true, pattern: '[A-Za-z0-9][A-Za-z0-9._+\\-]{0,127}'});
  const ver = h('input', {name: 'version', required: true, pattern: '[A-Za-z0-9][A-Za-z0-9._+~:\\-]{0,127}'});
  const kind = h('select', {name: 'kind'}, ['dir', 'git', 'tarball', 'debian-source'].map((k) => h('option', {value: k}, k)));
  const where = h('input', {name: 'where', required: true, placeholder: 'path, URL or Debian package'});
  const ref = h('input', {name: 'ref', placeholder: 'git ref or Debian version'});
  const msg = h('p', {class: 'form-msg'});
  const form = h('form', {class: 'job-form', id: 'job-form'}, h('h2', {}, 'Start a synthesis'),
    field('library', lib), field('version', ver), field('source', kind), field('path / URL / package', where),
    field('ref / version', ref), h('button', {type: 'submit'}, 'Start'), msg);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const k = kind.value, w = where.value.trim();
    const source = {kind: k};
    if (k === 'dir') source.path = w;
    else if (k === 'git') { source.url = w; source.ref = ref.value.trim(); }
    else if (k === 'tarball') { if (/^https?:/.test(w)) source.url = w; else source.path = w; }
    else { source.package = w; source.version = ref.value.trim(); }
    try {
      const r = await api('/v1/synthesize', {method: 'POST', body: {library: lib.value.trim(), version: ver.value.trim(), source}});
      location.hash = route('job', r.job.id);
    } catch (e) {
      msg.textContent = e.message + (e.hint ? ' — ' + e.hint : '');
      msg.className = 'form-msg error';
    }
  });
  return form;
}

async function jobsPage(gen) {
  setSection('jobs');
  const jobs = (await api('/v1/jobs')).jobs;
  if (gen !== state.generation) return;
  const regen = canWrite() && state.who.regenerate
    ? h('button', {type: 'button', onclick: async () => {
        try { await api('/v1/regenerate', {method: 'POST', body: {}}); show((g) => jobsPage(g)); } catch (e) { main().prepend(errorBox(e)); }
      }}, 'Regenerate every tracked library') : null;
  page(
    h('h1', {}, 'Jobs'),
    jobs.length ? table(['job', 'kind', 'library', 'version', 'state', 'stage', 'progress', 'created', 'finished'],
      jobs.map((j) => h('tr', {}, h('td', {}, link(j.id, 'job', j.id)), h('td', {}, j.kind), h('td', {}, j.library),
        h('td', {}, j.version), h('td', {}, badge(j.state)), h('td', {}, j.stage), h('td', {class: 'num'}, pct(j.progress)),
        h('td', {class: 'nowrap'}, when(j.created_at)), h('td', {class: 'nowrap'}, when(j.finished_at)))), {class: 'jobs'})
      : h('p', {class: 'muted'}, 'No job has been submitted.'),
    canWrite() ? [synthesisForm(), regen]
               : h('p', {class: 'muted', id: 'write-note'}, 'Starting a job needs a token with write rights.'));
  ready('jobs');
  if (jobs.some((j) => j.state === 'queued' || j.state === 'running'))
    done(setTimeout(() => { if (gen === state.generation) show((g) => jobsPage(g)); }, 2000));
}

async function jobPage(id, gen) {
  setSection('jobs');
  const j = (await api(apiPath('jobs', id))).job;
  if (gen !== state.generation) return;
  const res = j.result || {};
  page(
    h('p', {class: 'crumbs'}, link('Jobs', 'jobs'), ' / ' + j.id),
    h('h1', {}, j.kind + ' ' + j.library + ' ' + j.version + ' ', badge(j.state)),
    h('dl', {class: 'facts-grid'},
      h('dt', {}, 'stage'), h('dd', {}, (j.stage || '–') + ' (' + pct(j.progress) + ')'),
      h('dt', {}, 'attempts'), h('dd', {}, String(j.attempts)),
      h('dt', {}, 'created'), h('dd', {}, when(j.created_at)),
      h('dt', {}, 'started'), h('dd', {}, when(j.started_at)),
      h('dt', {}, 'finished'), h('dd', {}, when(j.finished_at)),
      res.library && res.version && res.status === 'stored'
        ? [h('dt', {}, 'contract'), h('dd', {}, link(res.library + ' ' + res.version, 'contract', res.library, res.version))] : null),
    canWrite() && (j.state === 'queued' || j.state === 'running')
      ? h('button', {type: 'button', onclick: async () => {
          try { await api(apiPath('jobs', j.id), {method: 'DELETE'}); } catch (e) { main().prepend(errorBox(e)); return; }
          show((g) => jobPage(id, g));
        }}, 'Cancel') : null,
    h('h2', {}, 'Log'),
    h('pre', {class: 'log', id: 'log'}, (j.log || []).map((l) => (typeof l === 'string' ? l : JSON.stringify(l)) + '\n')),
    (j.diagnostics || []).length ? [h('h2', {}, 'Diagnostics'), h('ul', {}, j.diagnostics.map((d) => h('li', {},
      (d.severity || '') + ': ' + (d.message || ''), d.hint ? h('span', {class: 'muted'}, ' — ' + d.hint) : null)))] : null,
    j.result ? [h('h2', {}, 'Result'), h('pre', {class: 'json'}, JSON.stringify(j.result, null, 2))] : null);
  ready('job');
  if (j.state === 'queued' || j.state === 'running')
    done(setTimeout(() => { if (gen === state.generation) show((g) => jobPage(id, g)); }, 2000));
}

// --- routing ---------------------------------------------------------------------------
function dispatch() {
  if (!canRead()) { tokenForm(''); return; }
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter((p) => p !== '').map((p) => {
    try { return decodeURIComponent(p); } catch (_) { return p; }
  });
  const [page, a, b, c] = parts;
  switch (page) {
    case undefined: return show(librariesPage);
    case 'library': return show(() => libraryPage(a));
    case 'contract': return show(() => contractPage(a, b));
    case 'diff': return show(() => diffPage(a, b, c));
    case 'sessions': return show(sessionsPage);
    case 'session': return show((g) => sessionPage(a, g));
    case 'analyses': return show(analysesPage);
    case 'analysis': return show(() => analysisPage(a));
    case 'jobs': return show((g) => jobsPage(g));
    case 'job': return show((g) => jobPage(a, g));
    default:
      page(h('p', {class: 'error'}, 'No such page: ', location.hash));
      ready('unknown');
  }
}

async function start() {
  let message = '';
  try {
    message = await whoami();
  } catch (e) {
    page(errorBox(e));
    ready('error');
    return;
  }
  renderWho();
  if (message || !canRead()) { tokenForm(message); return; }
  dispatch();
}

window.addEventListener('hashchange', () => { if (state.who) dispatch(); });
document.addEventListener('DOMContentLoaded', start);
