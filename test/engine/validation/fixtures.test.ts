import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseWorkflowText } from '../../../cli/load-workflow.ts';
import type { ErrorCode } from '../../../engine/errors.ts';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

const fixtures = join(import.meta.dirname, '..', '..', 'fixtures');
const invalidDir = join(fixtures, 'invalid');
const validDir = join(fixtures, 'valid');

/** test/fixtures/invalid/expected.json maps each fixture file to the exact codes it must produce. */
const expected = JSON.parse(readFileSync(join(invalidDir, 'expected.json'), 'utf8')) as Record<
  string,
  ErrorCode[]
>;

function codesOf(dir: string, file: string): ErrorCode[] {
  const loaded = parseWorkflowText(readFileSync(join(dir, file), 'utf8'), file);
  if (loaded.kind === 'unparsable') return [loaded.error.code];
  if (loaded.kind !== 'loaded') throw new Error(`cannot load ${file}`);
  return validateWorkflow(loaded.data).errors.map((error) => error.code);
}

const sorted = (codes: readonly string[]): string[] => [...codes].sort();

describe('invalid fixtures', () => {
  const files = readdirSync(invalidDir).filter((file) => file !== 'expected.json');

  it('has an expectation for every fixture file and a file for every expectation', () => {
    expect(sorted(files)).toEqual(sorted(Object.keys(expected)));
    expect(files.length).toBeGreaterThanOrEqual(30);
  });

  it.each(Object.entries(expected))('%s produces exactly %j', (file, codes) => {
    expect(sorted(codesOf(invalidDir, file))).toEqual(sorted(codes));
  });

  it('covers every validation code', () => {
    const validationCodes: ErrorCode[] = [
      'WORKFLOW_PARSE_ERROR',
      'SCHEMA_INVALID',
      'DUPLICATE_NODE_ID',
      'UNKNOWN_NODE_TYPE',
      'INVALID_NODE_CONFIG',
      'INVALID_FORK_PATH_IDS',
      'MAIN_PATH_ID_NOT_FOUND',
      'FORK_JOIN_MISMATCH',
      'INVALID_JOIN_THRESHOLD',
      'INVALID_JOIN_TIMEOUT',
      'INVALID_CONTEXT_OPERATION',
      'MISSING_OPERATION_CONFIG',
      'INVALID_MESSAGE',
      'INVALID_USER_INTERACTION_TYPE',
      'INVALID_SELECTION_OPTIONS',
      'INVALID_INTERACTION_TIMEOUT',
      'INVALID_INTERACTION_ANSWER',
      'START_NODE_COUNT',
      'UNREACHABLE_NODE',
      'NO_PATH_TO_END',
      'UNKNOWN_EDGE_TARGET',
      'UNKNOWN_ROUTE_TARGET',
      'UNPAIRED_FORK',
      'UNPAIRED_JOIN',
      'FORK_BRANCH_ESCAPES',
      'UNBOUNDED_CYCLE',
      'INVALID_LOOP',
      'INVALID_MAX_ITERATIONS',
      'UNKNOWN_PROFILE',
      'UNKNOWN_TOOL',
      'INVALID_EXPRESSION',
      'INVALID_VARIABLE',
      'INVALID_EDGE',
      'INVALID_STATE_NAME',
      'RESERVED_ID',
    ];
    const covered = new Set(Object.values(expected).flat());
    expect(validationCodes.filter((code) => !covered.has(code))).toEqual([]);
  });
});

describe('valid fixtures', () => {
  it.each(readdirSync(validDir))('%s validates clean', (file) => {
    expect(codesOf(validDir, file)).toEqual([]);
  });
});
