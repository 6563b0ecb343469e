import { api } from './api.js';
import { announce, errorBox, h, heading, scrollBox, when } from './dom.js';

// The failing, dunning and exceptions lists, paged with the API's `next` token.

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

export const LISTS = {
  // Every failing period is owed (PENDING or FAILED): the state says what matters, so no status column.
  failing: { title: 'Failing subscriptions', billing: 'failing', states: ['retrying', 'parked'], columns: failureColumns, noStatus: true },
  dunning: { title: 'Dunning', billing: 'dunning', states: ['retrying', 'exhausted'], columns: dunningColumns },
  exceptions: { title: 'Exceptions', billing: 'exceptions', states: [], columns: exceptionColumns },
};

export function listView(name, params) {
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
