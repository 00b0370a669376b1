/**
 * The JavaScript a workflow hands to the CODE sandbox: each CODE node's `code` and each `code`
 * tool's, at every level. Checking that it compiles needs the sandbox's own parser (QuickJS), which
 * this pure layer cannot load, so validation lists the sources and the host checks them
 * (functions/sandbox/syntax.ts).
 */
import type { Path } from '../model/paths.ts';
import type { WorkflowView } from './view.ts';

export interface CodeSource {
  readonly code: string;
  /** Where the source sits in the workflow file (`nodes[2].config.code`, `tools.calc.handler.code`). */
  readonly path: Path;
  /** The CODE node that runs it; undefined for a tool's code. */
  readonly nodeId?: string;
  /** The tool whose handler it is; undefined for a CODE node. */
  readonly tool?: string;
}

export function codeSourcesOf(view: WorkflowView): CodeSource[] {
  const sources: CodeSource[] = [];
  for (const { name, path, definition } of view.toolEntries) {
    const handler = definition.handler;
    if (typeof handler !== 'string' && handler.kind === 'code')
      sources.push({ code: handler.code, path: [...path, 'handler', 'code'], tool: name });
  }
  for (const { node, id, path, child, unparsedCode } of view.nodes) {
    const code = node?.type === 'CODE' ? node.config.code : unparsedCode;
    if (code !== undefined) sources.push({ code, path: [...path, 'config', 'code'], nodeId: id });
    if (child) sources.push(...codeSourcesOf(child));
  }
  return sources;
}
