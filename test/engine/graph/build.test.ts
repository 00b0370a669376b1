import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StepthreadError } from '../../../engine/errors.ts';
import { buildGraph } from '../../../engine/graph/build.ts';
import type { GraphJoinNode } from '../../../engine/graph/types.ts';
import type { Workflow } from '../../../engine/model/schema.ts';

const fixture = (name: string): Workflow =>
  JSON.parse(
    readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'valid', name), 'utf8'),
  ) as Workflow;

describe('buildGraph', () => {
  it('pairs each FORK with its JOIN and lists the branches with global path ids', () => {
    const graph = buildGraph(fixture('fork-join-three-paths.json'));
    const pair = graph.forks.get('split');
    expect(pair?.joinId).toBe('merge');
    expect(graph.joinToFork.get('merge')).toBe('split');
    expect(
      pair?.paths.map((path) => [path.authorPathId, path.pathId, path.entryId, [...path.nodeIds]]),
    ).toEqual([
      ['research', 'split/research', 'gather', ['gather']],
      ['draft', 'split/draft', 'write', ['write']],
      ['review', 'split/review', 'critique', ['critique']],
    ]);
    expect(pair?.mainPathId).toBe('split/draft');
    const join = graph.nodes.get('merge') as GraphJoinNode;
    expect(join.config.forkPathIds).toEqual(['split/research', 'split/draft', 'split/review']);
    expect(join.authorForkPathIds).toEqual(['research', 'draft', 'review']);
    expect(join.config.mainPathId).toBe('split/draft');
    expect(join.authorMainPathId).toBe('draft');
    expect(graph.transitions.get('split')).toEqual({ kind: 'fork', joinId: 'merge', paths: pair?.paths });
  });

  it('is deterministic: the same workflow builds to a deep-equal graph', () => {
    expect(buildGraph(fixture('subgraph.json'))).toEqual(buildGraph(fixture('subgraph.json')));
    expect(buildGraph(fixture('fork-join-three-paths.json'))).toEqual(
      buildGraph(fixture('fork-join-three-paths.json')),
    );
  });

  it('keeps path ids unique when a subgraph with paths "a","b" is inlined twice', () => {
    const graph = buildGraph(fixture('subgraph.json'));
    const pathIds = [...graph.forks.values()].flatMap((pair) => pair.paths.map((path) => path.pathId));
    expect(pathIds).toEqual(['first.split/a', 'first.split/b', 'second.split/a', 'second.split/b']);
    expect(new Set(pathIds).size).toBe(pathIds.length);
    const second = graph.nodes.get('second.merge') as GraphJoinNode;
    expect(second.config.mainPathId).toBe('second.split/a'); // default: the first path
    expect(second.authorForkPathIds).toEqual(['a', 'b']);
  });

  it('inlines SUBGRAPHs: the edge into one enters the child START, the child END continues after it', () => {
    const graph = buildGraph(fixture('subgraph.json'));
    expect(graph.nodes.has('first')).toBe(false);
    expect(graph.successors.get('start')).toEqual(['first.begin']);
    expect(graph.successors.get('first.finish')).toEqual(['second.begin']);
    expect(graph.successors.get('second.finish')).toEqual(['end']);
    expect(graph.subgraphs.get('first')).toEqual({
      subgraphNodeId: 'first',
      entryId: 'first.begin',
      exitIds: ['first.finish'],
      afterHooks: [],
    });

    const entry = graph.nodes.get('first.begin');
    expect(entry).toMatchObject({
      type: 'SUBGRAPH',
      boundary: 'ENTER',
      subgraphNodeId: 'first',
      authorId: 'begin',
      subgraphPath: [],
      config: {
        workflowId: 'review',
        inputMapping: { doc: 'draft' },
        variables: [{ name: 'doc', type: 'string' }],
      },
      hooks: [{ hookType: 'BEFORE_EXECUTE', eventName: 'review-started' }],
    });
    expect(graph.nodes.get('first.finish')).toMatchObject({
      boundary: 'EXIT',
      config: { output: '{{nodes.facts}}', outputMapping: { verdictA: 'output' } },
    });
    expect(graph.nodes.get('first.style')).toMatchObject({ authorId: 'style', subgraphPath: ['first'] });
    expect(graph.startId).toBe('start');
    expect(graph.endIds).toEqual(['end']);
  });

  it('namespaces profiles declared inside a subgraph and resolves the default profile', () => {
    const graph = buildGraph(fixture('subgraph.json'));
    expect(Object.keys(graph.profiles).sort()).toEqual(['default', 'first.strict']);
    expect(graph.nodes.get('first.style')).toMatchObject({ config: { profileId: 'first.strict' } });
    expect(graph.nodes.get('first.facts')).toMatchObject({ config: { profileId: 'default' } });
  });

  it('inlines nested subgraphs with doubly prefixed ids', () => {
    const inner: Workflow = {
      id: 'inner',
      version: 1,
      nodes: [
        { id: 's', type: 'START' },
        { id: 'work', type: 'CODE', config: { code: 'return 1;' } },
        { id: 'e', type: 'END' },
      ],
      edges: [
        { from: 's', to: 'work' },
        { from: 'work', to: 'e' },
      ],
    };
    const middle: Workflow = {
      id: 'middle',
      version: 1,
      nodes: [
        { id: 's', type: 'START' },
        { id: 'deep', type: 'SUBGRAPH', config: { workflow: inner } },
        { id: 'e', type: 'END' },
      ],
      edges: [
        { from: 's', to: 'deep' },
        { from: 'deep', to: 'e' },
      ],
    };
    const outer: Workflow = {
      id: 'outer',
      version: 1,
      maxSteps: 50,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'mid', type: 'SUBGRAPH', config: { workflow: middle } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'mid' },
        { from: 'mid', to: 'end' },
      ],
    };
    const graph = buildGraph(outer);
    expect(graph.order).toEqual([
      'start',
      'mid.s',
      'mid.deep.s',
      'mid.deep.work',
      'mid.deep.e',
      'mid.e',
      'end',
    ]);
    expect(graph.transitions.get('mid.s')).toEqual({ kind: 'next', next: 'mid.deep.s' });
    expect(graph.transitions.get('mid.deep.e')).toEqual({ kind: 'next', next: 'mid.e' });
    expect(graph.nodes.get('mid.deep.work')).toMatchObject({ subgraphPath: ['mid', 'mid.deep'] });
    expect(graph.nodes.get('mid.deep.s')).toMatchObject({
      subgraphNodeId: 'mid.deep',
      subgraphPath: ['mid'],
    });
    expect(graph.maxSteps).toBe(50);
  });

  it('resolves loops, route order and the loop back edge', () => {
    const workflow = {
      id: 'loop',
      version: 1,
      variables: [
        { name: 'a', type: 'boolean', initial: false },
        { name: 'b', type: 'boolean', initial: false },
      ],
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'each', type: 'LOOP_START', config: { loopId: 'l', maxIterations: 3 } },
        { id: 'work', type: 'CODE', config: { code: 'return 1;' } },
        { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
        {
          id: 'route',
          type: 'ROUTE',
          config: {
            routes: [
              { condition: 'a', targetNodeId: 'start2', priority: 1 },
              { condition: 'b', targetNodeId: 'end', priority: 5 },
            ],
            defaultTargetNodeId: 'end',
          },
        },
        { id: 'start2', type: 'CODE', config: { code: 'return 2;' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'work' },
        { from: 'work', to: 'next' },
        { from: 'next', to: 'route' },
        { from: 'start2', to: 'end' },
      ],
    } as Workflow;
    const graph = buildGraph(workflow);
    expect(graph.loops.get('l')).toEqual({
      loopId: 'l',
      startId: 'each',
      endId: 'next',
      bodyIds: new Set(['work']),
    });
    expect(graph.transitions.get('next')).toEqual({ kind: 'loopEnd', loopStartId: 'each', exit: 'route' });
    expect(graph.successors.get('next')).toEqual(['each', 'route']);
    const route = graph.transitions.get('route');
    expect(route?.kind === 'route' && route.routes.map((r) => r.condition)).toEqual(['b', 'a']);
    expect(graph.maxSteps).toBe(1000);
  });

  it('throws a coded StepthreadError for an invalid workflow', () => {
    const bad = fixture('fork-join-three-paths.json');
    bad.nodes = bad.nodes.filter((node) => node.id !== 'merge');
    expect(() => buildGraph(bad)).toThrow(StepthreadError);
    try {
      buildGraph(bad);
    } catch (error) {
      expect((error as StepthreadError).code).toBe('UNKNOWN_EDGE_TARGET');
    }
  });
});
