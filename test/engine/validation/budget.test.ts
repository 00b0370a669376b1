/**
 * A workflow's `budget` and a profile's `pricing` (issue 27): what validation refuses, each problem
 * coded with its path, and what it keeps for the run (START reads the budget from the compiled
 * description; the LLM node its profile's pricing).
 */
import { describe, expect, it } from 'vitest';
import { compileWorkflow } from '../../../engine/asl/index.ts';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

const base = {
  id: 'w',
  version: 1,
  nodes: [
    { id: 's', type: 'START' },
    { id: 'e', type: 'END' },
  ],
  edges: [{ from: 's', to: 'e' }],
};
const openai = (pricing: unknown) => ({ profiles: { default: { provider: 'openai', model: 'm', pricing } } });

const problems = (extra: object) =>
  validateWorkflow({ ...base, ...extra }).errors.map(({ code, path }) => ({ code, path }));

describe('budget and pricing in the workflow file', () => {
  it.each([
    [{ budget: { maxTokens: 0 } }, 'SCHEMA_INVALID', 'budget.maxTokens'],
    [{ budget: { maxTokens: 1.5 } }, 'SCHEMA_INVALID', 'budget.maxTokens'],
    [{ budget: { maxCostUsd: -1 } }, 'SCHEMA_INVALID', 'budget.maxCostUsd'],
    [{ budget: { maxToolCalls: '3' } }, 'SCHEMA_INVALID', 'budget.maxToolCalls'],
    [{ budget: { maxToken: 5 } }, 'UNKNOWN_KEY', 'budget.maxToken'],
    [{ budget: 100 }, 'SCHEMA_INVALID', 'budget'],
    [
      openai({ inputPerMTok: -1, outputPerMTok: 1 }),
      'SCHEMA_INVALID',
      'profiles.default.pricing.inputPerMTok',
    ],
    [openai({ inputPerMTok: 1 }), 'SCHEMA_INVALID', 'profiles.default.pricing.outputPerMTok'],
    [
      openai({ inputPerMTok: 1, outputPerMTok: 1, cached: 1 }),
      'UNKNOWN_KEY',
      'profiles.default.pricing.cached',
    ],
  ])('refuses %j: %s at %s', (extra, code, path) => {
    expect(problems(extra)).toEqual([{ code, path }]);
  });

  it('keeps a valid budget for START and the pricing for the LLM node', () => {
    const budget = { maxTokens: 50_000, maxCostUsd: 0.5, maxToolCalls: 20 };
    expect(problems({ budget, ...openai({ inputPerMTok: 0.15, outputPerMTok: 0.6 }) })).toEqual([]);
    // START's node config, in the node table the definition names.
    const { nodeTable } = compileWorkflow(validateWorkflow({ ...base, budget }).workflow!);
    expect(nodeTable.json).toContain(JSON.stringify({ ...budget }).slice(1, -1));
  });
});
