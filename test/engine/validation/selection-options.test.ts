/**
 * ask_for_selection options a person could not tell apart or read are refused by validate, coded and
 * named (the node, each option by index and as written): an empty one, and one that differs from an
 * earlier one only in surrounding whitespace.
 */
import { describe, expect, it } from 'vitest';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

function selectionErrors(options: string[]) {
  return validateWorkflow({
    id: 'sel',
    version: 1,
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'pick', type: 'USER_INTERACTION', config: { userInteractionType: 'ask_for_selection', options } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'pick' },
      { from: 'pick', to: 'end' },
    ],
  }).errors.map(({ code, path, nodeId, message }) => ({ code, path, nodeId, message }));
}

describe('ask_for_selection options', () => {
  it('refuses options that differ only in surrounding whitespace, naming both', () => {
    expect(selectionErrors(['yes', ' yes', 'no', 'no\t'])).toEqual([
      {
        code: 'INVALID_SELECTION_OPTIONS',
        path: 'nodes[1].config.options[1]',
        nodeId: 'pick',
        message:
          'selection options must be distinct: option 1 " yes" differs only in surrounding whitespace from option 0 "yes"',
      },
      {
        code: 'INVALID_SELECTION_OPTIONS',
        path: 'nodes[1].config.options[3]',
        nodeId: 'pick',
        message:
          'selection options must be distinct: option 3 "no\\t" differs only in surrounding whitespace from option 2 "no"',
      },
    ]);
  });

  it('refuses an empty option, or one of whitespace only', () => {
    expect(selectionErrors(['', 'a', '  '])).toEqual([
      {
        code: 'INVALID_SELECTION_OPTIONS',
        path: 'nodes[1].config.options[0]',
        nodeId: 'pick',
        message: 'selection option 0 is empty (""): a person could not tell what it chooses',
      },
      {
        code: 'INVALID_SELECTION_OPTIONS',
        path: 'nodes[1].config.options[2]',
        nodeId: 'pick',
        message: 'selection option 2 is empty ("  "): a person could not tell what it chooses',
      },
    ]);
  });

  it('still refuses an option given twice, and names it', () => {
    expect(selectionErrors(['a', 'b', 'a']).map((error) => error.message)).toEqual([
      'selection options must be distinct: option 2 "a" is the same as option 0 "a"',
    ]);
  });

  it('takes distinct options, inner whitespace and case telling them apart', () => {
    expect(selectionErrors(['yes', 'Yes', 'y e s', 'no'])).toEqual([]);
  });
});
