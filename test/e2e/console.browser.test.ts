import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
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
    expect(await page.getByRole('navigation', { name: 'Views' }).isVisible()).toBe(false);
    expect(await page.evaluate('Object.keys(sessionStorage).length')).toBe(0);
    await page.context().close();
  });

  it('signs in, lists the parked subscription, opens it, reads its history, retries it with a reason and shows it billed with the audit row', async () => {
    const page = await newPage();
    await signIn(page, LOCAL_TOKEN);
    await page.getByRole('heading', { name: 'Failing subscriptions' }).waitFor();
    // The token lives in session storage only: not in the page, not in the URL.
    expect(await page.content()).not.toContain(LOCAL_TOKEN);
    expect(page.url()).not.toContain(LOCAL_TOKEN);
    expect(await page.getByLabel('API token').inputValue()).toBe('');

    await page.getByRole('navigation', { name: 'State filter' }).getByRole('link', { name: 'parked' }).click();
    const table = page.getByRole('table', { name: 'Failing subscriptions (parked)' });
    const row = table.getByRole('row').filter({ hasText: 'console-parked' });
    await row.waitFor();
    const cells = await row.getByRole('cell').allInnerTexts();
    expect(cells).toEqual([parkedId, 'console-parked', expect.any(String), '$19.99', 'PENDING', 'parked', '8', 'none (parked)', expect.stringMatching(/\S/)]);
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
    await page.keyboard.press('Enter');
    await expect.poll(() => retry.locator('.answer').innerText().catch(() => ''), { timeout: 15_000 }).toContain('Retry billing: billed; status COMPLETED');

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
    await page.unroute(`${runtime.base}/v1/billing/retry-runs`);
    await page.getByRole('link', { name: 'Follow this run' }).click();
    await page.getByRole('heading', { name: /^Retry run / }).waitFor();
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Refresh' }).click();
          return page.locator('#view .answer').first().innerText().catch(() => '');
        },
        { timeout: 30_000, interval: 500 },
      )
      .toMatch(/: done; billed 1, failed 0, still due 0, skipped 0/);
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
    await page.context().close();
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
