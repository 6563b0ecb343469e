import { GetItemCommand, UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { HoldCode } from '../../../domain/instruments/holds.js';
import { isEmptyInstrumentWrite, type InstrumentsItem, type InstrumentWrite } from '../../../domain/instruments/instrument.js';
import type { InstrumentStore } from '../../../domain/ports/instruments.js';
import { isConditionalCheckFailed, toDomainError } from '../errors.js';
import { instrumentsFromItem, instrumentsKey, instrumentsUpdate } from './item.js';

/** The instruments table on its own: the read of the instruments route, an outcome's hold, an operator's release. */
export class DynamoInstrumentStore implements InstrumentStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
  ) {}

  async get(userId: string): Promise<InstrumentsItem> {
    try {
      const out = await this.client.send(new GetItemCommand({ TableName: this.table, Key: instrumentsKey(userId), ConsistentRead: true }));
      return instrumentsFromItem(out.Item, userId, this.table);
    } catch (error) {
      throw toDomainError(error, { operation: 'instruments.get' });
    }
  }

  async write(write: InstrumentWrite): Promise<void> {
    if (isEmptyInstrumentWrite(write)) return;
    try {
      await this.client.send(new UpdateItemCommand(instrumentsUpdate(this.table, write)));
    } catch (error) {
      throw toDomainError(error, { operation: 'instruments.write' });
    }
  }

  async release(userId: string, instrumentId: string, code: HoldCode): Promise<boolean> {
    const update = instrumentsUpdate(this.table, { user_id: userId, releases: [{ instrument_id: instrumentId, code }] });
    try {
      await this.client.send(new UpdateItemCommand({ ...update, ConditionExpression: 'attribute_exists(#a1)' }));
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw toDomainError(error, { operation: 'instruments.release' });
    }
  }
}
