/**
 * The `scripted` provider (functions/llm/scripted.ts) answers an LLM node from `byNode[<node id>]`,
 * then from `responses`. A `byNode` key that names no node of the workflow is never read: a typo
 * such as `clasify`, or a child workflow's node written `classify` where the run's id is
 * `sub.classify`. Its replies never come and the node silently falls back to `responses` (or fails
 * with none), so `validate` refuses it. Node ids are the ids the run uses: inside a SUBGRAPH
 * `<subgraph id>.<node id>`, as byNode reads them. A key naming a node that does not use the
 * profile, or is no LLM node, is left alone: it is unused, not misread.
 */
import type { CodedError } from '../errors.ts';
import type { Path } from '../model/paths.ts';
import type { Profile, Workflow } from '../model/schema.ts';
import { closestKey } from '../model/unknown-keys.ts';
import { codedError } from './report.ts';

export function checkScriptedProfiles(workflow: Workflow): CodedError[] {
  const nodeIds = new Set<string>();
  const llmIds: string[] = [];
  const profiles: Array<{ path: Path; profile: Profile }> = [];
  const visit = (level: Workflow, prefix: string, path: Path) => {
    for (const [name, profile] of Object.entries(level.profiles ?? {})) {
      profiles.push({ path: [...path, 'profiles', name], profile });
    }
    level.nodes.forEach((node, index) => {
      nodeIds.add(prefix + node.id);
      if (node.type === 'LLM') llmIds.push(prefix + node.id);
      if (node.type === 'SUBGRAPH') {
        visit(node.config.workflow, `${prefix}${node.id}.`, [...path, 'nodes', index, 'config', 'workflow']);
      }
    });
  };
  visit(workflow, '', []);

  const errors: CodedError[] = [];
  for (const { path, profile } of profiles) {
    if (profile.provider !== 'scripted') continue;
    for (const key of Object.keys(profile.byNode ?? {})) {
      if (nodeIds.has(key)) continue;
      const suggestion = llmIds.find((id) => id.endsWith(`.${key}`)) ?? closestKey(key, llmIds);
      errors.push(
        codedError(
          'UNKNOWN_NODE_REFERENCE',
          `byNode "${key}" names no node, so its replies are never given${llmIds.length === 0 ? '' : `; the LLM nodes are ${llmIds.map((id) => `"${id}"`).join(', ')}`}${suggestion ? `; did you mean "${suggestion}"?` : ''}`,
          [...path, 'byNode', key],
        ),
      );
    }
  }
  return errors;
}
