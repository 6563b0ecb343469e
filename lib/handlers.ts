import { Duration } from 'aws-cdk-lib';
import { fileURLToPath } from 'node:url';
import { FUNCTION_NAMES, FUNCTIONS, queuesOf, type FunctionManifest, type FunctionName } from '../src/manifest/index.js';

/** The Lambda functions, as the manifest (src/manifest/functions.ts) names them. */
export const HANDLER_NAMES: readonly FunctionName[] = FUNCTION_NAMES;

export type HandlerName = FunctionName;

/** Resolves a handler name to its entry file; tests swap in stub entries. */
export type HandlerEntryResolver = (name: HandlerName) => string;

/** The entry module the manifest names for the function. */
export const sourceHandlerEntry: HandlerEntryResolver = (name) => fileURLToPath(new URL(`../${FUNCTIONS[name].entry}`, import.meta.url));

/**
 * Function timeouts (from the manifest), shared by both stacks: the stateful stack sizes each
 * queue's visibility timeout from its consumer's timeout, so the two can never drift apart.
 */
export const HANDLER_TIMEOUTS = Object.fromEntries(
  FUNCTION_NAMES.map((name) => [name, Duration.seconds(FUNCTIONS[name].timeoutSeconds)]),
) as Record<HandlerName, Duration>;

/** Lambda's guidance for SQS event sources: visibility timeout at least six times the function timeout, plus its batching window. */
export const SQS_VISIBILITY_FACTOR = 6;

export function visibilityTimeoutFor(consumer: HandlerName): Duration {
  const { trigger } = FUNCTIONS[consumer] as FunctionManifest;
  const window = trigger.kind === 'sqs' ? (trigger.maxBatchingWindowSeconds ?? 0) : 0;
  return Duration.seconds(HANDLER_TIMEOUTS[consumer].toSeconds() * SQS_VISIBILITY_FACTOR + window);
}

/** The function that consumes a queue (its manifest trigger), for the queue's visibility timeout. */
export function consumerOf(queue: string): HandlerName {
  const consumers = FUNCTION_NAMES.filter((name) => {
    const { trigger, alsoConsumes } = FUNCTIONS[name] as FunctionManifest;
    return [...queuesOf(trigger), ...(alsoConsumes ? queuesOf(alsoConsumes) : [])].some((id) => id === queue);
  });
  if (consumers.length !== 1) throw new Error(`queue ${queue} has ${consumers.length} consumers in the manifest; expected one`);
  return consumers[0]!;
}
