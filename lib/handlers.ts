import { Duration } from 'aws-cdk-lib';
import { fileURLToPath } from 'node:url';

/** The seven Lambda entry points (docs/design.md); each is `src/handlers/{name}.ts` exporting `handler`. */
export const HANDLER_NAMES = [
  'collections-job',
  'batch-worker',
  'webhook-balance-worker',
  'ach-handler',
  'memberships-consumer',
  'stripe-webhook',
  'api',
] as const;

export type HandlerName = (typeof HANDLER_NAMES)[number];

/** Resolves a handler name to its entry file; tests swap in stub entries. */
export type HandlerEntryResolver = (name: HandlerName) => string;

export const sourceHandlerEntry: HandlerEntryResolver = (name) =>
  fileURLToPath(new URL(`../src/handlers/${name}.ts`, import.meta.url));

/**
 * Function timeouts, shared by both stacks: the stateful stack sizes each queue's visibility
 * timeout from its consumer's timeout, so the two can never drift apart.
 */
export const HANDLER_TIMEOUTS: Record<HandlerName, Duration> = {
  // Fans out over every status shard and enqueues one message per due record.
  'collections-job': Duration.minutes(5),
  // Up to 10 collection attempts per batch, each with a processor call.
  'batch-worker': Duration.minutes(2),
  'webhook-balance-worker': Duration.seconds(60),
  // Behind the HTTP API, whose integration timeout is 30 s.
  'ach-handler': Duration.seconds(20),
  'memberships-consumer': Duration.minutes(2),
  'stripe-webhook': Duration.seconds(20),
  'api': Duration.seconds(29),
};

/** Lambda's guidance for SQS event sources: visibility timeout at least six times the function timeout. */
export const SQS_VISIBILITY_FACTOR = 6;

export function visibilityTimeoutFor(consumer: HandlerName): Duration {
  return Duration.seconds(HANDLER_TIMEOUTS[consumer].toSeconds() * SQS_VISIBILITY_FACTOR);
}
