/**
 * Two FORKs in a row: `paths` over six static paths named out of alphabetical order, then `items`
 * over a list of twelve (item 10 sorts before item 2 as text). Each child thread sets one variable.
 * Their children are created in one step each, so only the FORK says their order.
 */
export const PATH_IDS = ['zeta', 'alpha', 'mike', 'bravo', 'yankee', 'charlie'] as const;
export const ITEM_COUNT = 12;

const setVariable = (id: string, expression: string) => ({
  id,
  type: 'VARIABLE',
  config: { variableName: 'v', variableType: 'string', expression },
});

export const manyForks = {
  id: 'many-forks',
  version: 1,
  description: 'Six fork paths, then a FORK over twelve items.',
  variables: [{ name: 'v', type: 'string', scope: 'thread', initial: '' }],
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'paths',
      type: 'FORK',
      config: {
        forkPathIds: [...PATH_IDS],
        forkStrategy: 'parallel',
        childNodeIds: PATH_IDS.map((path) => `do-${path}`),
      },
    },
    ...PATH_IDS.map((path) => setVariable(`do-${path}`, `'${path}'`)),
    { id: 'paths-join', type: 'JOIN', config: { forkPathIds: [...PATH_IDS], joinStrategy: 'ALL_COMPLETED' } },
    {
      id: 'items',
      type: 'FORK',
      config: {
        forkPathIds: ['item'],
        forkStrategy: 'parallel',
        childNodeIds: ['do-item'],
        forEach: '{{input.items}}',
      },
    },
    setVariable('do-item', "'item ' + item"),
    { id: 'items-join', type: 'JOIN', config: { forkPathIds: ['item'], joinStrategy: 'ALL_COMPLETED' } },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'paths' },
    ...PATH_IDS.map((path) => ({ from: `do-${path}`, to: 'paths-join' })),
    { from: 'paths-join', to: 'items' },
    { from: 'do-item', to: 'items-join' },
    { from: 'items-join', to: 'end' },
  ],
};

/** The input that runs it: items 0..11. */
export const manyForksInput = { items: Array.from({ length: ITEM_COUNT }, (_, index) => index) };

/** Its fork children's forkPathIds in FORK order, as the page lists them. */
export const manyForksPathOrder = [
  ...PATH_IDS.map((path) => `paths/${path}`),
  ...Array.from({ length: ITEM_COUNT }, (_, index) => `items/item[${index}]`),
];
