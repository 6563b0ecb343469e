import { ApiError, api, describeError, loadConfig, newIdempotencyKey, session } from './api.js';

// The operator console: the failing, dunning and exceptions lists, a subscription's periods and
// audit history, and the audited actions. Plain DOM, no framework, no build step; every value
// from the API goes in as text, never as HTML.

/* ---------------- DOM helpers ---------------- */

function h(tag, attrs = {}, ...children) {
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

const view = () => document.getElementById('view');
const announce = (text) => {
  document.getElementById('status').textContent = text;
};

let uniqueIds = 0;
const uid = (prefix) => `${prefix}-${++uniqueIds}`;

/** A readable error box with the API's message and, for a 400, its issues. */
function errorBox(error, context) {
  const box = h('div', { class: 'error', role: 'alert' }, h('p', {}, context ? `${context}: ` : '', describeError(error)));
  if (error instanceof ApiError && error.details?.length) {
    box.append(h('ul', {}, error.details.map((d) => h('li', {}, `${(d.path ?? []).join('.') || '(request)'}: ${d.message}`))));
  }
  if (error instanceof ApiError && error.status === 401) box.append(h('p', {}, 'The token was refused. ', h('button', { type: 'button', onclick: signOut }, 'Sign in again')));
  return box;
}

function answerBox(title, answer) {
  return h('div', { class: 'answer', role: 'status' }, h('p', {}, title), h('details', {}, h('summary', {}, 'The API answer (JSON)'), h('pre', {}, JSON.stringify(answer, null, 2))));
}

/** An instant as people read it (UTC, to the minute), the exact value on hover and for machines. */
function when(value) {
  if (!value) return '';
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  const readable = `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 16)} UTC`;
  return h('time', { datetime: String(value), title: String(value) }, readable);
}

const dollars = (cents) => `$${(cents / 100).toFixed(2)}`;

/** A table in its own horizontally scrolling box: a wide table never pushes the page sideways. */
function scrollBox(table) {
  const label = table.querySelector('caption')?.textContent ?? 'table';
  return h('div', { class: 'scroll', role: 'region', tabindex: '0', 'aria-label': `${label} (scrolls sideways)` }, table);
}

function heading(text) {
  const el = h('h2', { tabindex: '-1' }, text);
  return el;
}

function focusHeading() {
  view().querySelector('h2')?.focus();
}

/* ---------------- sign-in ---------------- */

async function signIn(event) {
  event.preventDefault();
  const input = document.getElementById('token');
  const token = input.value.trim();
  const out = document.getElementById('sign-in-error');
  out.replaceChildren();
  if (token === '') return;
  try {
    // Any read with the token tells whether the API takes it.
    await api('GET', '/v1/subscriptions?billing=failing&limit=1', { token });
  } catch (error) {
    const why =
      error instanceof ApiError && error.status === 401
        ? 'Sign-in failed: the API refused this token (401 Unauthorized). Check that you pasted the whole token and that it has not expired.'
        : error instanceof ApiError && error.status === 403
          ? 'Sign-in failed: this token lacks the billing:read scope (403 Forbidden).'
          : `Sign-in failed. ${describeError(error)}`;
    out.replaceChildren(h('p', { class: 'error' }, why));
    input.focus();
    return;
  }
  input.value = '';
  session.signIn(token);
  announce('Signed in');
  if (!location.hash || location.hash === '#/') location.hash = '#/failing';
  else render();
}

function signOut() {
  session.signOut();
  announce('Signed out');
  render();
}

/* ---------------- lists ---------------- */

/** The columns after Status differ per list: what that list is about, as the API reads it back. */
const failureColumns = {
  headers: ['State', 'Failures', 'Next attempt', 'Last error'],
  cells: (r) => {
    const f = r.billing_failure;
    return [f?.state ?? '', f?.count ?? '', f ? (f.next_attempt_at ? when(f.next_attempt_at) : 'none (parked)') : '', f?.last_error ?? r.payment_error ?? ''];
  },
};
const dunningColumns = {
  headers: ['State', 'Attempts', 'Next attempt', 'Decline'],
  cells: (r) => {
    const d = r.dunning;
    return [d?.state ?? '', d?.attempts ?? '', d ? (d.next_attempt_at ? when(d.next_attempt_at) : 'none (exhausted)') : '', d ? `${d.decline_code} (${d.decline_class})` : ''];
  },
};
const exceptionColumns = {
  headers: ['Exception', 'Received', 'Raised', 'Detail'],
  cells: (r) => {
    const e = r.ach_exception ?? r.card_exception;
    const received = typeof e?.received_cents === 'number' ? `$${(e.received_cents / 100).toFixed(2)}${e.currency ? ` ${e.currency}` : ''}` : '';
    return [e?.code ?? '', received, e?.at ? when(e.at) : '', e?.dispute_status ?? e?.payment_intent_id ?? ''];
  },
};

const LISTS = {
  // Every failing period is owed (PENDING or FAILED): the state says what matters, so no status column.
  failing: { title: 'Failing subscriptions', billing: 'failing', states: ['retrying', 'parked'], columns: failureColumns, noStatus: true },
  dunning: { title: 'Dunning', billing: 'dunning', states: ['retrying', 'exhausted'], columns: dunningColumns },
  exceptions: { title: 'Exceptions', billing: 'exceptions', states: [], columns: exceptionColumns },
};

function listView(name, params) {
  const list = LISTS[name];
  const state = list.states.includes(params.get('state')) ? params.get('state') : '';
  const root = h('section', { 'aria-labelledby': 'list-title' });
  const title = heading(list.title);
  title.id = 'list-title';
  root.append(title);

  if (list.states.length > 0) {
    const filters = h('nav', { 'aria-label': 'State filter', class: 'filters' });
    for (const s of ['', ...list.states]) {
      const href = `#/${name}${s ? `?state=${s}` : ''}`;
      filters.append(h('a', { href, 'aria-current': s === state ? 'page' : undefined }, s === '' ? 'All' : s));
    }
    root.append(filters);
  }

  const table = h('table', {}, h('caption', {}, `${list.title}${state ? ` (${state})` : ''}`));
  table.append(
    h('thead', {}, h('tr', {}, ['Subscription', 'User', 'Billing date', 'Amount', ...(list.noStatus ? [] : ['Status']), ...list.columns.headers].map((c) => h('th', { scope: 'col' }, c)))),
  );
  const tbody = h('tbody');
  table.append(tbody);
  const count = h('p', { class: 'count' });
  const more = h('div');
  root.append(count, scrollBox(table), more);

  let shown = 0;
  const pageSize = /^\d{1,3}$/.test(params.get('limit') ?? '') ? Math.min(100, Math.max(1, Number(params.get('limit')))) : 25;
  const query = new URLSearchParams({ billing: list.billing, limit: String(pageSize) });
  if (state) query.set('state', state);

  async function load(next) {
    const q = new URLSearchParams(query);
    if (next) q.set('next', next);
    more.replaceChildren(h('p', {}, 'Loading…'));
    try {
      const { body } = await api('GET', `/v1/subscriptions?${q}`);
      for (const r of body.items) {
        tbody.append(
          h(
            'tr',
            {},
            h('td', {}, h('a', { href: `#/subscriptions/${encodeURIComponent(r.subscription_id)}` }, r.subscription_id)),
            h('td', {}, r.user_id),
            h('td', {}, when(r.billing_date)),
            h('td', { class: 'num' }, `$${r.amount}`),
            list.noStatus ? '' : h('td', {}, r.billing_status),
            ...list.columns.cells(r).map((value, i) => h('td', i === 1 ? { class: 'num' } : {}, value instanceof Node ? value : String(value))),
          ),
        );
      }
      shown += body.items.length;
      count.textContent = `${shown} shown${body.next ? ', more available' : ''}.`;
      if (shown === 0) tbody.append(h('tr', {}, h('td', { colspan: '9' }, 'Nothing here.')));
      more.replaceChildren(body.next ? h('button', { type: 'button', onclick: () => load(body.next) }, 'Load more') : '');
      announce(`${list.title}: ${shown} shown`);
    } catch (error) {
      more.replaceChildren(errorBox(error, `Could not load ${list.title.toLowerCase()}`));
    }
  }
  void load(undefined);
  return root;
}

/* ---------------- a subscription ---------------- */

const DECISION_PREFIX = 'data_';

function decisionContext(row) {
  const entries = Object.entries(row).filter(([k]) => k.startsWith(DECISION_PREFIX));
  if (entries.length === 0) return '';
  return h('dl', { class: 'context' }, entries.flatMap(([k, v]) => [h('dt', {}, k.slice(DECISION_PREFIX.length)), h('dd', {}, String(v))]));
}

/** The exception that received money, as the API shows it (ACH or card), or undefined. */
function receivedException(record) {
  const e = record.ach_exception ?? record.card_exception;
  return e && typeof e.received_cents === 'number' ? e : undefined;
}

/** Everything the API says about the period, one line each. */
function summaryRows(record) {
  const f = record.billing_failure;
  const d = record.dunning;
  const e = record.ach_exception ?? record.card_exception;
  const rows = [
    ['User', record.user_id],
    ['Billing date', when(record.billing_date)],
    ['Amount', `$${record.amount}`],
    ['Status', record.billing_status],
    ['Payment method', `${record.payment_method}${record.account_last_four ? ` ending ${record.account_last_four}` : ''}`],
    ['Transaction', record.transaction_id ?? 'none'],
    ['Billing failure', f ? h('span', {}, `${f.state}, ${f.count} failures, last: ${f.last_error}`, f.next_attempt_at ? h('span', {}, ', next attempt ', when(f.next_attempt_at)) : '') : 'none'],
    ['Dunning', d ? h('span', {}, `${d.state}, ${d.attempts} attempts, decline ${d.decline_code} (${d.decline_class})`, d.next_attempt_at ? h('span', {}, ', next attempt ', when(d.next_attempt_at)) : ', no automatic attempt left') : 'none'],
    [
      'Exception',
      e
        ? h(
            'span',
            { class: 'flag' },
            `${record.ach_exception ? 'ACH' : 'card'} ${e.code}`,
            typeof e.received_cents === 'number' ? `: ${dollars(e.received_cents)}${e.currency ? ` ${e.currency}` : ''} received of $${record.amount}` : '',
            e.payment_intent_id || e.confirmation_id ? `, transaction ${e.payment_intent_id ?? e.confirmation_id}` : record.ach_exception ? `, transaction ${record.transaction_id ?? ''}` : '',
            e.dispute_id ? `, dispute ${e.dispute_id} (${e.dispute_status})` : '',
            ', raised ',
            when(e.at),
          )
        : 'none',
    ],
  ];
  if (typeof record.amount_received_cents === 'number') rows.push(['Received', dollars(record.amount_received_cents)]);
  if (record.payment_error) rows.push(['Last error', record.payment_error]);
  if (record.decline_code && !d) rows.push(['Decline', `${record.decline_code}${record.decline_class ? ` (${record.decline_class})` : ''}`]);
  return rows;
}

function subscriptionView(id) {
  const root = h('section', { 'aria-labelledby': 'sub-title' });
  const title = heading(`Subscription ${id}`);
  title.id = 'sub-title';
  const summary = h('div');
  const actions = h('div', { class: 'actions' });
  // The last action's answer stays here while the forms follow the period's new status.
  const notice = h('div', { class: 'out notice' });
  const periods = h('div');
  const history = h('div');
  root.append(title, summary, h('h3', {}, 'Actions'), notice, actions, h('h3', {}, 'Periods'), periods, h('h3', {}, 'Audit history'), history);

  async function refresh() {
    let record;
    try {
      record = (await api('GET', `/v1/subscriptions/${encodeURIComponent(id)}`)).body;
    } catch (error) {
      summary.replaceChildren(errorBox(error, 'Could not load the subscription'));
      return;
    }
    const facts = h('dl', { class: 'summary' }, summaryRows(record).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v ?? '')]));
    summary.replaceChildren(facts);
    void loadHolds(record.user_id, facts);
    actions.replaceChildren(...actionsFor(record));
    if (actions.childElementCount === 0) actions.append(h('p', { class: 'none' }, `No action applies to a ${record.billing_status} period.`));
    void loadPeriods(record.user_id);
    void loadHistory();
  }

  /** The holds on the user's instruments (DESIGN 3.2) and the rule that set each: they bind every period. */
  async function loadHolds(userId, facts) {
    let body;
    try {
      body = (await api('GET', `/v1/users/${encodeURIComponent(userId)}/instruments`)).body;
    } catch {
      facts.append(h('dt', {}, 'Holds'), h('dd', {}, 'could not be read'));
      return;
    }
    const holds = body.items.flatMap((item) =>
      item.holds.map((hold) => h('div', {}, `${item.instrument_id}: ${hold.code} (${hold.rule})${hold.operator_releasable ? ', an operator may release it' : ''}, since `, when(hold.since))),
    );
    facts.append(h('dt', {}, 'Holds'), h('dd', {}, ...(holds.length > 0 ? holds : ['none'])));
    // Only a hold an operator may lift (a dispute) gets a release; NACHA's and the networks' are theirs.
    const releasable = body.items.flatMap((item) => item.holds.filter((hold) => hold.operator_releasable).map((hold) => releaseForm(userId, item.instrument_id, hold)));
    if (releasable.length === 0) return;
    actions.querySelector('p.none')?.remove();
    actions.append(...releasable);
  }

  function releaseForm(userId, instrumentId, hold) {
    return actionForm({
      title: `Release the ${hold.code} hold on ${instrumentId}`,
      help: `Set by ${hold.rule}. Releasing it brings the periods it held back onto the schedule, each with an audit row naming you and the reason. Nothing is charged now.`,
      submit: 'Release the hold',
      fields: [],
      confirm: () => `Release the ${hold.code} hold on ${instrumentId}? The periods it held become due again and the schedule may charge them.`,
      call: (reason) => api('POST', `/v1/users/${encodeURIComponent(userId)}/instruments/${encodeURIComponent(instrumentId)}/holds/${encodeURIComponent(hold.code)}/release`, { body: { reason } }),
      describe: (b) => `Hold ${b.hold_code} released: ${b.released_periods} period(s) due again`,
      after: refresh,
      notice,
    });
  }

  async function loadPeriods(userId, next, table) {
    if (!table) {
      table = h(
        'table',
        {},
        h('caption', {}, `Billing periods of ${userId}, newest first`),
        h('thead', {}, h('tr', {}, ['Billing date', 'Subscription', 'Amount', 'Status', 'Attempts', 'Failure'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody'),
      );
      periods.replaceChildren(scrollBox(table), h('div'));
    }
    const more = periods.lastChild;
    try {
      const q = new URLSearchParams({ limit: '12' });
      if (next) q.set('next', next);
      const { body } = await api('GET', `/v1/users/${encodeURIComponent(userId)}/subscriptions?${q}`);
      for (const p of body.items) {
        const current = p.subscription_id === id;
        table.tBodies[0].append(
          h(
            'tr',
            { class: current ? 'current' : undefined },
            h('td', {}, when(p.billing_date)),
            h('td', {}, current ? h('span', {}, p.subscription_id, ' (this one)') : h('a', { href: `#/subscriptions/${encodeURIComponent(p.subscription_id)}` }, p.subscription_id)),
            h('td', { class: 'num' }, `$${p.amount}`),
            h('td', {}, p.billing_status),
            h('td', { class: 'num' }, p.payment_attempts ?? ''),
            h('td', {}, p.billing_failure ? `${p.billing_failure.state} (${p.billing_failure.count})` : ''),
          ),
        );
      }
      more.replaceChildren(body.next ? h('button', { type: 'button', onclick: () => loadPeriods(userId, body.next, table) }, 'More periods') : '');
    } catch (error) {
      more.replaceChildren(errorBox(error, 'Could not load the periods'));
    }
  }

  async function loadHistory(next, table) {
    if (!table) {
      table = h(
        'table',
        {},
        h('caption', {}, 'Audit rows, newest first'),
        h('thead', {}, h('tr', {}, ['Written', 'Status', 'Process', 'Event', 'Actor', 'Reason', 'Run', 'Decision context', 'Error'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody'),
      );
      history.replaceChildren(scrollBox(table), h('div'));
    }
    const more = history.lastChild;
    try {
      const q = new URLSearchParams({ limit: '20' });
      if (next) q.set('next', next);
      const { body } = await api('GET', `/v1/subscriptions/${encodeURIComponent(id)}/history?${q}`);
      for (const row of body.items) {
        table.tBodies[0].append(
          h(
            'tr',
            {},
            h('td', {}, when(row.last_run_date)),
            h('td', {}, row.billing_status),
            h('td', {}, row.process ?? ''),
            h('td', {}, row.billing_event ?? row.updated_event ?? '', row.resolution ? ` (${row.resolution}${typeof row.amount_difference_cents === 'number' ? `, ${row.amount_difference_cents < 0 ? 'short' : 'over'} ${dollars(Math.abs(row.amount_difference_cents))}` : ''}${row.refund_id ? `, refund ${row.refund_id}` : ''})` : ''),
            h('td', {}, row.actor ?? ''),
            h('td', {}, row.reason ?? ''),
            h('td', {}, row.run_id ? h('a', { href: `#/retry-runs/${encodeURIComponent(row.run_id)}` }, row.run_id) : ''),
            h('td', {}, decisionContext(row)),
            h('td', {}, row.payment_error ?? row.billing_failure?.last_error ?? ''),
          ),
        );
      }
      if (body.items.length === 0 && !next) table.tBodies[0].append(h('tr', {}, h('td', { colspan: '9' }, 'No audit rows.')));
      more.replaceChildren(body.next ? h('button', { type: 'button', onclick: () => loadHistory(body.next, table) }, 'Older audit rows') : '');
    } catch (error) {
      more.replaceChildren(errorBox(error, 'Could not load the audit history'));
    }
  }

  /** The actions the period's status allows (the API's transition table decides; this only hides what it would refuse). */
  function actionsFor(record) {
    const status = record.billing_status === 'PASTDUE' ? (record.dunning ? 'FAILED' : 'PENDING') : record.billing_status;
    const forms = [];
    const exception = receivedException(record);
    if (exception && ['PENDING', 'FAILED', 'ACHSENT'].includes(status)) forms.push(resolveForm(record, exception));
    if (['PENDING', 'FAILED'].includes(status)) {
      forms.push(
        actionForm({
          title: 'Retry billing',
          help: 'Clears the billing failure and attempts the period now.',
          submit: 'Retry billing',
          fields: [],
          // It charges the member: a person says yes first.
          confirm: () => `Charge ${record.user_id} $${record.amount} (${record.payment_method}) now?`,
          call: (reason) => api('POST', `/v1/subscriptions/${encodeURIComponent(id)}/retry-billing`, { body: { reason } }),
          describe: (b) => `Retry billing: ${b.outcome}${b.still_due ? ' (still due)' : ''}; status ${b.subscription?.billing_status}${b.billing_failure ? `; failure: ${b.billing_failure.last_error}` : ''}`,
          after: refresh,
          notice,
        }),
      );
    }
    if (['PENDING', 'FAILED', 'PAUSED'].includes(status)) {
      forms.push(
        actionForm({
          title: 'Waive',
          help: 'Waives this period: it will not be collected.',
          submit: 'Waive this period',
          fields: [],
          call: (reason) => api('POST', `/v1/subscriptions/${encodeURIComponent(id)}/waive`, { body: { reason } }),
          describe: (b) => `Waived: status ${b.subscription?.billing_status}`,
          after: refresh,
          notice,
        }),
      );
    }
    if (status === 'PENDING') {
      forms.push(
        actionForm({
          title: 'Change due date',
          help: 'Moves the period to a new billing date (RFC 3339, e.g. 2026-12-15T12:00:00Z).',
          submit: 'Change due date',
          fields: [{ name: 'billing_date', label: 'New billing date', placeholder: '2026-12-15T12:00:00Z' }],
          call: (reason, values) => api('PUT', `/v1/subscriptions/${encodeURIComponent(id)}/billing-date`, { body: { billing_date: values.billing_date, reason } }),
          describe: (b) => `Due date changed: now ${b.subscription?.billing_date} (subscription ${b.subscription?.subscription_id})`,
          after: async (b) => {
            if (b.subscription?.subscription_id && b.subscription.subscription_id !== id) location.hash = `#/subscriptions/${encodeURIComponent(b.subscription.subscription_id)}`;
            else await refresh();
          },
          notice,
        }),
      );
    }
    return forms;
  }

  function resolveForm(record, exception) {
    return actionForm({
      title: 'Resolve the exception',
      help: `${exception.code}: ${dollars(exception.received_cents)}${exception.currency ? ` ${exception.currency}` : ''} received for $${record.amount}. Accept settles the period with what arrived; waive writes it off; refunded and retry needs the processor's refund id and makes the full amount owed again. Nothing is charged.`,
      submit: 'Resolve',
      fields: [
        { name: 'resolution', label: 'Resolution', options: [['accept', 'accept: the money received pays the period'], ['waive', 'waive: write the period off'], ['refunded_retry', 'refunded and retry: owed in full again']] },
        { name: 'refund_id', label: "Refund id (refunded and retry only: the processor's id)", optional: true, placeholder: 're_...' },
      ],
      call: (reason, values) =>
        api('POST', `/v1/subscriptions/${encodeURIComponent(id)}/exception/resolve`, {
          body: { resolution: values.resolution, reason, ...(values.resolution === 'refunded_retry' ? { refund_id: values.refund_id } : {}) },
        }),
      describe: (b) => `Exception resolved (${b.resolution}): status ${b.subscription?.billing_status}`,
      after: refresh,
      notice,
    });
  }

  void refresh();
  return root;
}

/** One audited action: its own fields, a required reason, and the API's answer shown below it. */
function actionForm({ title, help, submit, fields, call, describe, after, confirm: confirmText, notice }) {
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

/* ---------------- bulk retry ---------------- */

function bulkRetryView() {
  const root = h('section', { 'aria-labelledby': 'bulk-title' });
  const title = heading('Bulk retry');
  title.id = 'bulk-title';
  const ids = { state: uid('state'), users: uid('users'), limit: uid('limit'), reason: uid('reason') };
  const out = h('div', { class: 'out' });
  const runButton = h('button', { type: 'button', disabled: true }, 'Start the retry run');
  const form = h(
    'form',
    { 'aria-label': 'Bulk retry' },
    h(
      'fieldset',
      {},
      h('legend', {}, 'Which periods'),
      h('label', { for: ids.state }, 'State'),
      h('select', { id: ids.state, name: 'state' }, h('option', { value: 'parked' }, 'parked (failing, no more automatic attempts)'), h('option', { value: 'exhausted' }, 'exhausted (dunning gave up)')),
      h('label', { for: ids.users }, 'Only these users (optional, comma-separated ids)'),
      h('input', { id: ids.users, name: 'user_ids', autocomplete: 'off' }),
      h('label', { for: ids.limit }, 'At most (optional)'),
      h('input', { id: ids.limit, name: 'limit', type: 'number', min: '1', inputmode: 'numeric' }),
      h('label', { for: ids.reason }, 'Reason (goes on every audit row)'),
      h('textarea', { id: ids.reason, name: 'reason', required: true, rows: '2' }),
      h('button', { type: 'submit' }, 'Dry run: show what would be retried'),
      runButton,
    ),
    out,
  );
  root.append(title, h('p', {}, 'A dry run comes first: it lists the periods the run would retry. Then start the run for those parameters.'), form);

  let dryRunOf = null;
  let dryRunSelected = 0;
  let dryRunTotal = '';
  // The Idempotency-Key of a run request that got no answer (a timeout, a lost connection, a 5xx):
  // starting the same run again sends the same key, so the API answers the run that request may
  // have created, and finishes creating it, instead of starting a second one.
  let unanswered = null;
  const requestOf = () => {
    const data = new FormData(form);
    const users = String(data.get('user_ids') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const limit = String(data.get('limit') ?? '').trim();
    return {
      state: String(data.get('state')),
      ...(users.length ? { user_ids: users } : {}),
      ...(limit ? { limit: Number(limit) } : {}),
      reason: String(data.get('reason') ?? '').trim(),
    };
  };
  form.addEventListener('input', () => {
    // A change after the dry run needs a new dry run.
    if (dryRunOf && JSON.stringify(requestOf()) !== dryRunOf) {
      dryRunOf = null;
      runButton.disabled = true;
    }
  });

  async function post(dryRun) {
    const request = requestOf();
    if (request.reason === '') {
      out.replaceChildren(h('p', { class: 'error', role: 'alert' }, 'Give a reason: it goes on every audit row.'));
      return;
    }
    // The run charges: a person says yes to what the dry run showed.
    if (!dryRun && !window.confirm(`Start the retry run? It attempts to charge the ${dryRunSelected} periods of the dry run${dryRunTotal}.`)) return;
    out.replaceChildren(h('p', {}, 'Sending…'));
    const fingerprint = JSON.stringify(request);
    const key = !dryRun && unanswered?.fingerprint === fingerprint ? unanswered.key : newIdempotencyKey();
    try {
      const { body } = await api('POST', '/v1/billing/retry-runs', { body: { ...request, dry_run: dryRun }, headers: { 'Idempotency-Key': key } });
      if (!dryRun) unanswered = null;
      const items = Array.isArray(body?.items) ? body.items : [];
      const text = dryRun ? `Dry run: ${body?.selected ?? items.length} periods would be retried.` : `Retry run ${body?.run_id} started for ${body?.selected ?? items.length} periods.`;
      const box = answerBox(text, body);
      if (items.length) box.insertBefore(await selectionTable(items, dryRun ? 'Periods the run would retry' : 'Periods the run retries'), box.lastChild);
      if (!dryRun && body?.run_id) box.append(h('p', {}, h('a', { href: `#/retry-runs/${encodeURIComponent(body.run_id)}` }, 'Follow this run')));
      out.replaceChildren(box);
      announce(text);
      if (dryRun) {
        dryRunOf = JSON.stringify(request);
        dryRunSelected = body?.selected ?? items.length;
        const total = box.querySelector('td.total')?.textContent;
        dryRunTotal = total ? `, ${total} in all` : '';
        runButton.disabled = false;
      } else {
        dryRunOf = null;
        runButton.disabled = true;
      }
    } catch (error) {
      const noAnswer = !(error instanceof ApiError) || error.status === 0 || error.status >= 500 || error.code === 'request_in_progress';
      if (dryRun || !noAnswer) {
        out.replaceChildren(errorBox(error, dryRun ? 'The dry run was not done' : 'The run was not started'));
        return;
      }
      unanswered = { fingerprint, key };
      const box = errorBox(error, 'The run may or may not have started');
      box.append(h('p', {}, 'Press "Start the retry run" again with the same fields: the same request is sent again with the same Idempotency-Key, so a run it created is answered and finished, not started twice.'));
      out.replaceChildren(box);
    }
  }
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void post(true);
  });
  runButton.addEventListener('click', () => void post(false));
  return root;
}

/** What each selected period owes (read from the API, at most 100 of them), with the total. */
async function selectionTable(items, caption) {
  const shown = items.slice(0, 100);
  const reads = await Promise.all(shown.map((i) => api('GET', `/v1/subscriptions/${encodeURIComponent(i.subscription_id)}`).then((r) => r.body, () => undefined)));
  let total = 0;
  const rows = shown.map((item, n) => {
    const record = reads[n];
    if (record) total += record.amount_cents;
    return h(
      'tr',
      {},
      h('td', {}, h('a', { href: `#/subscriptions/${encodeURIComponent(item.subscription_id)}` }, item.subscription_id)),
      h('td', {}, item.user_id),
      h('td', {}, record ? when(record.billing_date) : ''),
      h('td', { class: 'num' }, record ? `$${record.amount}` : 'unknown'),
    );
  });
  const table = h(
    'table',
    {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, ['Subscription', 'User', 'Billing date', 'Amount'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows),
    h('tfoot', {}, h('tr', {}, h('th', { scope: 'row', colspan: '3' }, `Total of ${shown.length} periods${items.length > shown.length ? ` (the first ${shown.length} of ${items.length})` : ''}`), h('td', { class: 'num total' }, dollars(total)))),
  );
  return scrollBox(table);
}

/** How long the run page waits between reads while the run is running. */
const RUN_POLL_MS = 1500;

function retryRunView(runId) {
  const root = h('section', {}, heading(`Retry run ${runId}`));
  const out = h('div');
  const items = h('div');
  root.append(out, h('button', { type: 'button', onclick: () => load() }, 'Refresh'), items);
  let timer;
  async function load() {
    clearTimeout(timer);
    if (!root.isConnected && timer !== undefined) return;
    try {
      const { body } = await api('GET', `/v1/billing/retry-runs/${encodeURIComponent(runId)}`);
      const c = body.counts ?? {};
      const box = answerBox(`Run ${body.run_id}: ${body.status}; billed ${c.billed ?? 0}, failed ${c.failed ?? 0}, still due ${c.still_due ?? 0}, skipped ${c.skipped ?? 0}`, body);
      box.insertBefore(h('p', { class: 'meta' }, `${body.dry_run ? 'Dry run' : 'Run'} of ${body.state} periods by ${body.actor}, started `, when(body.created_at), `: ${body.reason}`), box.lastChild);
      if (body.creation === 'interrupted') {
        box.insertBefore(
          h('p', { class: 'error', role: 'alert' }, 'Its creation was interrupted: the request that created it stopped before every period was queued, and its pending periods wait for nobody. Repeat that request (same Idempotency-Key, same body) to finish it; a new request starts a new run.'),
          box.lastChild,
        );
      }
      out.replaceChildren(box);
      items.replaceChildren(runItemsTable(body.items ?? []), body.next ? h('p', { class: 'count' }, 'More items than shown: the first page is listed.') : '');
      // Followed live until done; leaving the page stops it.
      if (body.status === 'running' && body.creation !== 'interrupted') timer = setTimeout(() => (root.isConnected ? load() : undefined), RUN_POLL_MS);
    } catch (error) {
      out.replaceChildren(errorBox(error, 'Could not load the run'));
    }
  }
  void load();
  return root;
}

/** Past bulk retry runs, newest first, each a link to its page. */
function retryRunsView() {
  const root = h('section', {}, heading('Retry runs'));
  const table = h(
    'table',
    {},
    h('caption', {}, 'Retry runs, newest first'),
    h('thead', {}, h('tr', {}, ['Run', 'Started', 'By', 'State', 'Status', 'Selected', 'Billed', 'Failed', 'Still due', 'Skipped', 'Reason'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody'),
  );
  const more = h('div');
  root.append(scrollBox(table), more);
  async function load(next) {
    try {
      const q = new URLSearchParams({ limit: '20' });
      if (next) q.set('next', next);
      const { body } = await api('GET', `/v1/billing/retry-runs?${q}`);
      for (const run of body.items) {
        const c = run.counts ?? {};
        table.tBodies[0].append(
          h(
            'tr',
            {},
            h('td', {}, h('a', { href: `#/retry-runs/${encodeURIComponent(run.run_id)}` }, run.run_id)),
            h('td', {}, when(run.created_at)),
            h('td', {}, run.actor),
            h('td', {}, `${run.state}${run.dry_run ? ' (dry run)' : ''}`),
            h('td', {}, run.creation === 'interrupted' ? 'interrupted' : run.status),
            ...[run.selected, c.billed, c.failed, c.still_due, c.skipped].map((n) => h('td', { class: 'num' }, String(n ?? 0))),
            h('td', {}, run.reason),
          ),
        );
      }
      if (!next && body.items.length === 0) table.tBodies[0].append(h('tr', {}, h('td', { colspan: '11' }, 'No runs yet.')));
      more.replaceChildren(body.next ? h('button', { type: 'button', onclick: () => load(body.next) }, 'Older runs') : '');
    } catch (error) {
      more.replaceChildren(errorBox(error, 'Could not load the runs'));
    }
  }
  void load();
  return root;
}

function runItemsTable(items) {
  return scrollBox(
    h(
      'table',
      {},
      h('caption', {}, 'Items of the run'),
      h('thead', {}, h('tr', {}, ['Subscription', 'User', 'Billing date', 'Outcome', 'Detail', 'Finished'].map((c) => h('th', { scope: 'col' }, c)))),
      h(
        'tbody',
        {},
        items.map((i) =>
          h(
            'tr',
            {},
            h('td', {}, h('a', { href: `#/subscriptions/${encodeURIComponent(i.subscription_id)}` }, i.subscription_id)),
            h('td', {}, i.user_id ?? ''),
            h('td', {}, when(i.billing_date)),
            h('td', {}, i.outcome),
            h('td', {}, i.detail ?? ''),
            h('td', {}, when(i.finished_at)),
          ),
        ),
      ),
    ),
  );
}

/* ---------------- reconciliation (DESIGN 14) ---------------- */

const signedDollars = (cents) => `${cents < 0 ? '−' : cents > 0 ? '+' : ''}${dollars(Math.abs(cents))}`;

/** A day's runs, one per rail: both sides' totals and the drifts; the date defaults to the API's yesterday. */
function reconciliationView(params) {
  const root = h('section', {}, heading('Reconciliation'));
  const dateId = uid('date');
  const picker = h(
    'form',
    { 'aria-label': 'Pick a day' },
    h('label', { for: dateId }, 'Day (UTC)'),
    h('input', { id: dateId, name: 'date', type: 'date', value: params.get('date') ?? '' }),
    h('button', { type: 'submit' }, 'Show'),
  );
  picker.addEventListener('submit', (event) => {
    event.preventDefault();
    const date = String(new FormData(picker).get('date') ?? '');
    location.hash = date ? `#/reconciliation?date=${date}` : '#/reconciliation';
  });
  const table = h(
    'table',
    {},
    h('caption', {}, 'Reconciliation runs'),
    h('thead', {}, h('tr', {}, ['Day', 'Rail', 'Status', 'Ours', 'Processor', 'Net drift', 'Gross drift', 'Exceptions', 'Completed'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody'),
  );
  const out = h('div');
  root.append(picker, scrollBox(table), out);
  (async () => {
    try {
      const q = params.get('date') ? `?date=${encodeURIComponent(params.get('date'))}` : '';
      const { body } = await api('GET', `/v1/reconciliation/runs${q}`);
      root.querySelector(`#${dateId}`).value = body.date;
      for (const run of body.items) {
        table.tBodies[0].append(
          h(
            'tr',
            {},
            h('td', {}, run.date),
            h('td', {}, h('a', { href: `#/reconciliation/${encodeURIComponent(run.date)}/${encodeURIComponent(run.rail)}` }, run.rail)),
            h('td', {}, run.status),
            h('td', { class: 'num' }, `${run.ours.count}: ${signedDollars(run.ours.total_cents)}`),
            h('td', { class: 'num' }, `${run.theirs.count}: ${signedDollars(run.theirs.total_cents)}`),
            h('td', { class: 'num' }, signedDollars(run.net_drift_cents)),
            h('td', { class: 'num' }, run.gross_drift_cents === 0 ? 'balanced' : dollars(run.gross_drift_cents)),
            h('td', { class: 'num' }, String(run.exception_ids.length)),
            h('td', {}, when(run.completed_at)),
          ),
        );
      }
      if (body.items.length === 0) table.tBodies[0].append(h('tr', {}, h('td', { colspan: '9' }, `No run for ${body.date}.`)));
    } catch (error) {
      out.replaceChildren(errorBox(error, 'Could not load the runs'));
    }
  })();
  return root;
}

/** One run: its totals and each exception with code, signed amount and member, and a resolution form for the open ones. */
function reconciliationRunView(date, rail) {
  const root = h('section', {}, heading(`Reconciliation of ${date} on ${rail}`));
  const summary = h('div');
  const notice = h('div', { class: 'out notice' });
  const list = h('div');
  root.append(h('p', {}, h('a', { href: `#/reconciliation?date=${encodeURIComponent(date)}` }, `All rails of ${date}`)), summary, notice, list);
  async function refresh() {
    let run;
    try {
      run = (await api('GET', `/v1/reconciliation/runs/${encodeURIComponent(date)}/${encodeURIComponent(rail)}`)).body;
    } catch (error) {
      summary.replaceChildren(errorBox(error, 'Could not load the run'));
      return;
    }
    const rows = [
      ['Ours', `${run.ours.count} movements, ${signedDollars(run.ours.total_cents)}`],
      ['Processor', `${run.theirs.count} movements, ${signedDollars(run.theirs.total_cents)}`],
      ['Net drift', signedDollars(run.net_drift_cents)],
      ['Gross drift', run.gross_drift_cents === 0 ? 'balanced' : dollars(run.gross_drift_cents)],
      ['Completed', when(run.completed_at)],
    ];
    summary.replaceChildren(h('dl', { class: 'summary' }, rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
    const table = h(
      'table',
      {},
      h('caption', {}, 'Exceptions'),
      h('thead', {}, h('tr', {}, ['Code', 'Amount', 'Member', 'Transaction', 'Record', 'At', 'Resolution'].map((c) => h('th', { scope: 'col' }, c)))),
      h(
        'tbody',
        {},
        run.exceptions.map((e) =>
          h(
            'tr',
            {},
            h('td', {}, e.code, e.known ? ' (known on the period)' : ''),
            h('td', { class: 'num' }, signedDollars(e.amount_cents)),
            h('td', {}, e.user_id ?? ''),
            h('td', {}, e.transaction_id ?? ''),
            h('td', {}, e.record_key ?? ''),
            h('td', {}, when(e.occurred_at)),
            h('td', {}, e.resolution ? [`${e.resolution.resolution} by ${e.resolution.actor}: ${e.resolution.reason} `, when(e.resolution.at)] : 'open'),
          ),
        ),
      ),
    );
    if (run.exceptions.length === 0) table.tBodies[0].append(h('tr', {}, h('td', { colspan: '7' }, 'No exception: the day balances.')));
    list.replaceChildren(scrollBox(table), ...run.exceptions.filter((e) => !e.resolution).map((e) => resolveReconciliationForm(e, refresh, notice)));
  }
  void refresh();
  return root;
}

function resolveReconciliationForm(exception, after, notice) {
  const amount = signedDollars(exception.amount_cents);
  return actionForm({
    title: `Resolve ${exception.code} ${amount}${exception.user_id ? ` of ${exception.user_id}` : ''}`,
    help: 'Resolving moves no money: refund or collect at the processor first (the runbook has a step per code), then record what was done. A resolution is kept for the audit and cannot be changed.',
    submit: 'Resolve',
    fields: [
      {
        name: 'resolution',
        label: 'Resolution',
        options: [['refunded', 'refunded at the processor'], ['recorded', 'recorded: our records now say it'], ['written_off', 'written off'], ['no_action', 'no action needed']],
      },
    ],
    confirm: () => `Resolve ${exception.code} ${amount}? A resolution cannot be changed.`,
    call: (reason, values) => api('POST', `/v1/reconciliation/exceptions/${encodeURIComponent(exception.exception_id)}/resolve`, { body: { resolution: values.resolution, reason } }),
    describe: (b) => `Exception ${b.code} resolved (${b.resolution?.resolution})`,
    after,
    notice,
  });
}

/* ---------------- routing ---------------- */

function render() {
  const signedIn = session.token() !== null;
  document.getElementById('sign-in').hidden = signedIn;
  document.getElementById('nav').hidden = !signedIn;
  view().hidden = !signedIn;
  if (!signedIn) {
    view().replaceChildren();
    document.getElementById('token').focus();
    return;
  }
  const [route, query = ''] = location.hash.replace(/^#\/?/, '').split('?');
  const params = new URLSearchParams(query);
  const [name, ...rest] = (route ?? '').split('/');
  let content;
  if (name in LISTS) content = listView(name, params);
  else if (name === 'subscriptions' && rest[0]) content = subscriptionView(decodeURIComponent(rest.join('/')));
  else if (name === 'bulk-retry') content = bulkRetryView();
  else if (name === 'retry-runs' && rest[0]) content = retryRunView(decodeURIComponent(rest[0]));
  else if (name === 'retry-runs') content = retryRunsView();
  else if (name === 'reconciliation' && rest.length === 2) content = reconciliationRunView(decodeURIComponent(rest[0]), decodeURIComponent(rest[1]));
  else if (name === 'reconciliation') content = reconciliationView(params);
  else {
    location.hash = '#/failing';
    return;
  }
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.getAttribute('href') === `#/${name}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  view().replaceChildren(content);
  focusHeading();
}

document.getElementById('sign-in-form').addEventListener('submit', signIn);
document.getElementById('sign-out').addEventListener('click', signOut);
window.addEventListener('hashchange', render);
await loadConfig();
render();
