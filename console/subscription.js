import { api } from './api.js';
import { actionForm, dollars, errorBox, h, heading, scrollBox, when } from './dom.js';

// A subscription: its period's facts, holds, the actions its status allows, its periods and its audit history.

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

export function subscriptionView(id) {
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
