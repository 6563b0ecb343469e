import { Annotations, type App, Tags } from 'aws-cdk-lib';
import { type BillingAppConfig, PLACEHOLDER_JWT_ISSUER, readBillingAppConfig, retainsData } from './config.js';
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
    ...(options.handlerEntry ? { handlerEntry: options.handlerEntry } : {}),
  });
  Tags.of(app).add('service', 'billing');
  Tags.of(app).add('stage', config.stage);
  if (retainsData(config.stage) && config.jwtIssuer === PLACEHOLDER_JWT_ISSUER) {
    Annotations.of(stateless).addWarningV2(
      'billing:placeholder-jwt-issuer',
      `Stage ${config.stage} uses the placeholder JWT issuer; pass --context jwtIssuer=... (every /v1 call will be rejected).`,
    );
  }
  return { config, stateful, stateless };
}
