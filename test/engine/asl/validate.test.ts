import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { type AslDefinition, substituteResources } from '../../../engine/asl/index.ts';
import { NODE_TYPES } from '../../../engine/model/schema.ts';
import { compiledOf, corpus } from './corpus.ts';

interface ValidationResult {
  isValid: boolean;
  errorsText(separator?: string): string;
}
type AslValidator = (
  definition: unknown,
  options?: { checkArn?: boolean; checkPaths?: boolean },
) => ValidationResult;

const validate = createRequire(import.meta.url)('asl-validator') as AslValidator;

/** asl-validator writes QueryLanguage into the states it checks: give it a copy. */
function check(definition: AslDefinition, options?: { checkArn?: boolean; checkPaths?: boolean }) {
  const result = validate(structuredClone(definition), options);
  return { isValid: result.isValid, errors: result.isValid ? '' : result.errorsText('\n') };
}

describe('asl-validator accepts every compiled definition', () => {
  it.each(corpus.map(([name]) => [name]))('%s', (name) => {
    expect(check(compiledOf(name).definition)).toEqual({ isValid: true, errors: '' });
  });

  it('accepts a definition once its placeholders are real function ARNs (ARN check on)', () => {
    const { definition, substitutionKeys } = compiledOf('examples/route-loop.json');
    const arns = Object.fromEntries(
      NODE_TYPES.map((type) => [
        `Fn_${type}`,
        `arn:aws:lambda:eu-west-1:123456789012:function:stepthread-${type.toLowerCase()}`,
      ]),
    );
    expect(substitutionKeys.every((key) => key in arns)).toBe(true);
    expect(check(substituteResources(definition, arns), { checkArn: true, checkPaths: true })).toEqual({
      isValid: true,
      errors: '',
    });
  });

  it('rejects a broken definition (the check can fail)', () => {
    const { definition } = compiledOf('examples/route-loop.json');
    const broken = structuredClone(definition);
    const start = broken.States.start;
    if (start?.Type !== 'Task' || start.End) throw new Error('unexpected START state');
    start.Next = 'no-such-state';
    expect(check(broken).isValid).toBe(false);
  });
});
