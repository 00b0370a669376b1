/**
 * Whether a workflow's CODE sources compile, checked by the sandbox's own parser: each source is
 * compiled in QuickJS exactly as a run compiles it, and never called. So a syntax error is reported
 * by `validate` and before a run starts, not when the run reaches the node.
 */
import type { CodedError } from '../../engine/errors.ts';
import { formatPath } from '../../engine/model/paths.ts';
import type { CodeSource } from '../../engine/validation/code-sources.ts';
import { runCode } from './index.ts';

/**
 * One coded error per source that does not compile. Sources are compiled one at a time, each
 * distinct source once, so a check keeps one warm worker instead of starting one per source.
 */
export async function codeSyntaxErrors(sources: readonly CodeSource[]): Promise<CodedError[]> {
  const compileErrors = new Map<string, string | undefined>();
  for (const { code } of sources) {
    if (compileErrors.has(code)) continue;
    const outcome = await runCode({ code, input: undefined, compileOnly: true });
    // Only a compile error is the code's fault; a sandbox that could not start says nothing about it.
    compileErrors.set(
      code,
      !outcome.ok && outcome.error.code === 'CODE_ERROR' ? outcome.error.message : undefined,
    );
  }
  return sources.flatMap((source): CodedError[] => {
    const message = compileErrors.get(source.code);
    if (message === undefined) return [];
    const owner = source.nodeId !== undefined ? `CODE node "${source.nodeId}"` : `tool "${source.tool}"`;
    return [
      {
        code: 'CODE_SYNTAX_ERROR',
        message: `${owner}: the code does not compile: ${message}`,
        ...(source.nodeId !== undefined ? { nodeId: source.nodeId } : {}),
        path: formatPath(source.path),
      },
    ];
  });
}
