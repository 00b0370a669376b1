/** Keeps the permission table of docs/deploy.md equal to what the runtime construct actually grants. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NODE_TYPES } from '../../engine/model/schema.ts';
import { HANDLER_SPECS } from '../../infra/handler-registry.ts';

const deployDoc = readFileSync('docs/deploy.md', 'utf8');

function documentedRow(type: string): string[] {
  const line = deployDoc.split('\n').find((l) => l.trim().startsWith(`| ${type} |`));
  if (!line) throw new Error(`docs/deploy.md has no row for ${type}`);
  return line
    .trim()
    .slice(1, -1)
    .split('|')
    .map((cell) => cell.trim());
}

describe('the permission table of docs/deploy.md', () => {
  it.each(NODE_TYPES)('documents %s as the registry grants it', (type) => {
    const spec = HANDLER_SPECS[type];
    const [, sizing, table, s3, other] = documentedRow(type);
    expect(sizing).toBe(`${spec.memoryMb} MB / ${spec.timeoutSeconds} s`);
    expect(table).toBe(spec.table.map((a) => a.replace('dynamodb:', '')).join(', '));
    const segments = {
      none: 'GetObject',
      read: 'GetObject',
      write: 'GetObject, PutObject',
      'read-write': 'GetObject, PutObject',
    };
    expect(s3).toBe(`segments/*: ${segments[spec.conversation]}; values/*: GetObject, PutObject`);
    expect(other === '—').toBe(!spec.callsModels && !spec.callsTools);
  });
});
