/**
 * The graph the console draws for a workflow with SUBGRAPHs: each SUBGRAPH is listed with the nodes
 * inlined for it (the console's box around them), outermost first, and its child's START and END are
 * drawn as START and END under their own ids' names, not as SUBGRAPH.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { graphViewOf } from '../../cli/dev/graph-view.ts';
import type { Workflow } from '../../engine/model/schema.ts';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'valid', 'subgraph.json');

/** START → the nodes in order → END. */
function chain(id: string, middle: Record<string, unknown>[]) {
  const nodes = [{ id: 'begin', type: 'START' }, ...middle, { id: 'finish', type: 'END' }];
  return {
    id,
    version: 1,
    nodes,
    edges: nodes.slice(1).map((node, i) => ({ from: nodes[i]!.id, to: node.id })),
  };
}

describe('the console graph of a workflow with SUBGRAPHs', () => {
  it('lists each SUBGRAPH with every node inlined for it, and types its START and END as such', () => {
    const view = graphViewOf(JSON.parse(readFileSync(FIXTURE, 'utf8')) as Workflow);
    expect(view.subgraphs).toEqual([
      {
        subgraphId: 'first',
        label: 'first',
        nodeIds: ['first.begin', 'first.split', 'first.style', 'first.facts', 'first.merge', 'first.finish'],
      },
      {
        subgraphId: 'second',
        label: 'second',
        nodeIds: [
          'second.begin',
          'second.split',
          'second.style',
          'second.facts',
          'second.merge',
          'second.finish',
        ],
      },
    ]);
    const drawn = (id: string) => view.nodes.find((node) => node.id === id);
    expect(drawn('first.begin')).toMatchObject({ type: 'START', label: 'begin' });
    expect(drawn('first.finish')).toMatchObject({ type: 'END', label: 'finish' });
    expect(view.nodes.filter((node) => node.type === 'SUBGRAPH')).toEqual([]);
  });

  it('nests a SUBGRAPH inside another: the outer box holds the inner one, which comes after it', () => {
    const work = {
      id: 'work',
      type: 'VARIABLE',
      config: { variableName: 'x', variableType: 'number', expression: '1' },
    };
    const inner = {
      id: 'inner',
      type: 'SUBGRAPH',
      name: 'Inner review',
      config: { workflow: chain('i', [work]) },
    };
    const outer = { id: 'outer', type: 'SUBGRAPH', config: { workflow: chain('o', [inner]) } };
    const view = graphViewOf(chain('nested', [outer]) as unknown as Workflow);
    expect(view.subgraphs).toEqual([
      {
        subgraphId: 'outer',
        label: 'outer',
        nodeIds: [
          'outer.begin',
          'outer.inner.begin',
          'outer.inner.work',
          'outer.inner.finish',
          'outer.finish',
        ],
      },
      {
        subgraphId: 'outer.inner',
        label: 'Inner review',
        nodeIds: ['outer.inner.begin', 'outer.inner.work', 'outer.inner.finish'],
      },
    ]);
  });
});
