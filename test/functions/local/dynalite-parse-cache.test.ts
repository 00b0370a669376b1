/**
 * dynalite's parses kept by expression shape (functions/local/dynalite-parse-cache.ts) validate every
 * request as dynalite's own parses do: the same trees with each request's values, the same refusals,
 * the same names and values marked used.
 */
import { createRequire } from 'node:module';
import conditionParser from 'dynalite/db/conditionParser.js';
import { describe, expect, it } from 'vitest';
import { cacheDynaliteParses } from '../../../functions/local/dynalite-parse-cache.ts';

const require = createRequire(import.meta.url);
const { validateExpressions } = require('dynalite/validations/index.js') as {
  validateExpressions(data: Record<string, unknown>): string | undefined;
};

/** What dynalite's validation makes of a request: its answer and the parsed expressions it keeps. */
function validated(request: Record<string, unknown>) {
  const data = structuredClone(request);
  const refusal = validateExpressions(data);
  const { _updates, _condition, _keyCondition, _filter, _projection } = data;
  return { refusal, _updates, _condition, _keyCondition, _filter, _projection };
}

const N = (n: number) => ({ N: String(n) });
const S = (s: string) => ({ S: s });
const REQUESTS: Record<string, unknown>[] = [
  // The stores' shapes: a commit, a step record, the spend item's ADD, a Query, a projection.
  {
    UpdateExpression: 'SET #n0 = :v0, #n1 = :v1, #n2 = :v2',
    ConditionExpression: '#n2 = :v3',
    ExpressionAttributeNames: { '#n0': 'step', '#n1': 'lastEnvelope', '#n2': 'version' },
    ExpressionAttributeValues: { ':v0': N(5), ':v1': { M: { step: N(5) } }, ':v2': N(7), ':v3': N(6) },
  },
  {
    UpdateExpression: 'SET #n0 = :v0, #n1 = :v1, #n2 = :v2',
    ConditionExpression: '#n2 = :v3',
    ExpressionAttributeNames: { '#n0': 'step', '#n1': 'lastEnvelope', '#n2': 'version' },
    ExpressionAttributeValues: {
      ':v0': N(6),
      ':v1': { M: { step: N(6), loop: { BOOL: true } } },
      ':v2': N(8),
      ':v3': N(7),
    },
  },
  { ConditionExpression: 'attribute_not_exists(pk)' },
  {
    UpdateExpression: 'SET #kind = :kind ADD #ti :ti, #to :to, #mc :one',
    ExpressionAttributeNames: { '#kind': 'kind', '#ti': 'ti', '#to': 'to', '#mc': 'mc' },
    ExpressionAttributeValues: { ':kind': S('spend'), ':ti': N(765), ':to': N(259), ':one': N(1) },
  },
  {
    KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
    ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
    ExpressionAttributeValues: { ':pk': S('THREAD#t-1'), ':prefix': S('NODE#') },
  },
  {
    ProjectionExpression: '#version, #step',
    ExpressionAttributeNames: { '#version': 'version', '#step': 'step' },
  },
  // The same shape with a value of another type: an ADD of a string is refused.
  {
    UpdateExpression: 'SET #kind = :kind ADD #ti :ti, #to :to, #mc :one',
    ExpressionAttributeNames: { '#kind': 'kind', '#ti': 'ti', '#to': 'to', '#mc': 'mc' },
    ExpressionAttributeValues: { ':kind': S('spend'), ':ti': S('many'), ':to': N(259), ':one': N(1) },
  },
  // Refusals: an unused value, an undefined name, a reserved word, bad syntax, overlapping paths.
  {
    ConditionExpression: '#a = :a',
    ExpressionAttributeNames: { '#a': 'a' },
    ExpressionAttributeValues: { ':a': N(1), ':b': N(2) },
  },
  { ConditionExpression: '#a = :a', ExpressionAttributeValues: { ':a': N(1) } },
  { ConditionExpression: 'status = :a', ExpressionAttributeValues: { ':a': S('x') } },
  {
    ConditionExpression: '#a = = :a',
    ExpressionAttributeNames: { '#a': 'a' },
    ExpressionAttributeValues: { ':a': N(1) },
  },
  {
    UpdateExpression: 'SET #a = :a, #a.b = :a',
    ExpressionAttributeNames: { '#a': 'a' },
    ExpressionAttributeValues: { ':a': N(1) },
  },
  // What reads values themselves: BETWEEN's bounds in order and not, attribute_type's type name.
  {
    ConditionExpression: '#a BETWEEN :lo AND :hi',
    ExpressionAttributeNames: { '#a': 'a' },
    ExpressionAttributeValues: { ':lo': N(1), ':hi': N(9) },
  },
  {
    ConditionExpression: '#a BETWEEN :lo AND :hi',
    ExpressionAttributeNames: { '#a': 'a' },
    ExpressionAttributeValues: { ':lo': N(9), ':hi': N(1) },
  },
  {
    ConditionExpression: 'attribute_type(#a, :t)',
    ExpressionAttributeNames: { '#a': 'a' },
    ExpressionAttributeValues: { ':t': S('N') },
  },
  {
    ConditionExpression: 'attribute_type(#a, :t)',
    ExpressionAttributeNames: { '#a': 'a' },
    ExpressionAttributeValues: { ':t': S('X') },
  },
  // A value used twice, a list append, a function of a path.
  {
    UpdateExpression: 'SET #l = list_append(if_not_exists(#l, :empty), :items), #c = :x, #d = :x',
    ConditionExpression: 'size(#l) < :x',
    ExpressionAttributeNames: { '#l': 'list', '#c': 'c', '#d': 'd' },
    ExpressionAttributeValues: { ':empty': { L: [] }, ':items': { L: [N(1)] }, ':x': N(3) },
  },
];

describe("dynalite's parses kept by shape", () => {
  it('validate every request as the parses made afresh do, the first time a shape comes and after', () => {
    const fresh = REQUESTS.map(validated);
    // Its own parse, untouched so far in this process.
    expect(conditionParser.parse).toBeTypeOf('function');
    cacheDynaliteParses();
    expect(REQUESTS.map(validated)).toEqual(fresh);
    expect(REQUESTS.map(validated)).toEqual(fresh);
    // The refusals are there, as dynalite words them.
    expect(fresh.filter((r) => r.refusal !== undefined)).toHaveLength(8);
  });

  it('puts each request its own values: a kept parse shares nothing with the one before', () => {
    cacheDynaliteParses();
    const first = validated(REQUESTS[0]!);
    const second = validated(REQUESTS[1]!);
    expect(JSON.stringify(first._updates)).toContain('"N":"5"');
    expect(JSON.stringify(second._updates)).toContain('"N":"6"');
    expect(JSON.stringify(second._updates)).not.toContain('"N":"5"');
  });
});
