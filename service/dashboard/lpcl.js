// LPCL for people: a highlighter that marks keywords, strings, comments, `@ "file:line"`
// references (buttons that show their provenance) and the statements a person wrote
// (`origin manual`); and a line diff of two contract texts.
'use strict';

const LPCL_STATEMENTS = new Set(['contract', 'binds', 'control', 'demand', 'assume', 'behavior', 'provides',
                                 'signal', 'origin']);
const LPCL_WORDS = new Set(['env', 'api', 'option', 'of', 'in', 'default', 'read_at', 'sets', 'fallback_for', 'doc',
                            'when', 'expect', 'rises_with', 'falls_with', 'introspect', 'region', 'soname', 'header',
                            'symbol', 'size', 'idle_timeout', 'confidence', 'int', 'float', 'bool', 'string', 'enum',
                            'bytes', 'duration', 'init', 'call', 'any', 'true', 'false', 'none']);
const LPCL_ORIGINS = new Set(['extracted', 'llm', 'manual']);

// Tokens of one text: {type, text, line}. Types: comment, string, number, word, punct, space.
function lpclTokens(text) {
  const out = [];
  let i = 0, line = 1;
  const push = (type, s) => { out.push({type, text: s, line}); };
  while (i < text.length) {
    const c = text[i];
    if (c === '\n') { push('newline', c); line++; i++; continue; }
    if (c === ' ' || c === '\t' || c === '\r') {
      let j = i;
      while (j < text.length && (text[j] === ' ' || text[j] === '\t' || text[j] === '\r')) j++;
      push('space', text.slice(i, j)); i = j; continue;
    }
    if (c === '#') {
      let j = text.indexOf('\n', i);
      if (j < 0) j = text.length;
      push('comment', text.slice(i, j)); i = j; continue;
    }
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"' && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      j = Math.min(text.length, j + 1);
      push('string', text.slice(i, j)); i = j; continue;
    }
    if (/[0-9]/.test(c)) {
      let j = i;
      while (j < text.length && /[0-9A-Za-z_.]/.test(text[j])) j++;
      push('number', text.slice(i, j)); i = j; continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      let j = i;
      while (j < text.length && /[A-Za-z0-9_.]/.test(text[j])) j++;
      push('word', text.slice(i, j)); i = j; continue;
    }
    push('punct', c); i++;
  }
  return out;
}

// The text of a string token, unquoted and unescaped.
function lpclString(tok) {
  let s = tok.text.slice(1, tok.text.endsWith('"') && tok.text.length > 1 ? -1 : undefined);
  return s.replace(/\\(.)/g, '$1');
}

// Renders `text` as numbered lines. onRef(ref) and onDoc(sentence) are called when a reference
// or a doc sentence is chosen. Returns {element, controlLines: Map(name -> line element)}.
function renderLpcl(text, onRef, onDoc) {
  const tokens = lpclTokens(text);
  const lines = [];
  const newLine = (n) => {
    const code = h('code', {class: 'src'});
    const el = h('div', {class: 'line'}, h('span', {class: 'ln'}, String(n)), h('span', {class: 'mark'}), code);
    lines.push({el, code});
  };
  newLine(1);
  let depth = 0, stmtStart = 0, stmtWords = [], prevNonSpace = null, manual = false;
  const controlLines = new Map();
  let expectControlName = false;
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k];
    if (t.type === 'newline') { newLine(lines.length + 1); continue; }
    const cur = lines[lines.length - 1].code;
    let node;
    if (t.type === 'string' && prevNonSpace && prevNonSpace.text === '@') {
      const ref = lpclString(t);
      node = h('button', {type: 'button', class: 'tok-ref', title: 'where this comes from', onclick: () => onRef(ref)}, t.text);
    } else if (t.type === 'string' && prevNonSpace && prevNonSpace.text === 'doc') {
      const sentence = lpclString(t);
      node = h('button', {type: 'button', class: 'tok-doc', title: 'the sentence in the documentation',
                          onclick: () => onDoc(sentence)}, t.text);
    } else if (t.type === 'word') {
      let cls = 'tok-id';
      if (LPCL_STATEMENTS.has(t.text)) cls = 'tok-kw';
      else if (LPCL_ORIGINS.has(t.text) && prevNonSpace && (prevNonSpace.text === 'origin' || prevNonSpace.text === ','))
        cls = 'tok-origin origin-' + t.text;
      else if (LPCL_WORDS.has(t.text)) cls = 'tok-kw2';
      node = h('span', {class: cls}, t.text);
      if (expectControlName) {
        controlLines.set(t.text, lines[lines.length - 1].el);
        expectControlName = false;
      }
      if (t.text === 'control' && stmtWords.length === 0) expectControlName = true;
      if (t.text === 'manual' && prevNonSpace && prevNonSpace.text === 'origin') manual = true;
    } else {
      node = h('span', {class: 'tok-' + t.type}, t.text);
    }
    cur.append(node);
    if (t.type === 'space' || t.type === 'comment') continue;
    if (stmtWords.length === 0) stmtStart = lines.length - 1;
    stmtWords.push(t.text);
    if (t.text === '{') { depth++; stmtWords = []; manual = false; }
    else if (t.text === '}') { depth--; stmtWords = []; manual = false; }
    else if (t.text === ';') {
      // A statement a person wrote: every line of it is marked (the contract's own origin
      // list, `origin extracted, manual;`, is not a statement of that kind).
      if (manual && stmtWords[0] !== 'origin') {
        for (let n = stmtStart; n < lines.length; n++) {
          lines[n].el.classList.add('manual');
          if (n === stmtStart) lines[n].el.querySelector('.mark').textContent = 'manual';
        }
      }
      stmtWords = []; manual = false;
    }
    prevNonSpace = t;
  }
  return {element: h('div', {class: 'lpcl'}, lines.map((l) => l.el)), controlLines};
}

// Lines of `a` and `b` compared: [{op: ' ' | '-' | '+', text, a, b}] (line numbers from 1), or
// null when the texts are too long to compare here.
function lineDiff(a, b) {
  const x = a.split('\n'), y = b.split('\n');
  const n = x.length, m = y.length;
  if ((n + 1) * (m + 1) > 6e6) return null;
  // Longest common subsequence, from the ends, so that the walk below goes forwards.
  const w = m + 1;
  const L = new Uint32Array((n + 1) * (m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      L[i * w + j] = x[i] === y[j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) { out.push({op: ' ', text: x[i], a: i + 1, b: j + 1}); i++; j++; }
    else if (j < m && (i === n || L[i * w + j + 1] >= L[(i + 1) * w + j])) { out.push({op: '+', text: y[j], b: j + 1}); j++; }
    else { out.push({op: '-', text: x[i], a: i + 1}); i++; }
  }
  return out;
}

// The diff as hunks with `context` unchanged lines around each change.
function renderLineDiff(ops, context) {
  const keep = new Array(ops.length).fill(false);
  ops.forEach((o, k) => {
    if (o.op === ' ') return;
    for (let d = Math.max(0, k - context); d <= Math.min(ops.length - 1, k + context); d++) keep[d] = true;
  });
  const rows = [];
  let skipped = 0;
  const flush = () => {
    if (skipped) rows.push(h('div', {class: 'dl skip'}, h('span', {class: 'ln'}), h('span', {class: 'ln'}),
                              h('code', {}, '… ' + skipped + ' unchanged line' + (skipped > 1 ? 's' : ''))));
    skipped = 0;
  };
  ops.forEach((o, k) => {
    if (!keep[k]) { skipped++; return; }
    flush();
    const cls = o.op === '+' ? 'add' : o.op === '-' ? 'del' : 'ctx';
    rows.push(h('div', {class: 'dl ' + cls}, h('span', {class: 'ln'}, o.a || ''), h('span', {class: 'ln'}, o.b || ''),
                h('code', {}, o.op + ' ' + o.text)));
  });
  flush();
  return h('div', {class: 'textdiff'}, rows);
}
