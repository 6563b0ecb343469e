import { Annotations, type App, Tags } from 'aws-cdk-lib';
import {
  type BillingAppConfig,
  PLACEHOLDER_ACCOUNTS_API_URL,
  PLACEHOLDER_JWT_ISSUER,
  PLACEHOLDER_PAYMENTS_API_URL,
  readBillingAppConfig,
  retainsData,
} from './config.js';
import type { HandlerEntryResolver } from './handlers.js';
import { BillingStatefulStack } from './stateful-stack.js';
import { BillingStatelessStack } from './stateless-stack.js';

export interface BillingStacks {
  readonly config: BillingAppConfig;
  readonly stateful: BillingStatefulStack;
  readonly stateless: BillingStatelessStack;
}

export interface BuildBillingAppOptions {
  readonly handlerEntry?: HandlerEntryResolver;
}

/** Adds both stacks for the stage named in context; shared by bin/ and the infra tests. */
export function buildBillingApp(app: App, options: BuildBillingAppOptions = {}): BillingStacks {
  const config = readBillingAppConfig(app.node);
  const env = { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION };
  const stateful = new BillingStatefulStack(app, `billing-${config.stage}-stateful`, {
    env,
    stage: config.stage,
    description: `Billing (${config.stage}): tables, stream, queues, secrets`,
    terminationProtection: retainsData(config.stage),
    ...(config.alarmEmail ? { alarmEmail: config.alarmEmail } : {}),
  });
  const stateless = new BillingStatelessStack(app, `billing-${config.stage}-stateless`, {
    env,
    stage: config.stage,
    description: `Billing (${config.stage}): functions, HTTP API, schedule, alarms`,
    stateful,
    collectionsRateMinutes: config.collectionsRateMinutes,
    jwtIssuer: config.jwtIssuer,
    jwtAudience: config.jwtAudience,
    paymentsApiUrl: config.paymentsApiUrl,
    accountsApiUrl: config.accountsApiUrl,
    ...(options.handlerEntry ? { handlerEntry: options.handlerEntry } : {}),
  });
  Tags.of(app).add('service', 'billing');
  Tags.of(app).add('stage', config.stage);
  const placeholders = [
    ['jwtIssuer', config.jwtIssuer === PLACEHOLDER_JWT_ISSUER],
    ['paymentsApiUrl', config.paymentsApiUrl === PLACEHOLDER_PAYMENTS_API_URL],
    ['accountsApiUrl', config.accountsApiUrl === PLACEHOLDER_ACCOUNTS_API_URL],
  ] as const;
  for (const [key, isPlaceholder] of placeholders) {
    if (retainsData(config.stage) && isPlaceholder) {
      Annotations.of(stateless).addWarningV2(
        `billing:placeholder-${key}`,
        `Stage ${config.stage} uses the placeholder ${key}; pass --context ${key}=... before deploying.`,
      );
    }
  }
  return { config, stateful, stateless };
}
