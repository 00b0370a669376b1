/**
 * What a deployed handler is given (functions/handlers/lambda.ts, `depsFromEnvironment`): every store
 * a node needs, built from the environment the template sets. A distributed FORK over a list writes
 * its item list through `itemLists`; without it the deployed FORK failed with INVALID_TASK_INPUT.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { depsFromEnvironment } from '../../../functions/handlers/lambda.ts';
import { type LocalServices, startLocalServices } from '../../../functions/local/services.ts';

let services: LocalServices;
const saved = { ...process.env };
beforeAll(async () => {
  services = await startLocalServices({ ephemeral: true, names: { tableName: 'deps', bucketName: 'deps' } });
  Object.assign(process.env, {
    STEPTHREAD_DYNAMODB_ENDPOINT: services.target.dynamoEndpoint,
    STEPTHREAD_S3_ENDPOINT: services.target.s3Endpoint,
    STEPTHREAD_TABLE: 'deps',
    STEPTHREAD_BUCKET: 'deps',
  });
});
afterAll(async () => {
  for (const key of [
    'STEPTHREAD_DYNAMODB_ENDPOINT',
    'STEPTHREAD_S3_ENDPOINT',
    'STEPTHREAD_TABLE',
    'STEPTHREAD_BUCKET',
  ]) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
  await services?.close();
});

describe('a deployed handler’s deps', () => {
  it('include every store, the item lists of distributed FORKs in the stack’s bucket included', async () => {
    const deps = depsFromEnvironment();
    for (const store of [
      'threads',
      'conversations',
      'values',
      'joins',
      'executions',
      'interactions',
      'itemLists',
    ]) {
      expect(deps[store as keyof typeof deps], store).toBeDefined();
    }
    const list = await deps.itemLists!.putItemList('t-list', 3);
    expect(list).toEqual({ bucket: 'deps', key: 'map/items/t-list.json', results: 'map/results/t-list' });
    expect(await deps.itemLists!.readItemList(list.bucket, list.key)).toEqual([0, 1, 2]);
  });
});
