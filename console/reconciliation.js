import { api } from './api.js';
import { actionForm, dollars, errorBox, h, heading, scrollBox, signedDollars, uid, when } from './dom.js';

// Reconciliation (DESIGN 14): a day's runs by rail, one run's exceptions, and their resolution.


/** A day's runs, one per rail: both sides' totals and the drifts; the date defaults to the API's yesterday. */
export function reconciliationView(params) {
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
      // A day the operator typed while the default loaded is theirs to keep.
      const input = root.querySelector(`#${dateId}`);
      if (input.value === '') input.value = body.date;
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
export function reconciliationRunView(date, rail) {
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
