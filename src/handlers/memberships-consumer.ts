import type { Context, KinesisStreamBatchResponse, KinesisStreamEvent, KinesisStreamRecord } from 'aws-lambda';
import { actedBy, eventActor } from '../domain/actors.js';
import { LockedError } from '../domain/errors.js';
import { safeParseCold } from '../domain/lazy-schema.js';
import { aboveMaximumMessage, exceedsPaymentMaximum } from '../domain/payment-maximum.js';
import { applyMembershipEvent, membershipEventSchema, type MembershipEvent, type MembershipOutcome } from '../domain/use-cases/membership/apply-membership-event.js';
import type { AppDeps } from '../runtime/deps.js';
import { attemptDepsOf, invocationOwner, outcomeFields, runGroupedSequentially } from './shared/batch.js';

type Decoded =
  | { readonly ok: true; readonly record: KinesisStreamRecord; readonly event: MembershipEvent }
  | { readonly ok: false; readonly record: KinesisStreamRecord; readonly issues: string[] };

/**
 * The record's event, or why it can never be applied: not base64 JSON, not a membership event, or
 * a NEW whose plan amount is above the payment maximum (nothing is written for it).
 */
export function decodeMembershipRecord(record: KinesisStreamRecord, maxPaymentCents: number): Decoded {
  let data: unknown;
  try {
    data = JSON.parse(Buffer.from(record.kinesis.data, 'base64').toString('utf8'));
  } catch {
    return { ok: false, record, issues: ['data is not base64 JSON'] };
  }
  const parsed = safeParseCold(membershipEventSchema, data);
  if (!parsed.success) return { ok: false, record, issues: parsed.error.issues.map((i) => `${i.path.join('.') || '(event)'}: ${i.message}`) };
  if (parsed.data.type === 'NEW' && exceedsPaymentMaximum(parsed.data.plan.amount, maxPaymentCents)) {
    return { ok: false, record, issues: [`plan.amount: ${aboveMaximumMessage(maxPaymentCents)}`] };
  }
  return { ok: true, record, event: parsed.data };
}

function outcomeLog(outcome: MembershipOutcome): Record<string, unknown> {
  const fields: Record<string, unknown> = { outcome: outcome.kind };
  if (outcome.kind === 'ignored') fields.reason = outcome.reason;
  if (outcome.kind === 'applied') fields.written = outcome.written.map((r) => ({ subscription_id: r.subscription_id, billing_status: r.billing_status }));
  if (outcome.kind === 'applied' || outcome.kind === 'ignored') fields.attempts = outcome.attempts.map(outcomeFields);
  return fields;
}

/**
 * Memberships stream → membership changes (DESIGN 7), each user's records in stream order: the
 * first that fails is reported with every later record of that user, so nothing is applied ahead
 * of it (the replays that follow are no-ops). A record that cannot be decoded is reported too but
 * blocks nothing: it can never be applied, so the user's later changes go ahead.
 */
export function createMembershipsConsumerHandler(deps: AppDeps) {
  return async (event: KinesisStreamEvent, context?: Context): Promise<KinesisStreamBatchResponse> => {
    const owner = invocationOwner(context);
    const logger = deps.logger.child({ fn: 'memberships-consumer', request_id: owner });
    const attemptDeps = attemptDepsOf(deps, logger);
    const decoded = event.Records.map((record) => decodeMembershipRecord(record, deps.settings.maxPaymentCents));
    const blockedUsers = new Set<string>();

    const failed = await runGroupedSequentially(
      decoded,
      // The partition key is the user id; an undecodable record still groups with its user.
      (item) => (item.ok ? item.event.user_id : item.record.kinesis.partitionKey),
      async (item): Promise<boolean> => {
        const sequence = item.record.kinesis.sequenceNumber;
        if (!item.ok) {
          logger.error({ sequence_number: sequence, partition_key: item.record.kinesis.partitionKey, issues: item.issues }, 'invalid membership record');
          return true;
        }
        const { user_id, event_id, type } = item.event;
        const fields = { sequence_number: sequence, user_id, event_id, type };
        if (blockedUsers.has(user_id)) {
          logger.warn({ ...fields, retry: true }, 'membership event held back behind an earlier failure of this user');
          return true;
        }
        try {
          const outcome = await applyMembershipEvent({ ...attemptDeps, billing: actedBy(attemptDeps.billing, eventActor('membership', event_id)) }, { event: item.event, owner });
          logger.info({ ...fields, ...outcomeLog(outcome) }, 'membership event');
          return false;
        } catch (error) {
          blockedUsers.add(user_id);
          if (error instanceof LockedError) logger.info({ ...fields, outcome: 'skipped_locked', retry: true }, 'membership event');
          else logger.error({ ...fields, err: error, retry: true }, 'membership event failed');
          return true;
        }
      },
    );

    return {
      batchItemFailures: event.Records.filter((_, i) => failed[i]).map((r) => ({ itemIdentifier: r.kinesis.sequenceNumber })),
    };
  };
}

