/**
 * What the tools of a workflow need from AWS, for least-privilege IAM on the TOOL and LLM functions:
 * the Lambda functions they invoke and the secrets they read. Secrets can be listed exactly because
 * http templates must name each secret literally (engine/validation/tool-rules.ts).
 */
import type { ToolDefinition } from '../../engine/model/schema.ts';
import { parseToolHandler } from '../../engine/model/tool-handler.ts';
import { templateReferences } from '../../engine/validation/tool-rules.ts';

export interface ToolRequirements {
  /** Function ARNs (or names) of `lambda` tools, sorted, each once. */
  lambdaArns: string[];
  /** Secret names read by `http` and `mcp` tools (before any prefix), sorted, each once. */
  secretNames: string[];
}

/** Expects validated definitions; a handler or template that does not parse contributes nothing. */
export function toolRequirements(tools: Readonly<Record<string, ToolDefinition>>): ToolRequirements {
  const arns = new Set<string>();
  const secrets = new Set<string>();
  for (const definition of Object.values(tools)) {
    const parsed = parseToolHandler(definition.handler);
    if (!parsed.ok) continue;
    const { handler } = parsed;
    if (handler.kind === 'lambda' && handler.arn !== undefined) arns.add(handler.arn);
    if (handler.kind !== 'http' && handler.kind !== 'mcp') continue;
    // An mcp server's env is a stdio server's, which is never deployed.
    for (const template of [handler.url ?? '', ...Object.values(handler.headers ?? {})]) {
      try {
        for (const name of templateReferences(template).secrets) secrets.add(name);
      } catch {
        // Malformed templates are validation's to report.
      }
    }
  }
  return { lambdaArns: [...arns].sort(), secretNames: [...secrets].sort() };
}
