/**
 * The execution index's reads for listings: a workflow's executions newest first (the console's list
 * and its copies), and records by id in batches (`runs --stack` beside Step Functions' ListExecutions).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { type Meter, meterClient } from '../../functions/aws/meter.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import {
  createExecutionIndex,
  type ExecutionIndex,
  type ExecutionRecord,
} from '../../functions/stores/execution-index.ts';

const names = { tableName: 'stepthread-executions', bucketName: 'stepthread-executions-unused' };

let services: LocalServices;
let executions: ExecutionIndex;
let meter: Meter;

const record = (i: number): ExecutionRecord => ({
  executionId: `exec-${String(i).padStart(3, '0')}`,
  rootThreadId: `t-${i}`,
  workflowId: i % 2 === 0 ? 'even' : 'odd',
  workflowVersion: 1,
  status: 'RUNNING',
  startTime: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
});

beforeAll(async () => {
  services = await startLocalServices({ ephemeral: true, names });
  const clients = createAwsClients(services.target, names);
  executions = createExecutionIndex(clients);
  meter = meterClient(clients.dynamo);
  for (let i = 0; i < 150; i += 1) await executions.putExecution(record(i));
});
afterAll(() => services.close());

describe('execution index listings', () => {
  it('lists a workflow’s executions newest first, taking the limit from the newest', async () => {
    const newest = await executions.listExecutions('even', { limit: 3, newestFirst: true });
    expect(newest.map((e) => e.executionId)).toEqual(['exec-148', 'exec-146', 'exec-144']);
    const oldest = await executions.listExecutions('even', { limit: 2 });
    expect(oldest.map((e) => e.executionId)).toEqual(['exec-000', 'exec-002']);
  });

  it('reads records by id in batches of 100, leaving out ids it does not hold', async () => {
    meter.reset();
    const ids = [...Array.from({ length: 150 }, (_, i) => record(i).executionId), 'exec-missing', 'exec-000'];
    const found = await executions.getExecutions(ids);
    expect(found.size).toBe(150);
    expect(found.get('exec-042')).toEqual(record(42));
    expect(found.has('exec-missing')).toBe(false);
    expect(meter.requests('BatchGetItemCommand')).toBe(2);
  });
});
