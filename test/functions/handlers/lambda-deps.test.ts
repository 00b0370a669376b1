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
  it('include every store, the item sources and lists of FORKs over a list in the stack’s bucket included', async () => {
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
    const written = await deps.itemLists!.putItemSource('t-list', { shared: true }, ['a', { b: 'ü' }, null]);
    expect(written.source.key).toBe('map/sources/t-list.json');
    // Each part is read back alone, by its byte range (multi-byte characters included).
    expect(await deps.itemLists!.readItemSource(written.source.key, written.source.template)).toEqual({
      shared: true,
    });
    expect(
      await Promise.all(
        written.items.map((range) => deps.itemLists!.readItemSource(written.source.key, range)),
      ),
    ).toEqual(['a', { b: 'ü' }, null]);
    const list = await deps.itemLists!.putItemList('t-list', written.items);
    expect(list).toEqual({ bucket: 'deps', key: 'map/items/t-list.json', results: 'map/results/t-list' });
    expect(await deps.itemLists!.readItemList(list.bucket, list.key)).toEqual(written.items);
  });
});
