import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_TOKEN, newMember, periodOf, ROOT, simulatedNow, startLocalRuntime, type LocalRuntime } from '../support/local-runtime.js';

/**
 * The console's reconciliation view (DESIGN 12, 14) and the instrument hold release (DESIGN 3.2), in
 * Debian's headless Chromium against `npm start`: a pinless day whose debit the processor dropped is
 * read by day and rail, its exception resolved with a reason and a confirmation.
 */

const CHROMIUM = '/usr/bin/chromium';
const RESULTS = join(ROOT, 'test-results');
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let runtime: LocalRuntime;
let browser: Browser;
let day: string;
let subscriptionId: string;
const pageErrors: string[] = [];

async function newPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(`${runtime.base}/console`);
  await page.getByLabel('API token').fill(LOCAL_TOKEN);
  await page.keyboard.press('Enter');
  await page.getByRole('navigation', { name: 'Views' }).waitFor();
  return page;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not installed at ${CHROMIUM} (apt-get update && apt-get install -y chromium)`);
  mkdirSync(RESULTS, { recursive: true });
  [runtime, browser] = await Promise.all([startLocalRuntime(), chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS })]);
  expect((await runtime.call('PUT', '/local/processor', { default: 'approve' })).status).toBe(200);
  const billingDate = await newMember(runtime, 'console-recon', 'pinless');
  expect((await runtime.call('POST', '/local/collections/run')).status).toBe(200);
  subscriptionId = (await periodOf(runtime, 'console-recon', billingDate)).subscription_id;
  day = (await simulatedNow(runtime)).slice(0, 10);
  const fault = await runtime.call('POST', '/local/processor/faults', { kind: 'drop', date: day, user_id: 'console-recon' });
  expect(fault.status, JSON.stringify(fault.body)).toBe(200);
  const run = await runtime.call('POST', '/local/reconciliation/run', { date: day });
  expect(run.status, JSON.stringify(run.body)).toBe(200);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await runtime?.stop();
});

describe('console: reconciliation and hold release in headless Chromium', () => {
  afterEach(() => {
    expect(pageErrors.splice(0), 'script errors in the console page').toEqual([]);
  });

  it("lists a day's runs by rail with totals and drift, shows the exception with code, amount and member, and resolves it with a reason after a confirmation", async () => {
    const page = await newPage();
    // The default day's answer is held until the operator has typed a day, so it lands in between.
    let answerDefault!: () => void;
    const typed = new Promise<void>((resolve) => (answerDefault = resolve));
    await page.route(/\/v1\/reconciliation\/runs$/, async (route) => {
      await typed;
      await route.continue();
    });
    const defaultAnswered = page.waitForResponse(/\/v1\/reconciliation\/runs$/);
    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Reconciliation' }).click();
    await page.getByLabel('Day (UTC)').fill(day);
    answerDefault();
    await defaultAnswered;
    await expect.poll(() => page.getByRole('table', { name: 'Reconciliation runs' }).innerText()).toContain('No run for');
    expect(await page.getByLabel('Day (UTC)').inputValue()).toBe(day);
    await page.getByRole('button', { name: 'Show' }).click();
    const runs = page.getByRole('table', { name: 'Reconciliation runs' });
    const pinless = runs.getByRole('row').filter({ has: page.getByRole('link', { name: 'pinless' }) });
    await expect.poll(() => pinless.innerText()).toMatch(/completed\s+1: \+\$19\.99\s+0: \$0\.00\s+−\$19\.99\s+\$19\.99\s+1/);
    expect(await runs.getByRole('row').filter({ hasText: 'card' }).innerText()).toContain('balanced');
    await page.screenshot({ path: join(RESULTS, 'console-reconciliation.png'), fullPage: true });

    await pinless.getByRole('link', { name: 'pinless' }).click();
    const exceptions = page.getByRole('table', { name: 'Exceptions' });
    const row = exceptions.getByRole('row').filter({ hasText: 'missing_at_processor' });
    await expect.poll(() => row.innerText()).toMatch(/missing_at_processor\s+−\$19\.99\s+console-recon/);
    expect(await row.innerText()).toContain('open');

    const form = page.getByRole('form', { name: 'Resolve missing_at_processor −$19.99 of console-recon' });
    await form.getByLabel('Resolution').selectOption('written_off');
    // Declining the confirmation sends nothing.
    page.once('dialog', (dialog) => void dialog.dismiss());
    await form.getByLabel('Reason (goes on the audit row)').fill('processor confirmed the debit never moved (console test)');
    await form.getByRole('button', { name: 'Resolve' }).click();
    await expect.poll(() => page.locator('#view .notice').innerText()).toContain('Not sent');
    const unresolved = await runtime.api('GET', `/v1/reconciliation/runs/${day}/pinless`);
    expect(unresolved.body.exceptions[0].resolution).toBeUndefined();

    const asked: string[] = [];
    page.once('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.accept();
    });
    await form.getByRole('button', { name: 'Resolve' }).click();
    await expect.poll(() => page.locator('#view .notice').innerText()).toContain('Exception missing_at_processor resolved (written_off)');
    expect(asked).toEqual(['Resolve missing_at_processor −$19.99? A resolution cannot be changed.']);
    await expect.poll(() => row.innerText()).toMatch(/written_off by local-operator: processor confirmed the debit never moved \(console test\)/);
    expect(await page.getByRole('form', { name: /^Resolve missing_at_processor/ }).count()).toBe(0);
    const stored = await runtime.api('GET', `/v1/reconciliation/runs/${day}/pinless`);
    expect(stored.body.exceptions[0].resolution).toMatchObject({ resolution: 'written_off', actor: 'local-operator' });
    await page.context().close();
  }, 120_000);

  it('offers a release, with a reason and a confirmation, for a card.dispute hold and none for a NACHA hold', async () => {
    const page = await newPage();
    // The instruments answer is stubbed: the local runtime has no path that opens a dispute on a simulated card.
    const instruments = {
      user_id: 'console-recon',
      items: [
        { instrument_id: 'card:pm_1', holds: [{ code: 'card_disputed', class: 'card_dispute', rule: 'card.dispute', since: '2026-12-01T00:00:00.000Z', operator_releasable: true }], presentments: [], entries: [] },
        { instrument_id: 'ach:acct_1:auth_1', holds: [{ code: 'ach_authorization_required', class: 'ach_unauthorized', rule: 'nacha.unauthorized_return', since: '2026-12-01T00:00:00.000Z', operator_releasable: false }], presentments: [], entries: [] },
      ],
    };
    const released: unknown[] = [];
    await page.route('**/v1/users/console-recon/instruments', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(instruments) }));
    await page.route('**/v1/users/console-recon/instruments/*/holds/*/release', (route) => {
      released.push({ url: route.request().url(), body: route.request().postDataJSON() });
      return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ status: 'released', instrument_id: 'card:pm_1', hold_code: 'card_disputed', released_periods: 1, instruments }) });
    });
    await page.goto(`${runtime.base}/console/#/subscriptions/${encodeURIComponent(subscriptionId)}`);
    const form = page.getByRole('form', { name: 'Release the card_disputed hold on card:pm_1' });
    await form.waitFor();
    expect(await page.getByRole('form', { name: /Release the ach_authorization_required/ }).count()).toBe(0);
    await form.getByLabel('Reason (goes on the audit row)').fill('dispute won (console test)');
    const asked: string[] = [];
    page.once('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.accept();
    });
    await form.getByRole('button', { name: 'Release the hold' }).click();
    await expect.poll(() => page.locator('#view .notice').innerText()).toContain('Hold card_disputed released: 1 period(s) due again');
    expect(asked[0]).toMatch(/^Release the card_disputed hold on card:pm_1\?/);
    expect(released).toEqual([{ url: `${runtime.base}/v1/users/console-recon/instruments/card%3Apm_1/holds/card_disputed/release`, body: { reason: 'dispute won (console test)' } }]);
    await page.context().close();
  }, 120_000);
});
