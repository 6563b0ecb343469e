import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { buildBillingApp, PlaceholderConfigError } from '../../lib/billing-app.js';
import { parseBalanceThreshold } from '../../lib/config.js';
import { DEFAULT_BALANCE_THRESHOLD_CENTS } from '../../src/runtime/config.js';
import { newBillingApp, resourcesOfType, stubHandlerEntries, synthBilling, TEST_SERVICE_CONTEXT } from './support.js';

function environmentOf(template: ReturnType<typeof synthBilling>['statelessTemplate'], functionName: string): Record<string, unknown> {
  const fn = Object.values(resourcesOfType(template, 'AWS::Lambda::Function')).find((f) => f.Properties?.FunctionName === functionName);
  if (!fn) throw new Error(`no function ${functionName}`);
  return (fn.Properties as { Environment: { Variables: Record<string, unknown> } }).Environment.Variables;
}

describe('deploy-time configuration', () => {
  it('sets BALANCE_THRESHOLD_CENTS to the one documented default on the function that reads it, and only there', () => {
    const { statelessTemplate } = synthBilling({ stage: 'prod' });
    expect(environmentOf(statelessTemplate, 'prod-billing-webhook-balance-worker').BALANCE_THRESHOLD_CENTS).toBe(String(DEFAULT_BALANCE_THRESHOLD_CENTS));
    expect(DEFAULT_BALANCE_THRESHOLD_CENTS).toBe(5000);
    for (const other of ['collections-job', 'batch-worker', 'api', 'ach-handler', 'stripe-webhook', 'memberships-consumer']) {
      expect(environmentOf(statelessTemplate, `prod-billing-${other}`)).not.toHaveProperty('BALANCE_THRESHOLD_CENTS');
    }
  }, 120_000); // the file's first synth pays for loading aws-cdk-lib: over 30 s on a loaded machine

  it('takes the threshold from the balanceThresholdCents context, digits only', () => {
    const { statelessTemplate } = synthBilling({ stage: 'prod', balanceThresholdCents: '2500' });
    expect(environmentOf(statelessTemplate, 'prod-billing-webhook-balance-worker').BALANCE_THRESHOLD_CENTS).toBe('2500');
    expect(parseBalanceThreshold(0)).toBe(0);
    for (const bad of ['50 00', '50.5', '5e3', '-1', '', 'lots']) expect(() => parseBalanceThreshold(bad)).toThrow(/balanceThresholdCents/);
  });

  it('refuses a non-dev stage with placeholder issuer or service URLs, naming every one in one line', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [], stage: 'prod' } });
    let error: unknown;
    try {
      buildBillingApp(app, { handlerEntry: stubHandlerEntries() });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(PlaceholderConfigError);
    const message = (error as Error).message;
    expect(message).not.toContain('\n');
    expect(message).toMatch(/Stage prod uses placeholder values for jwtIssuer, paymentsApiUrl, accountsApiUrl, servicesTokenUrl/);
  });

  it('counts any host of the reserved example domains as a placeholder', () => {
    expect(() => newBillingApp({ stage: 'qa', paymentsApiUrl: 'https://pay.example.org' })).toThrow(/placeholder values for paymentsApiUrl;/);
  });

  it('refuses an http: (or any non-https) service URL at synth, whatever the stage', () => {
    expect(() => newBillingApp({ stage: 'dev', paymentsApiUrl: 'http://payments.internal' })).toThrow(/"paymentsApiUrl" is "http:\/\/payments.internal"; expected an https: URL/);
    expect(() => newBillingApp({ stage: 'prod', accountsApiUrl: 'ftp://accounts.internal' })).toThrow(/accountsApiUrl.*https: URL/);
    expect(() => newBillingApp({ stage: 'dev', accountsApiUrl: 'not a url' })).toThrow(/accountsApiUrl/);
    expect(() => newBillingApp({ stage: 'dev', servicesTokenUrl: 'http://auth.internal/oauth/token' })).toThrow(/"servicesTokenUrl" is "http:\/\/auth.internal\/oauth\/token"; expected an https: URL/);
  });

  it('lets dev keep the placeholders', () => {
    expect(newBillingApp({ stage: 'dev' }).config.paymentsApiUrl).toBe('https://payments.example.com');
  });

  it('fails the real app entry (bin/billing.ts, what cdk synth runs) with one clear line and no stack trace', () => {
    const out = mkdtempSync(join(tmpdir(), 'billing-synth-'));
    try {
      const run = (context: Record<string, unknown>) =>
        spawnSync(process.execPath, ['--import', 'tsx', 'bin/billing.ts'], {
          env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify({ 'aws:cdk:bundling-stacks': [], ...context }), CDK_OUTDIR: out },
          encoding: 'utf8',
          timeout: 60_000,
        });
      const refused = run({ stage: 'prod', paymentsApiUrl: TEST_SERVICE_CONTEXT.paymentsApiUrl });
      expect(refused.status).toBe(1);
      expect(refused.stderr.trim().split('\n')).toEqual([
        'billing: Stage prod uses placeholder values for jwtIssuer, accountsApiUrl, servicesTokenUrl; pass --context jwtIssuer=... --context accountsApiUrl=... --context servicesTokenUrl=... (only the dev stage may use placeholders).',
      ]);
      const badThreshold = run({ stage: 'prod', ...TEST_SERVICE_CONTEXT, balanceThresholdCents: '50 00' });
      expect(badThreshold.status).toBe(1);
      expect(badThreshold.stderr.trim()).toBe('billing: CDK context "balanceThresholdCents" is "50 00"; expected a whole number of cents, digits only (e.g. 5000)');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 90_000);
});
