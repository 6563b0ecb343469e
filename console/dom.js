import { ApiError, describeError } from './api.js';

// DOM helpers shared by the console's views. Every value from the API goes in as text, never as HTML.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export const view = () => document.getElementById('view');
export const announce = (text) => {
  document.getElementById('status').textContent = text;
};

let uniqueIds = 0;
export const uid = (prefix) => `${prefix}-${++uniqueIds}`;

/** A readable error box with the API's message and, for a 400, its issues. */
export function errorBox(error, context) {
  const box = h('div', { class: 'error', role: 'alert' }, h('p', {}, context ? `${context}: ` : '', describeError(error)));
  if (error instanceof ApiError && error.details?.length) {
    box.append(h('ul', {}, error.details.map((d) => h('li', {}, `${(d.path ?? []).join('.') || '(request)'}: ${d.message}`))));
  }
  if (error instanceof ApiError && error.status === 401) box.append(h('p', {}, 'The token was refused. ', h('button', { type: 'button', onclick: () => document.dispatchEvent(new Event('console:sign-out')) }, 'Sign in again')));
  return box;
}

export function answerBox(title, answer) {
  return h('div', { class: 'answer', role: 'status' }, h('p', {}, title), h('details', {}, h('summary', {}, 'The API answer (JSON)'), h('pre', {}, JSON.stringify(answer, null, 2))));
}

/** An instant as people read it (UTC, to the minute), the exact value on hover and for machines. */
export function when(value) {
  if (!value) return '';
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  const readable = `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 16)} UTC`;
  return h('time', { datetime: String(value), title: String(value) }, readable);
}

export const dollars = (cents) => `$${(cents / 100).toFixed(2)}`;

/** A table in its own horizontally scrolling box: a wide table never pushes the page sideways. */
export function scrollBox(table) {
  const label = table.querySelector('caption')?.textContent ?? 'table';
  return h('div', { class: 'scroll', role: 'region', tabindex: '0', 'aria-label': `${label} (scrolls sideways)` }, table);
}

export function heading(text) {
  const el = h('h2', { tabindex: '-1' }, text);
  return el;
}

export function focusHeading() {
  view().querySelector('h2')?.focus();
}

export const signedDollars = (cents) => `${cents < 0 ? '−' : cents > 0 ? '+' : ''}${dollars(Math.abs(cents))}`;

/** One audited action: its own fields, a required reason, and the API's answer shown below it. */
export function actionForm({ title, help, submit, fields, call, describe, after, confirm: confirmText, notice }) {
  const reasonId = uid('reason');
  const out = notice ?? h('div', { class: 'out' });
  const inputs = fields.map((f) => ({ ...f, id: uid(f.name) }));
  const form = h(
    'form',
    { class: 'action', 'aria-label': title },
    h('fieldset', {}, h('legend', {}, title), h('p', { class: 'help' }, help)),
  );
  const set = form.firstChild;
  for (const f of inputs) {
    const control = f.options
      ? h('select', { id: f.id, name: f.name }, f.options.map(([value, text]) => h('option', { value }, text)))
      : h('input', { id: f.id, name: f.name, required: !f.optional, placeholder: f.placeholder, autocomplete: 'off' });
    set.append(h('label', { for: f.id }, f.label), control);
  }
  set.append(h('label', { for: reasonId }, 'Reason (goes on the audit row)'), h('textarea', { id: reasonId, name: 'reason', required: true, rows: '2' }), h('button', { type: 'submit' }, submit));
  if (!notice) set.append(out);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const reason = String(data.get('reason') ?? '').trim();
    if (reason === '') {
      out.replaceChildren(h('p', { class: 'error', role: 'alert' }, 'Give a reason: it goes on the audit row.'));
      return;
    }
    const values = Object.fromEntries(inputs.map((f) => [f.name, String(data.get(f.name) ?? '').trim()]));
    if (confirmText && !window.confirm(confirmText())) {
      out.replaceChildren(h('p', {}, 'Not sent: nothing was charged.'));
      return;
    }
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    out.replaceChildren(h('p', {}, 'Sending…'));
    try {
      const { body } = await call(reason, values);
      out.replaceChildren(answerBox(describe(body), body));
      form.querySelector('textarea').value = '';
      announce(describe(body));
      await after(body);
    } catch (error) {
      out.replaceChildren(errorBox(error, `${title} was not done`));
    } finally {
      button.disabled = false;
    }
  });
  return form;
}
