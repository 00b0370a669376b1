/** The list-price table and the cost arithmetic (functions/llm/prices.ts). */
import { describe, expect, it } from 'vitest';
import { callCostNanoUsd, listPriceOf, pricingOf } from '../../../functions/llm/prices.ts';

describe('prices', () => {
  it('prices the models the README and docs name, dated suffixes and cross-region ids too', () => {
    expect(listPriceOf('gpt-4o-mini')).toEqual({ inputPerMTok: 0.15, outputPerMTok: 0.6 });
    expect(listPriceOf('gpt-4o-mini-2024-07-18')).toEqual({ inputPerMTok: 0.15, outputPerMTok: 0.6 });
    expect(listPriceOf('anthropic.claude-3-5-haiku-20241022-v1:0')).toEqual({
      inputPerMTok: 0.8,
      outputPerMTok: 4,
    });
    expect(listPriceOf('us.anthropic.claude-3-5-haiku-20241022-v1:0')).toEqual({
      inputPerMTok: 0.8,
      outputPerMTok: 4,
    });
    expect(listPriceOf('llama3.1')).toBeUndefined();
  });

  it('a profile pricing wins over the table; scripted is free without one; an unknown model has none', () => {
    const pricing = { inputPerMTok: 1, outputPerMTok: 2 };
    expect(pricingOf({ provider: 'openai', model: 'gpt-4o-mini', pricing })).toBe(pricing);
    expect(pricingOf({ provider: 'scripted' })).toEqual({ inputPerMTok: 0, outputPerMTok: 0 });
    expect(pricingOf({ provider: 'scripted', pricing })).toBe(pricing);
    expect(pricingOf({ provider: 'openai', model: 'llama3.1' })).toBeUndefined();
  });

  it('a call costs its tokens times the prices, in nano-dollars', () => {
    // 1,200 × $0.15 + 300 × $0.60 per million = $0.00036.
    expect(
      callCostNanoUsd(
        { promptTokens: 1200, completionTokens: 300 },
        { inputPerMTok: 0.15, outputPerMTok: 0.6 },
      ),
    ).toBe(360_000);
    expect(
      callCostNanoUsd({ promptTokens: 1, completionTokens: 0 }, { inputPerMTok: 0.035, outputPerMTok: 0.14 }),
    ).toBe(35);
  });
});
