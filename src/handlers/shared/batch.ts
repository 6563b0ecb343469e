import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchItemFailure, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from '../../domain/zod.js';
import { safeParseCold } from '../../domain/lazy-schema.js';
import type { AttemptOutcome } from '../../domain/use-cases/collect.js';
import type { UseCaseDeps } from '../../domain/use-cases/deps.js';
import type { AppDeps } from '../../runtime/deps.js';
import type { Logger } from '../../runtime/logger.js';
import { attemptDepsOf } from './attempt-deps.js';

export { attemptDepsOf };

/** Independent users processed at once by one batch invocation. */
export const USER_CONCURRENCY = 8;

/** The lock owner of this invocation: the request id, or a fresh id outside Lambda. */
export function invocationOwner(context?: Context): string {
  return context?.awsRequestId ?? `local-${randomUUID()}`;
}

/**
 * Runs `work` for every item: items of one group (user) strictly in order, different groups
 * concurrently, at most `limit` groups at a time. Answers the results in input order.
 */
export async function runGroupedSequentially<T, R>(
  items: readonly T[],
  groupOf: (item: T) => string,
  work: (item: T, index: number) => Promise<R>,
  limit = USER_CONCURRENCY,
): Promise<R[]> {
  const groups = new Map<string, number[]>();
  items.forEach((item, index) => {
    const key = groupOf(item);
    const list = groups.get(key);
    if (list) list.push(index);
    else groups.set(key, [index]);
  });
  const results = new Array<R>(items.length);
  const queue = [...groups.values()];
  const workers = Array.from({ length: Math.max(1, Math.min(limit, queue.length)) }, async () => {
    for (let group = queue.shift(); group; group = queue.shift()) {
      for (const index of group) results[index] = await work(items[index]!, index);
    }
  });
  await Promise.all(workers);
  return results;
}

export type ParsedSqsRecord<T> =
  | { readonly ok: true; readonly record: SQSRecord; readonly body: T }
  | { readonly ok: false; readonly record: SQSRecord; readonly issues: string[] };

/** Parses a message body as JSON and validates it; a bad body is reported, never thrown. */
export function parseSqsBody<S extends z.ZodMiniType>(record: SQSRecord, schema: S): ParsedSqsRecord<z.infer<S>> {
  let data: unknown;
  try {
    data = JSON.parse(record.body);
  } catch {
    return { ok: false, record, issues: ['body is not valid JSON'] };
  }
  const parsed = safeParseCold(schema, data);
  if (!parsed.success) {
    return { ok: false, record, issues: parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`) };
  }
  return { ok: true, record, body: parsed.data };
}

/**
 * Whether the message must be delivered again: a held lock or an uncounted failure (transient,
 * interrupted, record moved) leaves the work due and unsaved. Everything else either did the
 * work, decided it is not due, or saved a counted failure that the ladder schedules. Our own
 * outage is dropped: redelivering it would only walk it to the DLQ; the planner sends it again.
 */
export function shouldRetryOutcome(outcome: AttemptOutcome): boolean {
  return outcome.kind === 'skipped_locked' || (outcome.kind === 'failed_uncounted' && outcome.class !== 'outage');
}

export function batchItemFailure(messageId: string): SQSBatchItemFailure {
  return { itemIdentifier: messageId };
}

/** The log fields of an attempt outcome: ids and the decision, never account data. */
export function outcomeFields(outcome: AttemptOutcome): Record<string, unknown> {
  const fields: Record<string, unknown> = { outcome: outcome.kind };
  if (outcome.kind === 'not_due') fields.reason = outcome.reason;
  if (outcome.kind === 'failed_uncounted') fields.failure_class = outcome.class;
  if (outcome.kind === 'failed_counted') {
    fields.failure_state = outcome.failure.state;
    fields.failure_count = outcome.failure.count;
  }
  if ('record' in outcome && outcome.record) fields.billing_status = outcome.record.billing_status;
  return fields;
}

export interface SqsWorkContext {
  readonly owner: string;
  readonly messageId: string;
  readonly logger: Logger;
  readonly attemptDeps: UseCaseDeps;
}

/**
 * An SQS handler that validates every body with `schema`, runs `work` for the messages of one user
 * in order and for different users concurrently, and answers `batchItemFailures` for exactly the
 * messages to deliver again: an invalid body (nothing written; the queue's DLQ takes it after
 * maxReceiveCount), a thrown error, or `work` answering true.
 */
export function perUserSqsHandler<S extends z.ZodMiniType<{ user_id: string }>>(
  deps: AppDeps,
  functionName: string,
  schema: S,
  work: (body: z.infer<S>, context: SqsWorkContext) => Promise<boolean>,
): (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse> {
  return async (event, context) => {
    const owner = invocationOwner(context);
    const logger = deps.logger.child({ fn: functionName, request_id: owner });
    const attemptDeps = attemptDepsOf(deps, logger);
    const parsed = event.Records.map((record) => parseSqsBody(record, schema));
    const retry = await runGroupedSequentially(
      parsed,
      (item) => (item.ok ? `user:${item.body.user_id}` : `message:${item.record.messageId}`),
      async (item): Promise<boolean> => {
        const messageId = item.record.messageId;
        const child = logger.child({ message_id: messageId });
        if (!item.ok) {
          child.error({ issues: item.issues, retry: true }, 'invalid message');
          return true;
        }
        try {
          return await work(item.body, { owner, messageId, logger: child, attemptDeps });
        } catch (error) {
          child.error({ err: error, user_id: item.body.user_id, retry: true }, 'message raised');
          return true;
        }
      },
    );
    return { batchItemFailures: event.Records.filter((_, i) => retry[i]).map((r) => batchItemFailure(r.messageId)) };
  };
}
