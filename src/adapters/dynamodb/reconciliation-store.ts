import { DeleteItemCommand, GetItemCommand, PutItemCommand, QueryCommand, TransactWriteItemsCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { AlreadyResolvedError } from '../../domain/errors.js';
import type { Amendment, OpenException, ReconciliationRun, ReconciliationStore, RunClaim, RunState, StoredException } from '../../domain/ports/reconciliation.js';
import { RAILS_RECONCILED } from '../../domain/reconciliation/request.js';
import type { Checkpoint, StagedChunk, StagedWrite } from '../../domain/reconciliation/checkpoint.js';
import type { ReconciliationException } from '../../domain/reconciliation/match.js';
import type { PaymentMethod } from '../../domain/records.js';
import { integerNumbers, marshallItem, toAttributeValue, unmarshallItem } from './attribute-codec.js';
import { isConditionalCheckFailed, toDomainError } from './errors.js';
import { foldAmendments, stagedKey, STAGE_TTL_SECONDS, writeAll } from './reconciliation-progress.js';

const runKey = (date: string, rail: PaymentMethod) => `RUN#${date}#${rail}`;
const exceptionSort = (id: string) => `EXC#${id}`;
const openKey = (rail: PaymentMethod) => `OPEN#${rail}`;
const CHECKPOINT_FIELDS = ['checkpoint', 'checkpoint_run_id', 'checkpoint_step'] as const;

/** The condition a claim holds: a fresh run (no result of its id), or the checkpoint at its step. */
function claimCondition(claim: RunClaim): { expression: string; values: Record<string, AttributeValue> } {
  const values: Record<string, AttributeValue> = { ':rid': { S: claim.run_id } };
  if (claim.step === 0) return { expression: '(attribute_not_exists(run_id) OR run_id <> :rid)', values };
  return { expression: 'checkpoint_run_id = :rid AND checkpoint_step = :step', values: { ...values, ':step': { N: String(claim.step) } } };
}

/**
 * The reconciliation table: `pk = RUN#{date}#{rail}` holds the run (`sk = RUN`) and its exceptions
 * (`sk = EXC#{id}`); `pk = EXC#{id}, sk = AT` names the run that holds an exception, for a resolution;
 * `pk = OPEN#{rail}, sk = EXC#{id}` lists a rail's new exceptions until they are resolved (the gauges).
 */
export class DynamoReconciliationStore implements ReconciliationStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
  ) {}

  async saveRun(run: ReconciliationRun, exceptions: readonly ReconciliationException[], at: string, claim?: RunClaim): Promise<{ readonly created: readonly string[]; readonly superseded?: boolean }> {
    const created: string[] = [];
    for (const exception of exceptions) {
      if (await this.upsertException(run, exception, at)) created.push(exception.exception_id);
    }
    const condition = claim ? claimCondition(claim) : undefined;
    try {
      const item = marshallItem({ ...run, pk: runKey(run.date, run.rail), sk: 'RUN' });
      await this.client.send(new PutItemCommand({ TableName: this.table, Item: item, ...(condition ? { ConditionExpression: condition.expression, ExpressionAttributeValues: condition.values } : {}) }));
    } catch (error) {
      // Another invocation of the same run finished it, or a newer run took the day over.
      if (isConditionalCheckFailed(error)) return { created, superseded: true };
      throw toDomainError(error, { operation: 'reconciliation.saveRun' });
    }
    return { created };
  }

  async runState(date: string, rail: PaymentMethod): Promise<RunState> {
    const out = await this.send('reconciliation.runState', () =>
      this.client.send(new GetItemCommand({ TableName: this.table, Key: { pk: { S: runKey(date, rail) }, sk: { S: 'RUN' } }, ConsistentRead: true, ProjectionExpression: 'run_id, checkpoint' })),
    );
    const runId = out.Item?.run_id?.S;
    const checkpoint = out.Item?.checkpoint?.S;
    return { ...(runId ? { run_id: runId } : {}), ...(checkpoint ? { checkpoint: JSON.parse(checkpoint) as Checkpoint } : {}) };
  }

  /** The run item keeps the checkpoint beside the last result (a re-run shows the old result until it finishes). */
  async saveCheckpoint(date: string, rail: PaymentMethod, checkpoint: Checkpoint, claim: RunClaim): Promise<boolean> {
    const condition = claimCondition(claim);
    const fresh = claim.step === 0 ? ' AND (attribute_not_exists(checkpoint_run_id) OR checkpoint_run_id <> :rid)' : '';
    const zero = { M: { count: { N: '0' }, total_cents: { N: '0' } } };
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: { pk: { S: runKey(date, rail) }, sk: { S: 'RUN' } },
          UpdateExpression:
            'SET checkpoint = :c, checkpoint_run_id = :rid, checkpoint_step = :next, #d = :d, rail = :r, #s = if_not_exists(#s, :running), exception_ids = if_not_exists(exception_ids, :none), ' +
            'ours = if_not_exists(ours, :zero), theirs = if_not_exists(theirs, :zero), net_drift_cents = if_not_exists(net_drift_cents, :z), gross_drift_cents = if_not_exists(gross_drift_cents, :z)',
          ConditionExpression: condition.expression + fresh,
          ExpressionAttributeNames: { '#d': 'date', '#s': 'status' },
          ExpressionAttributeValues: {
            ...condition.values,
            ':c': { S: JSON.stringify(checkpoint) },
            ':next': { N: String(checkpoint.step) },
            ':d': { S: date },
            ':r': { S: rail },
            ':running': { S: 'running' },
            ':none': { L: [] },
            ':zero': zero,
            ':z': { N: '0' },
          },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw toDomainError(error, { operation: 'reconciliation.saveCheckpoint' });
    }
  }

  /** Staged chunks live a week: a run abandoned mid-way leaves nothing behind for long. */
  async stage(date: string, rail: PaymentMethod, runId: string, writer: string, chunks: readonly StagedChunk[], at: string): Promise<void> {
    const expires = Math.floor(Date.parse(at) / 1000) + STAGE_TTL_SECONDS;
    const items = chunks.map((chunk, i) => ({ ...stagedKey(date, rail, runId, writer, i), chunk: { S: JSON.stringify(chunk) }, expires_at: { N: String(expires) } }));
    await this.send('reconciliation.stage', () => writeAll(this.client, this.table, items));
  }

  async staged(date: string, rail: PaymentMethod, runId: string, writes: readonly StagedWrite[]): Promise<StagedChunk[]> {
    const byKey = new Map<string, StagedChunk>();
    for (const item of await this.queryAll(stagedKey(date, rail, runId, '', 0).pk.S!)) byKey.set(item.sk as string, JSON.parse(item.chunk as string) as StagedChunk);
    const chunks: StagedChunk[] = [];
    for (const write of writes) {
      for (let i = 0; i < write.chunks; i += 1) {
        const chunk = byKey.get(stagedKey(date, rail, runId, write.writer, i).sk.S!);
        if (!chunk) throw new Error(`reconciliation ${date} ${rail}: staged chunk ${write.writer}#${i} is missing`);
        chunks.push(chunk);
      }
    }
    return chunks;
  }

  /** The debit ids, in items of up to 5,000 ids each, under `DEBITS#{date}#{rail}`. */
  async saveDebits(date: string, rail: PaymentMethod, transactionIds: readonly string[]): Promise<void> {
    const items: Record<string, AttributeValue>[] = [];
    for (let i = 0; i * 5000 < transactionIds.length; i += 1) {
      items.push({ pk: { S: `DEBITS#${date}#${rail}` }, sk: { S: String(i).padStart(4, '0') }, ids: { S: JSON.stringify(transactionIds.slice(i * 5000, (i + 1) * 5000)) } });
    }
    await this.send('reconciliation.saveDebits', () => writeAll(this.client, this.table, items));
  }

  async findDebitDays(rail: PaymentMethod, transactionIds: ReadonlySet<string>, days: readonly string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    for (const day of days) {
      if (found.size === transactionIds.size) break;
      for (const item of await this.queryAll(`DEBITS#${day}#${rail}`)) {
        for (const id of JSON.parse(item.ids as string) as string[]) if (transactionIds.has(id) && !found.has(id)) found.set(id, day);
      }
    }
    return found;
  }

  /**
   * `AMEND#{from}` under the earlier day's run holds what `from` found for its money; written again,
   * it replaces itself, and an exception it no longer finds is closed as explained.
   */
  async amend(date: string, rail: PaymentMethod, amendment: Amendment, at: string): Promise<{ readonly created: readonly string[] }> {
    const key = { pk: { S: runKey(date, rail) }, sk: { S: `AMEND#${amendment.from}` } };
    const before = await this.send('reconciliation.amendRead', () => this.client.send(new GetItemCommand({ TableName: this.table, Key: key, ConsistentRead: true })));
    const previous = before.Item ? ((unmarshallItem(before.Item).exception_ids as string[] | undefined) ?? []) : [];
    const run = { date, rail } as ReconciliationRun;
    const created: string[] = [];
    for (const exception of amendment.result.exceptions) {
      if (await this.upsertException(run, exception, at)) created.push(exception.exception_id);
    }
    const current = new Set(amendment.result.exceptions.map((e) => e.exception_id));
    for (const id of previous.filter((id) => !current.has(id))) {
      await this.send('reconciliation.explain', () =>
        this.client.send(
          new UpdateItemCommand({
            TableName: this.table,
            Key: { pk: { S: runKey(date, rail) }, sk: { S: exceptionSort(id) } },
            UpdateExpression: 'SET explained_at = :at, explained_by = :from',
            ExpressionAttributeValues: { ':at': { S: at }, ':from': { S: amendment.from } },
          }),
        ),
      );
      // Explained is no longer open: the overdue gauge and alarm stop counting it.
      await this.send('reconciliation.explained', () => this.client.send(new DeleteItemCommand({ TableName: this.table, Key: { pk: { S: openKey(rail) }, sk: { S: exceptionSort(id) } } })));
    }
    const { exceptions, ...totals } = amendment.result;
    const item = marshallItem({ ...totals, from: amendment.from, amended_at: at, exception_ids: [...current] });
    await this.send('reconciliation.amend', () => this.client.send(new PutItemCommand({ TableName: this.table, Item: { ...item, ...key } })));
    return { created };
  }

  private async queryAll(pk: string): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.send('reconciliation.query', () =>
        this.client.send(new QueryCommand({ TableName: this.table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': { S: pk } }, ExclusiveStartKey: start })),
      );
      items.push(...(page.Items ?? []).map((item) => unmarshallItem(item, integerNumbers)));
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  }

  /**
   * A new exception is written with its pointer and its open entry in one transaction, so a crash
   * never leaves one listed that a resolution cannot find. One seen before is SET to what the matcher
   * found, `first_seen_at` and a resolution kept, its pointer put again. True when it was new.
   */
  private async upsertException(run: ReconciliationRun, exception: ReconciliationException, at: string): Promise<boolean> {
    const key = { pk: runKey(run.date, run.rail), sk: exceptionSort(exception.exception_id) };
    const pointer = { Put: { TableName: this.table, Item: marshallItem({ pk: exceptionSort(exception.exception_id), sk: 'AT', date: run.date, rail: run.rail }) } };
    const fields: Record<string, unknown> = { ...exception, date: run.date, last_seen_at: at };
    const open = exception.known ? [] : [{ Put: { TableName: this.table, Item: marshallItem({ exception_id: exception.exception_id, date: run.date, first_seen_at: at, pk: openKey(run.rail), sk: exceptionSort(exception.exception_id) }) } }];
    const created = { Put: { TableName: this.table, Item: marshallItem({ ...fields, first_seen_at: at, ...key }), ConditionExpression: 'attribute_not_exists(pk)' } };
    try {
      await this.client.send(new TransactWriteItemsCommand({ TransactItems: [created, pointer, ...open] }));
      return true;
    } catch (error) {
      if (!isCancelledByCondition(error)) throw toDomainError(error, { operation: 'reconciliation.createException' });
    }
    const names: Record<string, string> = {};
    const values: Record<string, AttributeValue> = {};
    const sets = Object.entries(fields).map(([name, value], i) => {
      names[`#f${i}`] = name;
      values[`:f${i}`] = toAttributeValue(value, name);
      return `#f${i} = :f${i}`;
    });
    const update = { Update: { TableName: this.table, Key: marshallItem(key), UpdateExpression: `SET ${sets.join(', ')}`, ExpressionAttributeNames: names, ExpressionAttributeValues: values } };
    await this.send('reconciliation.upsertException', () => this.client.send(new TransactWriteItemsCommand({ TransactItems: [update, pointer] })));
    return false;
  }

  async getRun(date: string, rail: PaymentMethod): Promise<{ run: ReconciliationRun; exceptions: StoredException[] } | undefined> {
    const items = await this.queryAll(runKey(date, rail));
    const runItem = items.find((i) => i.sk === 'RUN');
    if (!runItem) return undefined;
    const strip = ({ pk: _pk, sk: _sk, ...rest }: Record<string, unknown>) => rest;
    const own = strip(runItem);
    for (const field of CHECKPOINT_FIELDS) delete own[field];
    // Later days' late returns and disputes amend this day's result: folded in as it is read.
    const run = foldAmendments(own as unknown as ReconciliationRun, items.filter((i) => String(i.sk).startsWith('AMEND#')));
    const current = new Set(run.exception_ids);
    // An exception a later run no longer finds stays stored with its resolution; the run lists the current ones.
    const exceptions = items.filter((i) => String(i.sk).startsWith('EXC#')).map((i) => strip(i) as unknown as StoredException).filter((e) => current.has(e.exception_id));
    return { run, exceptions };
  }

  async resolve(exceptionId: string, resolution: NonNullable<StoredException['resolution']>): Promise<StoredException | undefined> {
    const pointer = await this.send('reconciliation.find', () =>
      this.client.send(new GetItemCommand({ TableName: this.table, Key: { pk: { S: exceptionSort(exceptionId) }, sk: { S: 'AT' } }, ConsistentRead: true })),
    );
    if (!pointer.Item) return undefined;
    const { date, rail } = unmarshallItem(pointer.Item) as { date: string; rail: PaymentMethod };
    const key = { pk: { S: runKey(date, rail) }, sk: { S: exceptionSort(exceptionId) } };
    try {
      await this.client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.table,
                Key: key,
                UpdateExpression: 'SET #r = :r',
                ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#r)',
                ExpressionAttributeNames: { '#r': 'resolution' },
                ExpressionAttributeValues: { ':r': toAttributeValue(resolution, 'resolution') },
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              },
            },
            { Delete: { TableName: this.table, Key: { pk: { S: openKey(rail) }, sk: { S: exceptionSort(exceptionId) } } } },
          ],
        }),
      );
    } catch (error) {
      const reason = (error as { name?: string; CancellationReasons?: { Code?: string; Item?: Record<string, AttributeValue> }[] }).CancellationReasons?.[0];
      if ((error as { name?: string }).name === 'TransactionCanceledException' && reason?.Code === 'ConditionalCheckFailed') {
        if (reason.Item?.resolution) throw new AlreadyResolvedError(`reconciliation exception ${exceptionId} is already resolved`);
        return undefined;
      }
      throw toDomainError(error, { operation: 'reconciliation.resolve' });
    }
    const stored = await this.send('reconciliation.resolved', () => this.client.send(new GetItemCommand({ TableName: this.table, Key: key, ConsistentRead: true })));
    const { pk: _pk, sk: _sk, ...rest } = unmarshallItem(stored.Item ?? {}, integerNumbers);
    return rest as unknown as StoredException;
  }

  /** Each rail's run as `getRun` reads it: checkpoint fields left out, later days' amendments folded in. */
  async listRuns(date: string): Promise<ReconciliationRun[]> {
    const runs = await Promise.all(RAILS_RECONCILED.map((rail) => this.getRun(date, rail)));
    return runs.flatMap((found) => (found ? [found.run] : []));
  }

  async openExceptions(rail: PaymentMethod): Promise<OpenException[]> {
    const open: OpenException[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.send('reconciliation.open', () =>
        this.client.send(new QueryCommand({ TableName: this.table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': { S: openKey(rail) } }, ExclusiveStartKey: start })),
      );
      open.push(...(page.Items ?? []).map((item) => stripKeys(unmarshallItem(item)) as unknown as OpenException));
      start = page.LastEvaluatedKey;
    } while (start);
    return open;
  }

  private async send<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw toDomainError(error, { operation });
    }
  }
}

/** The transaction was cancelled because its first item's condition failed (the exception exists). */
function isCancelledByCondition(error: unknown): boolean {
  const cancelled = error as { name?: string; CancellationReasons?: { Code?: string }[] };
  return cancelled.name === 'TransactionCanceledException' && cancelled.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed';
}

function stripKeys({ pk: _pk, sk: _sk, ...rest }: Record<string, unknown>): Record<string, unknown> {
  return rest;
}
