import { createHash } from 'node:crypto';
import {
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type DynamoDBClient,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import * as z from '../../domain/zod.js';
import { lazySchema, safeParseCold } from '../../domain/lazy-schema.js';
import type { Page, PageRequest } from '../../domain/ports/page.js';
import type { RetryItemClaim, RetryRunClaim, RetryRunStore } from '../../domain/ports/retry-runs.js';
import {
  RETRY_ITEM_OUTCOMES,
  RETRY_ITEM_RESULTS,
  RETRY_RUN_STATES,
  type RetryItemResult,
  type RetryRun,
  type RetryRunItem,
} from '../../domain/retry-runs.js';
import { integerNumbers, marshallItem, unmarshallItem, type Item } from './attribute-codec.js';
import { cancellationCodes, CorruptItemError, isConditionalCheckFailed, toDomainError } from './errors.js';
import { decodeStartKey, encodeStartKey, pageLimit } from './pagination.js';

/** Runs and their idempotency keys delete themselves (table TTL) this long after creation. */
export const RETRY_RUN_RETENTION_SECONDS = 90 * 24 * 60 * 60;
/** TransactWriteItems' item limit: items are written in chunks of this many. */
const ITEMS_PER_TRANSACTION = 100;
const PARALLEL_WRITES = 4;

const runSchema = lazySchema(() => z.object({
  run_id: z.string(),
  actor: z.string(),
  reason: z.string(),
  state: z.enum(RETRY_RUN_STATES),
  dry_run: z.boolean(),
  limit: z.int(),
  user_id_count: z.optional(z.int()),
  phase: z.enum(['selecting', 'selected', 'enqueued']),
  selected: z.int(),
  count_billed: z.int(),
  count_failed: z.int(),
  count_still_due: z.int(),
  count_skipped: z.int(),
  created_at: z.string(),
  claim_token: z.string(),
  claimed_at: z.string(),
}));

const itemSchema = lazySchema(() => z.object({
  run_id: z.string(),
  subscription_id: z.string(),
  user_id: z.string(),
  billing_date: z.string(),
  outcome: z.enum(RETRY_ITEM_OUTCOMES),
  detail: z.optional(z.string()),
  finished_at: z.optional(z.string()),
  claim_id: z.optional(z.string()),
  claimed_at: z.optional(z.string()),
}));

const keySchema = lazySchema(() => z.object({ run_id: z.string(), fingerprint: z.string() }));

const runPk = (runId: string) => `RUN#${runId}`;
/** One partition lists every run, newest first: runs are started by people, a few a day. */
const RUNS_PK = 'RUNS';
const listingSk = (run: Pick<RetryRun, 'created_at' | 'run_id'>) => `${run.created_at}#${run.run_id}`;
const listingSchema = lazySchema(() => z.object({ run_id: z.string() }));
const itemSk = (subscriptionId: string) => `ITEM#${subscriptionId}`;
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
/** The caller and the key, hashed: an actor or key of any characters makes a fixed-size partition key. */
const keyPk = (actor: string, idempotencyKey: string) => `KEY#${sha256(`${actor}\n${idempotencyKey}`)}`;

function decode<T>(schema: z.ZodMiniType<T>, item: Item, label: string): T {
  const { pk: _pk, sk: _sk, expires_at: _ttl, ...raw } = unmarshallItem(item, integerNumbers);
  const parsed = safeParseCold(schema, raw);
  if (!parsed.success) throw new CorruptItemError(`${label} is corrupt: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

function runFromItem(item: Item): RetryRun {
  const { count_billed, count_failed, count_still_due, count_skipped, user_id_count, ...rest } = decode(runSchema, item, 'retry run');
  return {
    ...rest,
    ...(user_id_count !== undefined ? { user_id_count } : {}),
    counts: { billed: count_billed, failed: count_failed, still_due: count_still_due, skipped: count_skipped },
  };
}

function itemFromItem(item: Item): RetryRunItem {
  const { claim_id: _claim, claimed_at: _at, detail, finished_at, ...rest } = decode(itemSchema, item, 'retry run item');
  return { ...rest, ...(detail !== undefined ? { detail } : {}), ...(finished_at !== undefined ? { finished_at } : {}) };
}

/** The retry-runs table (see table-definitions.ts): every write conditional, every read strongly consistent. */
export class DynamoRetryRunStore implements RetryRunStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
    private readonly nowSeconds: () => number = () => Math.floor(Date.now() / 1000),
  ) {}

  async findByKey(actor: string, idempotencyKey: string): Promise<RetryRun | undefined> {
    const key = await this.keyItem(actor, idempotencyKey);
    return key ? this.get(key.run_id) : undefined;
  }

  async get(runId: string): Promise<RetryRun | undefined> {
    const out = await this.send('retryRuns.get', () =>
      this.client.send(new GetItemCommand({ TableName: this.table, Key: { pk: { S: runPk(runId) }, sk: { S: 'RUN' } }, ConsistentRead: true })),
    );
    return out.Item ? runFromItem(out.Item) : undefined;
  }

  async claim(actor: string, idempotencyKey: string, fingerprint: string, run: RetryRun): Promise<RetryRunClaim> {
    const hash = sha256(fingerprint);
    const expires = this.nowSeconds() + RETRY_RUN_RETENTION_SECONDS;
    const { counts, ...header } = run;
    const transaction: TransactWriteItem[] = [
      {
        Put: {
          TableName: this.table,
          Item: marshallItem({ pk: keyPk(actor, idempotencyKey), sk: 'KEY', run_id: run.run_id, fingerprint: hash, expires_at: expires }),
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      {
        Put: {
          TableName: this.table,
          Item: marshallItem({
            pk: runPk(run.run_id),
            sk: 'RUN',
            ...header,
            count_billed: counts.billed,
            count_failed: counts.failed,
            count_still_due: counts.still_due,
            count_skipped: counts.skipped,
            expires_at: expires,
          }),
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      // Its sort key names the run, so it is new whenever the run is.
      { Put: { TableName: this.table, Item: marshallItem({ pk: RUNS_PK, sk: listingSk(run), run_id: run.run_id, expires_at: expires }) } },
    ];
    try {
      await this.client.send(new TransactWriteItemsCommand({ TransactItems: transaction }));
      return { kind: 'created' };
    } catch (error) {
      if (cancellationCodes(error)?.[0] !== 'ConditionalCheckFailed') throw toDomainError(error, { operation: 'retryRuns.claim' });
    }
    const key = await this.keyItem(actor, idempotencyKey);
    const existing = key ? await this.get(key.run_id) : undefined;
    if (!key || !existing) throw new CorruptItemError('retry run key names no run');
    return { kind: 'exists', run: existing, sameRequest: key.fingerprint === hash };
  }

  async takeOver(runId: string, previousToken: string, token: string, at: string): Promise<boolean> {
    return this.conditionalUpdate('retryRuns.takeOver', {
      TableName: this.table,
      Key: { pk: { S: runPk(runId) }, sk: { S: 'RUN' } },
      UpdateExpression: 'SET claim_token = :t, claimed_at = :at',
      ConditionExpression: 'phase = :selecting AND claim_token = :old',
      ExpressionAttributeValues: { ':t': { S: token }, ':at': { S: at }, ':selecting': { S: 'selecting' }, ':old': { S: previousToken } },
    });
  }

  async putItems(items: readonly RetryRunItem[]): Promise<void> {
    const expires = this.nowSeconds() + RETRY_RUN_RETENTION_SECONDS;
    const chunks: RetryRunItem[][] = [];
    for (let i = 0; i < items.length; i += ITEMS_PER_TRANSACTION) chunks.push(items.slice(i, i + ITEMS_PER_TRANSACTION));
    const put = (item: RetryRunItem) => ({
      TableName: this.table,
      Item: marshallItem({ pk: runPk(item.run_id), sk: itemSk(item.subscription_id), ...item, expires_at: expires }),
      ConditionExpression: 'attribute_not_exists(pk)',
    });
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(PARALLEL_WRITES, chunks.length) }, async () => {
        for (let c = next++; c < chunks.length; c = next++) {
          const chunk = chunks[c]!;
          try {
            await this.client.send(new TransactWriteItemsCommand({ TransactItems: chunk.map((item) => ({ Put: put(item) })) }));
          } catch (error) {
            if (!cancellationCodes(error)?.includes('ConditionalCheckFailed')) throw toDomainError(error, { operation: 'retryRuns.putItems' });
            // Some exist already (an earlier request stored them): write the others one by one.
            for (const item of chunk) {
              try {
                await this.client.send(new PutItemCommand(put(item)));
              } catch (single) {
                if (!isConditionalCheckFailed(single)) throw toDomainError(single, { operation: 'retryRuns.putItems' });
              }
            }
          }
        }
      }),
    );
  }

  async markSelected(runId: string, token: string, selected: number): Promise<boolean> {
    return this.conditionalUpdate('retryRuns.markSelected', {
      TableName: this.table,
      Key: { pk: { S: runPk(runId) }, sk: { S: 'RUN' } },
      UpdateExpression: 'SET phase = :selected, selected = :n',
      ConditionExpression: 'phase = :selecting AND claim_token = :t',
      ExpressionAttributeValues: { ':selected': { S: 'selected' }, ':n': { N: String(selected) }, ':selecting': { S: 'selecting' }, ':t': { S: token } },
    });
  }

  async markEnqueued(runId: string): Promise<void> {
    await this.conditionalUpdate('retryRuns.markEnqueued', {
      TableName: this.table,
      Key: { pk: { S: runPk(runId) }, sk: { S: 'RUN' } },
      UpdateExpression: 'SET phase = :enqueued',
      ConditionExpression: 'phase = :selected',
      ExpressionAttributeValues: { ':enqueued': { S: 'enqueued' }, ':selected': { S: 'selected' } },
    });
  }

  async listRuns(page?: PageRequest): Promise<Page<RetryRun>> {
    const out = await this.send('retryRuns.listRuns', () =>
      this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': { S: RUNS_PK } },
          ScanIndexForward: false,
          Limit: pageLimit(page),
          ExclusiveStartKey: decodeStartKey(page?.cursor, ['pk', 'sk'], { pk: RUNS_PK }),
        }),
      ),
    );
    const ids = (out.Items ?? []).map((item) => decode(listingSchema, item, 'retry run listing').run_id);
    const runs = await Promise.all(ids.map((id) => this.get(id)));
    return { items: runs.filter((run): run is RetryRun => run !== undefined), next: encodeStartKey(out.LastEvaluatedKey) };
  }

  async listItems(runId: string, page?: PageRequest): Promise<Page<RetryRunItem>> {
    const out = await this.send('retryRuns.listItems', () =>
      this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :item)',
          ExpressionAttributeValues: { ':pk': { S: runPk(runId) }, ':item': { S: 'ITEM#' } },
          ConsistentRead: true,
          Limit: pageLimit(page),
          ExclusiveStartKey: decodeStartKey(page?.cursor, ['pk', 'sk'], { pk: runPk(runId) }),
        }),
      ),
    );
    return { items: (out.Items ?? []).map(itemFromItem), next: encodeStartKey(out.LastEvaluatedKey) };
  }

  async claimItem(runId: string, subscriptionId: string, claimId: string, at: string, staleBefore: string): Promise<RetryItemClaim> {
    const key = { pk: { S: runPk(runId) }, sk: { S: itemSk(subscriptionId) } };
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: key,
          UpdateExpression: 'SET outcome = :processing, claim_id = :c, claimed_at = :at',
          ConditionExpression:
            'attribute_exists(pk) AND (outcome = :pending OR (outcome = :processing AND (claim_id = :c OR claimed_at < :stale)))',
          ExpressionAttributeValues: {
            ':processing': { S: 'processing' },
            ':pending': { S: 'pending' },
            ':c': { S: claimId },
            ':at': { S: at },
            ':stale': { S: staleBefore },
          },
          ReturnValues: 'ALL_OLD',
          // A refused claim answers with the item as the condition saw it (none when it does not
          // exist): what a consistent read after it would say, without the second request.
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      const before = itemFromItem(out.Attributes!);
      return { kind: 'claimed', item: { ...before, outcome: 'processing' }, fresh: before.outcome === 'pending' };
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw toDomainError(error, { operation: 'retryRuns.claimItem' });
      const seen = (error as { Item?: Item }).Item;
      if (!seen) return { kind: 'missing' };
      const item = itemFromItem(seen);
      return item.outcome === 'processing' || item.outcome === 'pending' ? { kind: 'busy' } : { kind: 'finished', item };
    }
  }

  async finishItem(runId: string, subscriptionId: string, claimId: string, result: RetryItemResult, detail: string | undefined, at: string): Promise<boolean> {
    if (!RETRY_ITEM_RESULTS.includes(result)) throw new TypeError(`not a run result: ${result}`);
    try {
      await this.client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.table,
                Key: { pk: { S: runPk(runId) }, sk: { S: itemSk(subscriptionId) } },
                UpdateExpression: `SET outcome = :r, finished_at = :at${detail !== undefined ? ', detail = :d' : ''} REMOVE claim_id, claimed_at`,
                ConditionExpression: 'outcome = :processing AND claim_id = :c',
                ExpressionAttributeValues: {
                  ':r': { S: result },
                  ':at': { S: at },
                  ':processing': { S: 'processing' },
                  ':c': { S: claimId },
                  ...(detail !== undefined ? { ':d': { S: detail } } : {}),
                },
              },
            },
            {
              Update: {
                TableName: this.table,
                Key: { pk: { S: runPk(runId) }, sk: { S: 'RUN' } },
                UpdateExpression: `ADD count_${result} :one`,
                ConditionExpression: 'attribute_exists(pk)',
                ExpressionAttributeValues: { ':one': { N: '1' } },
              },
            },
          ],
        }),
      );
      return true;
    } catch (error) {
      if (cancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw toDomainError(error, { operation: 'retryRuns.finishItem' });
    }
  }

  private async keyItem(actor: string, idempotencyKey: string): Promise<z.infer<typeof keySchema> | undefined> {
    const out = await this.send('retryRuns.key', () =>
      this.client.send(new GetItemCommand({ TableName: this.table, Key: { pk: { S: keyPk(actor, idempotencyKey) }, sk: { S: 'KEY' } }, ConsistentRead: true })),
    );
    return out.Item ? decode(keySchema, out.Item, 'retry run key') : undefined;
  }

  private async conditionalUpdate(operation: string, input: ConstructorParameters<typeof UpdateItemCommand>[0]): Promise<boolean> {
    try {
      await this.client.send(new UpdateItemCommand(input));
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw toDomainError(error, { operation });
    }
  }

  private async send<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw toDomainError(error, { operation });
    }
  }
}
