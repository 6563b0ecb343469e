import { GetItemCommand, PutItemCommand, QueryCommand, TransactWriteItemsCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { AlreadyResolvedError } from '../../domain/errors.js';
import type { OpenException, ReconciliationRun, ReconciliationStore, StoredException } from '../../domain/ports/reconciliation.js';
import { RAILS_RECONCILED } from '../../domain/reconciliation/request.js';
import type { ReconciliationException } from '../../domain/reconciliation/match.js';
import type { PaymentMethod } from '../../domain/records.js';
import { integerNumbers, marshallItem, toAttributeValue, unmarshallItem } from './attribute-codec.js';
import { toDomainError } from './errors.js';

const runKey = (date: string, rail: PaymentMethod) => `RUN#${date}#${rail}`;
const exceptionSort = (id: string) => `EXC#${id}`;
const openKey = (rail: PaymentMethod) => `OPEN#${rail}`;

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

  async saveRun(run: ReconciliationRun, exceptions: readonly ReconciliationException[], at: string): Promise<{ readonly created: readonly string[] }> {
    const created: string[] = [];
    for (const exception of exceptions) {
      if (await this.upsertException(run, exception, at)) created.push(exception.exception_id);
    }
    await this.send('reconciliation.saveRun', () => this.client.send(new PutItemCommand({ TableName: this.table, Item: marshallItem({ ...run, pk: runKey(run.date, run.rail), sk: 'RUN' }) })));
    return { created };
  }

  /** SET what the matcher found; `first_seen_at` and a resolution are kept. True when it was not stored before. */
  private async upsertException(run: ReconciliationRun, exception: ReconciliationException, at: string): Promise<boolean> {
    const fields: Record<string, unknown> = { ...exception, date: run.date, last_seen_at: at };
    const names: Record<string, string> = { '#first': 'first_seen_at' };
    const values: Record<string, AttributeValue> = { ':at': { S: at } };
    const sets = ['#first = if_not_exists(#first, :at)'];
    Object.entries(fields).forEach(([name, value], i) => {
      names[`#f${i}`] = name;
      values[`:f${i}`] = toAttributeValue(value, name);
      sets.push(`#f${i} = :f${i}`);
    });
    const out = await this.send('reconciliation.upsertException', () =>
      this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: { pk: { S: runKey(run.date, run.rail) }, sk: { S: exceptionSort(exception.exception_id) } },
          UpdateExpression: `SET ${sets.join(', ')}`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'UPDATED_OLD',
        }),
      ),
    );
    const isNew = out.Attributes?.first_seen_at === undefined;
    if (isNew) {
      await this.send('reconciliation.pointer', () =>
        this.client.send(new PutItemCommand({ TableName: this.table, Item: marshallItem({ pk: exceptionSort(exception.exception_id), sk: 'AT', date: run.date, rail: run.rail }) })),
      );
      if (!exception.known) await this.putOpen(run.rail, { exception_id: exception.exception_id, date: run.date, first_seen_at: at });
    }
    return isNew;
  }

  async getRun(date: string, rail: PaymentMethod): Promise<{ run: ReconciliationRun; exceptions: StoredException[] } | undefined> {
    const items: Record<string, unknown>[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.send('reconciliation.getRun', () =>
        this.client.send(new QueryCommand({ TableName: this.table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': { S: runKey(date, rail) } }, ExclusiveStartKey: start })),
      );
      items.push(...(page.Items ?? []).map((item) => unmarshallItem(item, integerNumbers)));
      start = page.LastEvaluatedKey;
    } while (start);
    const runItem = items.find((i) => i.sk === 'RUN');
    if (!runItem) return undefined;
    const strip = ({ pk: _pk, sk: _sk, ...rest }: Record<string, unknown>) => rest;
    const run = strip(runItem) as unknown as ReconciliationRun;
    const current = new Set(run.exception_ids);
    // An exception a later run no longer finds stays stored with its resolution; the run lists the current ones.
    const exceptions = items.filter((i) => i.sk !== 'RUN').map((i) => strip(i) as unknown as StoredException).filter((e) => current.has(e.exception_id));
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

  async listRuns(date: string): Promise<ReconciliationRun[]> {
    const items = await Promise.all(
      RAILS_RECONCILED.map((rail) =>
        this.send('reconciliation.listRuns', () => this.client.send(new GetItemCommand({ TableName: this.table, Key: { pk: { S: runKey(date, rail) }, sk: { S: 'RUN' } } }))),
      ),
    );
    return items.flatMap((out) => (out.Item ? [stripKeys(unmarshallItem(out.Item, integerNumbers)) as unknown as ReconciliationRun] : []));
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

  private async putOpen(rail: PaymentMethod, entry: OpenException): Promise<void> {
    await this.send('reconciliation.open', () => this.client.send(new PutItemCommand({ TableName: this.table, Item: marshallItem({ ...entry, pk: openKey(rail), sk: exceptionSort(entry.exception_id) }) })));
  }

  private async send<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw toDomainError(error, { operation });
    }
  }
}

function stripKeys({ pk: _pk, sk: _sk, ...rest }: Record<string, unknown>): Record<string, unknown> {
  return rest;
}
