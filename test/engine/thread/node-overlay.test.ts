/**
 * A copy's workflow edits where its nodes run (engine/thread/node-overlay.ts), and the deployed
 * workflow they are checked against on a stack (deployed-workflow-edits.ts), read back from a
 * compiled definition.
 */
import { describe, expect, it } from 'vitest';
import { compileWorkflow } from '../../../engine/asl/index.ts';
import { describedCompiled } from '../../../engine/asl/node-table.ts';
import type { RecordedWorkflowEdit } from '../../../engine/thread/copy-workflow-edits.ts';
import {
  checkDeployedWorkflowEdits,
  deployedWorkflowOf,
} from '../../../engine/thread/deployed-workflow-edits.ts';
import { withNodeOverlay } from '../../../engine/thread/node-overlay.ts';
import { everyNodeType } from '../asl/workflows.ts';

const at = '2026-01-01T00:00:00.000Z';
const scripted = {
  provider: 'scripted' as const,
  responses: ['new'],
  byNode: { ask: ['mine'], other: ['theirs'] },
};

describe('withNodeOverlay', () => {
  const llm = {
    id: 'ask',
    type: 'LLM' as const,
    config: { prompt: 'old', profileId: 'default' },
    profile: { provider: 'scripted' as const, responses: ['old'] },
  };

  it('sets the edited keys of this node and, for an LLM node, the edited profile it uses (its own replies only)', () => {
    const edits: RecordedWorkflowEdit[] = [
      { kind: 'nodeConfig', nodeId: 'ask', key: 'prompt', value: 'new', at },
      { kind: 'nodeConfig', nodeId: 'other', key: 'prompt', value: 'not mine', at },
      { kind: 'profile', profileId: 'default', value: scripted, at },
    ];
    expect(withNodeOverlay(llm, edits)).toEqual({
      ...llm,
      config: { prompt: 'new', profileId: 'default' },
      profile: { provider: 'scripted', responses: ['new'], byNode: { ask: ['mine'] } },
    });
    // Nothing of it changed: the node as given is kept.
    expect(llm.config.prompt).toBe('old');
  });

  it('switches an LLM node to an edited profile, and leaves alone a node no edit concerns', () => {
    const switched = withNodeOverlay(llm, [
      { kind: 'nodeConfig', nodeId: 'ask', key: 'profileId', value: 'fast', at },
      { kind: 'profile', profileId: 'fast', value: { provider: 'scripted', responses: ['quick'] }, at },
    ]);
    expect(switched.profile).toEqual({ provider: 'scripted', responses: ['quick'] });
    const untouched = withNodeOverlay(llm, [{ kind: 'profile', profileId: 'fast', value: scripted, at }]);
    expect(untouched).toBe(llm);
  });

  it('leaves nodes inside a SUBGRAPH alone (a top-level edit names the SUBGRAPH)', () => {
    const inner = { ...llm, enclosingSubgraphs: [{ subgraphId: 'nested' }] };
    expect(
      withNodeOverlay(inner, [{ kind: 'nodeConfig', nodeId: 'ask', key: 'prompt', value: 'x', at }]),
    ).toBe(inner);
  });
});

describe('the deployed workflow, from its definition', () => {
  const deployed = deployedWorkflowOf(describedCompiled(compileWorkflow(everyNodeType)));

  it('has every top-level node (fork branches included, a SUBGRAPH as itself) and the profiles its LLM nodes use', () => {
    expect(deployed.id).toBe('every-node-type');
    expect([...deployed.nodes.keys()].sort()).toEqual(
      [
        'again',
        'ask',
        'body',
        'calc',
        'call',
        'confirm',
        'count',
        'each',
        'end',
        'l1',
        'merge',
        'nested',
        'pick',
        'r1',
        'split',
        'start',
        'tidy',
      ].sort(),
    );
    expect(deployed.nodes.get('nested')?.type).toBe('SUBGRAPH');
    // Each LLM Task holds its own scripted replies; together they are the profile's.
    expect(deployed.profiles.get('default')).toEqual({
      provider: 'scripted',
      responses: ['ok'],
      byNode: { ask: ['a1'], l1: ['l'] },
    });
  });

  it('checks edits as far as the definition allows: the keys a handler reads, the schema, the routes the Choice has', () => {
    const recorded = checkDeployedWorkflowEdits(
      deployed,
      [],
      [
        { kind: 'nodeConfig', nodeId: 'l1', key: 'prompt', value: 'left, edited' },
        {
          kind: 'nodeConfig',
          nodeId: 'pick',
          key: 'routes',
          value: [{ condition: 'true', targetNodeId: 'each' }],
        },
      ],
      at,
    );
    expect(recorded.map((edit) => edit.kind === 'nodeConfig' && `${edit.nodeId}.${edit.key}`)).toEqual([
      'l1.prompt',
      'pick.routes',
    ]);
    const refused = (edit: Parameters<typeof checkDeployedWorkflowEdits>[2][number]) => {
      try {
        checkDeployedWorkflowEdits(deployed, [], [edit], at);
      } catch (error) {
        return (error as { code: string }).code;
      }
      return 'accepted';
    };
    expect(refused({ kind: 'nodeConfig', nodeId: 'split', key: 'forkStrategy', value: 'serial' })).toBe(
      'COPY_EDIT_NOT_DEPLOYABLE',
    );
    expect(refused({ kind: 'nodeConfig', nodeId: 'ask', key: 'tools', value: [] })).toBe(
      'COPY_EDIT_NOT_DEPLOYABLE',
    );
    expect(refused({ kind: 'nodeConfig', nodeId: 'nested', key: 'inputMapping', value: {} })).toBe(
      'COPY_EDIT_NOT_DEPLOYABLE',
    );
    expect(
      refused({
        kind: 'nodeConfig',
        nodeId: 'pick',
        key: 'routes',
        value: [{ condition: 'true', targetNodeId: 'end' }],
      }),
    ).toBe('COPY_EDIT_NOT_DEPLOYABLE');
    expect(refused({ kind: 'nodeConfig', nodeId: 'each', key: 'maxIterations', value: 'many' })).toBe(
      'INVALID_NODE_CONFIG',
    );
    expect(refused({ kind: 'nodeConfig', nodeId: 'ask', key: 'promt', value: 'x' })).toBe('UNKNOWN_KEY');
    expect(refused({ kind: 'profile', profileId: 'fast', value: scripted })).toBe('UNKNOWN_PROFILE');
  });
});
