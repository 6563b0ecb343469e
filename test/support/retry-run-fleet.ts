import { BILLING_RETRY_WAITS_MS, MAX_BILLING_ATTEMPTS } from '../../src/domain/ladder.js';

/**
 * A fleet of parked subscriptions made through the local runtime's own surfaces (memberships, the
 * processor simulator, collections runs and the clock), and the calls a bulk retry run needs. No
 * test framework here: the e2e test (test/e2e) and the measurement (bench/retry-run.ts) share it.
 */

export interface Answer {
  readonly status: number;
  readonly body: any;
}

/** One HTTP call to the runtime; `token` adds the bearer token of the /v1 routes. */
export type Call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<Answer>;

export function httpCaller(base: string, token: string): { call: Call; api: Call } {
  const call: Call = async (method, path, body, headers = {}) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: kept as text for the message
    }
    return { status: res.status, body: parsed };
  };
  return { call, api: (method, path, body, headers = {}) => call(method, path, body, { authorization: `Bearer ${token}`, ...headers }) };
}

function must(answer: Answer, status: number, what: string): any {
  if (answer.status !== status) throw new Error(`${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

async function inParallel<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    for (let i = next++; i < items.length; i = next++) await work(items[i]!);
  }));
}

/**
 * `count` new pinless members due now whose processor errors on every attempt, run through the
 * failure ladder (a collections run per failure, the clock moved past each wait) until all are
 * parked; the processor then approves again. Answers the user ids.
 */
export async function parkFleet(call: Call, api: Call, count: number, prefix: string): Promise<string[]> {
  const users = Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}`);
  must(await call('PUT', '/local/processor', { default: 'error' }), 200, 'processor');
  const now = must(await call('GET', '/local/clock'), 200, 'clock').now as string;
  await inParallel(users, 16, async (userId) => {
    const applied = must(
      await call('POST', '/local/memberships', {
        event_id: `evt-new-${userId}`,
        type: 'NEW',
        user_id: userId,
        occurred_at: now,
        plan: { amount: '19.99', term: 'MONTHLY', tier: 'plus:v3', payment_method: 'pinless', account_last_four: '6789', first_billing_date: now },
      }),
      200,
      `membership ${userId}`,
    );
    if (applied.status !== 'applied') throw new Error(`membership ${userId}: ${JSON.stringify(applied)}`);
  });
  for (let failure = 1; failure <= MAX_BILLING_ATTEMPTS; failure++) {
    must(await call('POST', '/local/collections/run'), 200, `collections run ${failure}`);
    const wait = BILLING_RETRY_WAITS_MS[failure - 1];
    if (wait !== undefined) must(await call('POST', '/local/clock', { advance: `PT${wait / 1000 + 1}S` }), 200, 'clock advance');
  }
  // A message left for redelivery (a held lock, a transient fault) puts its period one failure
  // behind: a day more and another run until every one of them is parked.
  for (let extra = 0; ; extra++) {
    const parked = await parkedUsers(api, new Set(users));
    if (parked === count) break;
    if (extra >= 8) throw new Error(`${parked} of ${count} parked after ${extra} extra runs`);
    must(await call('POST', '/local/clock', { advance: 'PT24H1S' }), 200, 'clock advance');
    must(await call('POST', '/local/collections/run'), 200, 'collections run');
  }
  must(await call('PUT', '/local/processor', { default: 'approve' }), 200, 'processor');
  return users;
}

/** How many of `users` the failing list shows parked. */
async function parkedUsers(api: Call, users: ReadonlySet<string>): Promise<number> {
  let parked = 0;
  let next: string | null = null;
  do {
    const page: any = must(await api('GET', `/v1/subscriptions?billing=failing&state=parked&limit=100${next ? `&next=${encodeURIComponent(next)}` : ''}`), 200, 'failing list');
    for (const r of page.items as { user_id: string }[]) if (users.has(r.user_id)) parked += 1;
    next = page.next;
  } while (next);
  return parked;
}

/** Polls GET /v1/billing/retry-runs/{runId} until the run is done. */
export async function waitForRun(api: Call, runId: string, timeoutMs: number): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = must(await api('GET', `/v1/billing/retry-runs/${runId}?limit=1`), 200, 'read run');
    if (run.status === 'done') return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} not done within ${timeoutMs} ms: ${JSON.stringify(run.counts)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Every item of a run, through the paged GET. */
export async function runItems(api: Call, runId: string): Promise<any[]> {
  const items: any[] = [];
  let next: string | null = null;
  do {
    const page: any = must(await api('GET', `/v1/billing/retry-runs/${runId}?limit=1000${next ? `&next=${encodeURIComponent(next)}` : ''}`), 200, 'run items');
    items.push(...page.items);
    next = page.next;
  } while (next);
  return items;
}

/** The simulator's charges per user, for the given users. */
export async function chargesPerUser(call: Call, users: readonly string[]): Promise<Map<string, number>> {
  const wanted = new Set(users);
  const counts = new Map<string, number>();
  const { items } = must(await call('GET', '/local/processor/charges'), 200, 'charges');
  for (const c of items as { user_id: string }[]) if (wanted.has(c.user_id)) counts.set(c.user_id, (counts.get(c.user_id) ?? 0) + 1);
  return counts;
}
