import { ApiError, api, newIdempotencyKey } from './api.js';
import { announce, answerBox, dollars, errorBox, h, heading, scrollBox, uid, when } from './dom.js';

// Bulk retry: the dry run, the run started with an Idempotency-Key, a run followed live, and past runs.

export function bulkRetryView() {
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

export function retryRunView(runId) {
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
export function retryRunsView() {
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
