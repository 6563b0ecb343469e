import { createHmac } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_SECRET_DEFAULTS } from '../../src/local/options.js';
import { chargesFor, LADDER_WAITS, LOCAL_TOKEN, newMember, periodOf, ROOT, startLocalRuntime, type LocalRuntime } from '../support/local-runtime.js';

/**
 * The operator console (docs/design.md, operator surfaces) in a real headless Chromium (Debian's
 * package, driven by playwright-core) against `npm start`: sign in, find a parked subscription,
 * read its history, retry it with a reason, and see it billed with the audit row naming the
 * operator and the reason. Screenshots go to test-results/ on every run.
 */

const CHROMIUM = '/usr/bin/chromium';
const RESULTS = join(ROOT, 'test-results');
/** The flags this machine needs (no network but loopback): see .ci/run. */
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let runtime: LocalRuntime;
let browser: Browser;
let parkedId: string;
let parkedDate: string;
let bulkDate: string;
const pageErrors: string[] = [];
const started = Date.now();
let ladderDone = started;

async function newPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  // A script error in the console is a broken page, whatever the screen shows.
  page.on('pageerror', (error) => pageErrors.push(error.message));
  // The console talks only to the API on its own origin.
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.origin !== runtime.base && url.protocol !== 'data:') throw new Error(`the console called ${request.url()}`);
  });
  return page;
}

/** A settlement, return or the like as the bank sends it: signed with the default ACH secret and the wall clock. */
async function signedAch(target: LocalRuntime, event: Record<string, unknown>) {
  const body = JSON.stringify({ occurred_at: new Date().toISOString(), ...event });
  const t = Math.floor(Date.now() / 1000);
  const signature = `t=${t},v1=${createHmac('sha256', LOCAL_SECRET_DEFAULTS.ACH_WEBHOOK_SECRET).update(`${t}.${body}`).digest('hex')}`;
  return target.call('POST', '/webhooks/ach', body, { 'x-ach-signature': signature });
}

async function signIn(page: Page, token: string): Promise<void> {
  await page.goto(`${runtime.base}/console`);
  const input = page.getByLabel('API token');
  await input.focus();
  await page.keyboard.type(token);
  await page.keyboard.press('Enter');
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is not installed at ${CHROMIUM}: the console's browser tests need Debian's package (apt-get update && apt-get install -y chromium; .ci/run installs it when missing).`);
  }
  mkdirSync(RESULTS, { recursive: true });
  [runtime, browser] = await Promise.all([startLocalRuntime(), chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS })]);

  // A subscription up the whole failure ladder, as the README tour drives it: processor errors, clock moves.
  expect((await runtime.call('PUT', '/local/processor', { default: 'approve', users: { 'console-parked': 'error', 'console-bulk': 'error', 'console-retrying': 'error', 'console-declined': 'decline:lost_card' } })).status).toBe(200);
  parkedDate = await newMember(runtime, 'console-parked', 'pinless');
  // A second one parks with it: the bulk retry's.
  bulkDate = await newMember(runtime, 'console-bulk', 'pinless');
  // A lost card: declined once, dunning exhausted at once (do_not_retry).
  await newMember(runtime, 'console-declined', 'pinless');
  for (let failure = 1; failure <= 8; failure++) {
    // A second member joins before the last run: one failure, so it is retrying, not parked.
    if (failure === 8) await newMember(runtime, 'console-retrying', 'pinless');
    const run = await runtime.call('POST', '/local/collections/run');
    expect(run.status, JSON.stringify(run.body)).toBe(200);
    expect(run.body.outcomes.failed_counted, JSON.stringify(run.body)).toBe(failure === 8 ? 3 : 2);
    if (failure < 8) expect((await runtime.call('POST', '/local/clock', { advance: LADDER_WAITS[failure - 1] })).status).toBe(200);
  }
  ladderDone = Date.now();
  const parked = await periodOf(runtime, 'console-parked', parkedDate);
  expect(parked.billing_failure).toMatchObject({ state: 'parked', count: 8 });
  parkedId = parked.subscription_id;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (runtime) expect(await runtime.stop(), runtime.output()).toBe(0);
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  console.log(`console browser tests: ${s(Date.now() - started)} in all; npm start, Chromium and the failure ladder ${s(ladderDone - started)}, the browser tests ${s(Date.now() - ladderDone)}`);
}, 30_000);

describe('operator console in headless Chromium', () => {
  afterEach(() => {
    expect(pageErrors.splice(0), 'script errors in the console page').toEqual([]);
  });

  it('a wrong token gets a clear message and is not kept', async () => {
    const page = await newPage();
    await signIn(page, 'not-the-token');
    await expect.poll(() => page.locator('#sign-in-error').innerText(), { timeout: 15_000 }).toContain('the API refused this token (401 Unauthorized)');
    expect(await page.getByRole('heading', { name: 'Sign in' }).isVisible()).toBe(true);
    // The hint names the local default, which works when pasted.
    expect(await page.locator('#sign-in').innerText()).toContain(`locally: ${LOCAL_TOKEN}`);
    expect(await page.getByRole('navigation', { name: 'Views' }).isVisible()).toBe(false);
    expect(await page.evaluate('Object.keys(sessionStorage).length')).toBe(0);
    await page.context().close();
  });

  it('signs in, lists the parked subscription, opens it, reads its history, retries it with a reason and shows it billed with the audit row', async () => {
    const page = await newPage();
    await signIn(page, LOCAL_TOKEN);
    await page.getByRole('heading', { name: 'Failing subscriptions' }).waitFor();
    // The token lives in session storage only: not in the page (the sign-in hint names the local default, nothing else does), not in the URL.
    expect((await page.content()).replace(/<section id="sign-in"[\s\S]*?<\/section>/, '')).not.toContain(LOCAL_TOKEN);
    expect(page.url()).not.toContain(LOCAL_TOKEN);
    expect(await page.getByLabel('API token').inputValue()).toBe('');

    await page.getByRole('navigation', { name: 'State filter' }).getByRole('link', { name: 'parked' }).click();
    const table = page.getByRole('table', { name: 'Failing subscriptions (parked)' });
    const row = table.getByRole('row').filter({ hasText: 'console-parked' });
    await row.waitFor();
    const cells = await row.getByRole('cell').allInnerTexts();
    // A parked period shows its state, not PENDING beside it; times are readable, the instant on hover.
    expect(cells).toEqual([parkedId, 'console-parked', expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/), '$19.99', 'parked', '8', 'none (parked)', expect.stringMatching(/\S/)]);
    expect(await row.locator('time').first().getAttribute('title')).toBe(parkedDate);
    // The retrying one is not parked: it is not in this list.
    expect(await table.getByRole('row').filter({ hasText: 'console-retrying' }).count()).toBe(0);
    await page.screenshot({ path: join(RESULTS, 'console-list.png'), fullPage: true });

    // Paging: one item a page, then the API's `next` token behind "Load more".
    await page.goto(`${runtime.base}/console/#/failing?limit=1`);
    const all = page.getByRole('table', { name: 'Failing subscriptions' });
    await all.getByRole('row').nth(1).waitFor();
    // Three failing (two parked, one retrying): two more pages.
    await page.getByRole('button', { name: 'Load more' }).click();
    await all.getByRole('row').nth(2).waitFor();
    await page.getByRole('button', { name: 'Load more' }).click();
    await all.getByRole('row').nth(3).waitFor();
    const users = await all.getByRole('row').allInnerTexts();
    expect(users.some((r) => r.includes('console-parked')) && users.some((r) => r.includes('console-retrying'))).toBe(true);

    await page.goBack();
    await row.getByRole('link', { name: parkedId }).click();
    await page.getByRole('heading', { name: `Subscription ${parkedId}` }).waitFor();
    const periods = page.getByRole('table', { name: 'Billing periods of console-parked, newest first' });
    await periods.getByRole('row').filter({ hasText: '(this one)' }).waitFor();
    expect(await periods.getByRole('row').filter({ hasText: '(this one)' }).innerText()).toContain('parked (8)');
    const history = page.getByRole('table', { name: 'Audit rows, newest first' });
    await history.getByRole('row').nth(1).waitFor();
    // The audit history holds the eight failed attempts.
    expect(await history.getByRole('row').count()).toBeGreaterThanOrEqual(9);

    expect((await runtime.call('PUT', '/local/processor', { default: 'approve' })).status).toBe(200);
    const retry = page.getByRole('form', { name: 'Retry billing' });
    const reason = 'processor outage over (console test)';
    // Keyboard only: type the reason, tab to the button, press Enter.
    await retry.getByLabel('Reason (goes on the audit row)').focus();
    await page.keyboard.type(reason);
    await page.keyboard.press('Tab');
    expect(await retry.getByRole('button', { name: 'Retry billing' }).evaluate((el: any) => el === el.ownerDocument.activeElement && el.matches(':focus-visible'))).toBe(true);
    // It charges: the console asks first, naming the member and the amount.
    const asked: string[] = [];
    page.once('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.accept();
    });
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#view .notice .answer').innerText().catch(() => ''), { timeout: 15_000 }).toContain('Retry billing: billed; status COMPLETED');
    expect(asked).toEqual(['Charge console-parked $19.99 (pinless) now?']);
    // A COMPLETED period offers no retry, waive or due-date change, also once its holds have loaded.
    await expect.poll(() => page.locator('dl.summary').innerText(), { timeout: 15_000 }).toMatch(/Status\s+COMPLETED[\s\S]*Holds\s+none/);
    expect(await page.locator('#view .actions').innerText()).toContain('No action applies to a COMPLETED period.');
    expect(await page.getByRole('form', { name: 'Waive' }).count()).toBe(0);

    // Two audit rows carry the reason: the retry request, then the collected period.
    const audited = history.getByRole('row').filter({ hasText: reason }).filter({ hasText: 'COMPLETED' });
    await audited.waitFor();
    expect(await audited.innerText()).toContain('local-operator');
    await expect.poll(() => page.locator('dl.summary').innerText(), { timeout: 15_000 }).toMatch(/Status\s+COMPLETED/);
    await page.screenshot({ path: join(RESULTS, 'console-subscription.png'), fullPage: true });

    const record = await periodOf(runtime, 'console-parked', parkedDate);
    expect(record.billing_status).toBe('COMPLETED');
    expect(record.billing_failure).toBeUndefined();
    expect(await chargesFor(runtime, 'console-parked')).toHaveLength(1);
    await page.context().close();
  });

  it('lists the dunning and exceptions views, and bulk-retries a parked subscription: dry run first, then the run, followed to done', async () => {
    const page = await newPage();
    await signIn(page, LOCAL_TOKEN);
    await page.getByRole('heading', { name: 'Failing subscriptions' }).waitFor();
    for (const [link, title] of [
      ['Dunning', 'Dunning'],
      ['Exceptions', 'Exceptions'],
    ] as const) {
      await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: link }).click();
      await page.getByRole('heading', { name: title }).waitFor();
      await expect.poll(() => page.locator('#view p.count').innerText().catch(() => ''), { timeout: 15_000 }).toMatch(/\d+ shown/);
    }
    // The dunning list shows the dunning state and the decline, not the failure ladder's columns.
    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Dunning' }).click();
    const dunning = page.getByRole('table', { name: 'Dunning' });
    const declined = dunning.getByRole('row').filter({ hasText: 'console-declined' });
    await declined.waitFor();
    expect(await dunning.getByRole('columnheader').allInnerTexts()).toEqual(['Subscription', 'User', 'Billing date', 'Amount', 'Status', 'State', 'Attempts', 'Next attempt', 'Decline']);
    expect((await declined.getByRole('cell').allInnerTexts()).slice(3)).toEqual(['$19.99', 'FAILED', 'exhausted', '1', 'none (exhausted)', 'lost_card (do_not_retry)']);

    expect((await runtime.call('PUT', '/local/processor', { default: 'approve' })).status).toBe(200);
    const asked: string[] = [];
    page.on('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.accept();
    });
    await page.getByRole('link', { name: 'Bulk retry' }).click();
    await page.getByRole('heading', { name: 'Bulk retry' }).waitFor();
    const run = page.getByRole('button', { name: 'Start the retry run' });
    expect(await run.isDisabled()).toBe(true);
    await page.getByLabel('Only these users (optional, comma-separated ids)').fill('console-bulk');
    await page.getByLabel('Reason (goes on every audit row)').fill('bulk retry after the outage (console test)');
    await page.getByRole('button', { name: 'Dry run: show what would be retried' }).click();
    const answer = page.locator('#view .answer');
    await expect.poll(() => answer.first().innerText().catch(() => ''), { timeout: 15_000 }).toContain('Dry run: 1 periods would be retried.');
    const bulk = await periodOf(runtime, 'console-bulk', bulkDate);
    expect(await answer.first().innerText()).toContain(bulk.subscription_id);
    // Each period with what it owes, and the total.
    const selection = page.getByRole('table', { name: 'Periods the run would retry' });
    expect(await selection.getByRole('row').filter({ hasText: 'console-bulk' }).getByRole('cell').last().innerText()).toBe('$19.99');
    expect(await selection.locator('tfoot').innerText()).toMatch(/Total of 1 periods\s+\$19\.99/);
    // The dry run charged nothing and changed nothing.
    expect(await chargesFor(runtime, 'console-bulk')).toHaveLength(0);
    expect((await periodOf(runtime, 'console-bulk', bulkDate)).billing_failure).toMatchObject({ state: 'parked' });

    expect(await run.isDisabled()).toBe(false);
    // The first start reaches the API, which creates the run, but its answer is lost on the way
    // back. Pressing start again must send the same Idempotency-Key: the API answers the run the
    // first request created, and no second run (and no second charge) follows.
    const keys: string[] = [];
    let lostRunId = '';
    await page.route(`${runtime.base}/v1/billing/retry-runs`, async (route) => {
      const request = route.request();
      if (request.method() !== 'POST' || (JSON.parse(request.postData() ?? '{}') as { dry_run?: boolean }).dry_run) return route.continue();
      keys.push(request.headers()['idempotency-key'] ?? '');
      if (keys.length > 1) return route.continue();
      const reached = await route.fetch();
      lostRunId = ((await reached.json()) as { run_id: string }).run_id;
      return route.abort('timedout');
    });
    await run.click();
    await expect.poll(() => page.locator('#view .error').first().innerText().catch(() => ''), { timeout: 15_000 }).toContain('The run may or may not have started');
    expect(lostRunId).not.toBe('');
    await run.click();
    await expect.poll(() => answer.first().innerText().catch(() => ''), { timeout: 15_000 }).toMatch(/Retry run \S+ started for 1 periods\./);
    expect(await answer.first().innerText()).toContain(`Retry run ${lostRunId} started`);
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(asked).toEqual(Array(2).fill('Start the retry run? It attempts to charge the 1 periods of the dry run, $19.99 in all.'));
    await page.unroute(`${runtime.base}/v1/billing/retry-runs`);
    await page.getByRole('link', { name: 'Follow this run' }).click();
    await page.getByRole('heading', { name: /^Retry run / }).waitFor();
    // The page follows the run by itself until it is done, its items in a table.
    await expect.poll(() => page.locator('#view .answer').first().innerText().catch(() => ''), { timeout: 30_000, interval: 500 }).toMatch(/: done; billed 1, failed 0, still due 0, skipped 0/);
    const item = page.getByRole('table', { name: 'Items of the run' }).getByRole('row').filter({ hasText: 'console-bulk' });
    expect((await item.getByRole('cell').allInnerTexts()).slice(0, 4)).toEqual([bulk.subscription_id, 'console-bulk', expect.stringMatching(/UTC$/), 'billed']);
    await page.screenshot({ path: join(RESULTS, 'console-retry-run.png'), fullPage: true });
    // A run whose creation was interrupted (the API says so: test/handlers/retry-runs.test.ts) is
    // shown as stuck, with what finishes it. The answer is the API's own, with that one field changed.
    await page.route(`${runtime.base}/v1/billing/retry-runs/*`, async (route) => {
      const answer = await route.fetch();
      await route.fulfill({ response: answer, json: { ...((await answer.json()) as object), status: 'running', creation: 'interrupted' } });
    });
    await page.getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(() => page.locator('#view .answer [role=alert]').first().innerText().catch(() => ''), { timeout: 15_000 }).toContain('Its creation was interrupted');
    await page.unroute(`${runtime.base}/v1/billing/retry-runs/*`);

    const billed = await periodOf(runtime, 'console-bulk', bulkDate);
    expect(billed.billing_status).toBe('COMPLETED');
    expect(await chargesFor(runtime, 'console-bulk')).toHaveLength(1);

    // The run id on the period's audit rows leads back to the run.
    await item.getByRole('link', { name: bulk.subscription_id }).click();
    const history = page.getByRole('table', { name: 'Audit rows, newest first' });
    const runRow = history.getByRole('row').filter({ hasText: 'bulk retry after the outage (console test)' }).first();
    await runRow.waitFor();
    expect(await runRow.innerText()).toContain('local-operator');
    await runRow.getByRole('link', { name: lostRunId }).click();
    await page.getByRole('heading', { name: `Retry run ${lostRunId}` }).waitFor();

    // Past runs are listed, newest first: the run and its dry run.
    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Runs' }).click();
    const runs = page.getByRole('table', { name: 'Retry runs, newest first' });
    const listedRun = runs.getByRole('row').filter({ has: page.getByRole('link', { name: lostRunId }) });
    await listedRun.waitFor();
    expect((await listedRun.getByRole('cell').allInnerTexts()).slice(2, 7)).toEqual(['local-operator', 'parked', 'done', '1', '1']);
    expect(await runs.getByRole('row').filter({ hasText: 'parked (dry run)' }).count()).toBeGreaterThanOrEqual(1);
    await page.context().close();
  });

  it("shows a period's exception, dunning and instrument holds, and resolves the exception with a reason", async () => {
    // An ACH debit the bank settles for 15.00 of 19.99: an amount_mismatch exception (DESIGN 4.1).
    expect((await runtime.call('PUT', '/local/processor', { default: 'approve', ach_settle_delay_ms: 30 * 86_400_000 })).status).toBe(200);
    const shortDate = await newMember(runtime, 'console-short', 'ach');
    expect((await runtime.call('POST', '/local/collections/run')).status).toBe(200);
    const sent = await periodOf(runtime, 'console-short', shortDate);
    expect(sent.billing_status).toBe('ACHSENT');
    const settled = await signedAch(runtime, { event_id: 'console-short-settled', type: 'settled', confirmation_id: sent.transaction_id, amount_cents: 1500, reference: { kind: 'subscription', user_id: 'console-short', billing_date: shortDate } });
    expect(settled.status).toBe(200);

    const page = await newPage();
    await signIn(page, LOCAL_TOKEN);
    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Exceptions' }).click();
    const listed = page.getByRole('table', { name: 'Exceptions' }).getByRole('row').filter({ hasText: 'console-short' });
    await listed.getByRole('link', { name: sent.subscription_id }).click();
    const summary = page.locator('dl.summary');
    await expect.poll(() => summary.innerText(), { timeout: 15_000 }).toMatch(/Exception\s+ACH amount_mismatch: \$15\.00 received of \$19\.99, transaction \S+/);
    expect(await summary.innerText()).toContain(sent.transaction_id);
    // ACHSENT: no retry, waive or due-date change; only the resolution.
    expect(await page.locator('#view form.action').evaluateAll((forms) => forms.map((f) => f.getAttribute('aria-label')))).toEqual(['Resolve the exception']);
    await page.screenshot({ path: join(RESULTS, 'console-exception.png'), fullPage: true });

    const resolve = page.getByRole('form', { name: 'Resolve the exception' });
    await resolve.getByLabel('Resolution').selectOption('accept');
    await resolve.getByLabel('Reason (goes on the audit row)').fill('member agreed to the partial amount (console test)');
    await resolve.getByRole('button', { name: 'Resolve' }).click();
    await expect.poll(() => page.locator('#view .notice').innerText(), { timeout: 15_000 }).toContain('Exception resolved (accept): status COMPLETED');
    await expect.poll(() => summary.innerText(), { timeout: 15_000 }).toMatch(/Exception\s+none/);
    expect(await summary.innerText()).toMatch(/Received\s+\$15\.00/);
    const row = page.getByRole('table', { name: 'Audit rows, newest first' }).getByRole('row').filter({ hasText: 'EXCEPTION_ACCEPTED' });
    expect(await row.innerText()).toMatch(/accept, short \$4\.99/);
    expect(await row.innerText()).toContain('local-operator');
    // The settlement's own row names the ACH event that wrote it.
    expect(await page.getByRole('table', { name: 'Audit rows, newest first' }).innerText()).toContain('ach:console-short-settled');
    expect(await chargesFor(runtime, 'console-short')).toHaveLength(1);

    // The declined member's period shows its dunning state and decline class.
    await page.goto(`${runtime.base}/console/#/dunning`);
    await page.getByRole('table', { name: 'Dunning' }).getByRole('row').filter({ hasText: 'console-declined' }).getByRole('link').click();
    await expect.poll(() => summary.innerText(), { timeout: 15_000 }).toMatch(/Dunning\s+exhausted, 1 attempts, decline lost_card \(do_not_retry\), no automatic attempt left/);
    // The lost card itself is held, whatever period would charge it next, with the rule that set the hold.
    await expect.poll(() => summary.innerText(), { timeout: 15_000 }).toMatch(/Holds\s+pinless:\S+: payment_method_required \(card\.do_not_retry\), since/);
    await page.context().close();
  });

  it('every page is usable at 390 px: tables scroll in their own box, the page never sideways', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${runtime.base}/console`);
    await page.getByLabel('API token').fill(LOCAL_TOKEN);
    await page.keyboard.press('Enter');
    const pages = ['#/failing', '#/dunning', '#/exceptions', '#/bulk-retry', '#/retry-runs', `#/subscriptions/${encodeURIComponent(parkedId)}`];
    for (const hash of pages) {
      await page.goto(`${runtime.base}/console/${hash}`);
      await page.locator('#view h2').waitFor();
      await page.waitForLoadState('networkidle');
      // A string: the test's types have no DOM.
      const widths = await page.evaluate('({ doc: document.documentElement.scrollWidth, body: document.body.scrollWidth, header: document.querySelector("header").getBoundingClientRect().width })');
      expect(widths, hash).toEqual({ doc: 390, body: 390, header: 390 });
    }
    await page.screenshot({ path: join(RESULTS, 'console-390.png'), fullPage: true });
    await context.close();
  });

  it('serves /openapi.json and a readable /docs page from the local runtime', async () => {
    const doc = await runtime.call('GET', '/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.body).toMatchObject({ openapi: '3.1.0', servers: [{ url: runtime.base }] });
    expect(Object.keys(doc.body.paths)).toContain('/v1/subscriptions/{subscriptionId}/retry-billing');
    const page = await newPage();
    await page.goto(`${runtime.base}/docs`);
    await page.getByRole('heading', { name: 'POST /v1/subscriptions/{subscriptionId}/retry-billing' }).waitFor();
    expect(await page.getByRole('link', { name: '/openapi.json' }).getAttribute('href')).toBe('/openapi.json');
    await page.context().close();
  });
});
