/** Coded failures thrown inside a tool call and turned into a ToolResult at its edge. */
import { type ErrorCode, StepthreadError } from '../../engine/errors.ts';
import type { ToolError } from './types.ts';

export class ToolFailure extends StepthreadError {
  readonly status: number | undefined;

  constructor(code: ErrorCode, message: string, options: { status?: number; cause?: unknown } = {}) {
    super(code, message, { cause: options.cause });
    this.name = 'ToolFailure';
    this.status = options.status;
  }
}

/** Any thrown value as a ToolError: coded errors keep their code, anything else is TOOL_FAILED. */
export function toToolError(error: unknown, toolName: string): ToolError {
  if (error instanceof StepthreadError) {
    const status = error instanceof ToolFailure ? error.status : undefined;
    return { code: error.code, message: error.message, ...(status === undefined ? {} : { status }) };
  }
  return { code: 'TOOL_FAILED', message: `tool "${toolName}" failed: ${describe(error)}` };
}

/** A thrown value's message, with the cause of a network error ("fetch failed: ECONNREFUSED …"). */
export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}

/**
 * Failures that are not the call's: the tool's declaration (a schema that does not compile, a url
 * or module export that cannot be used) or stepthread's own (NODE_EXECUTION_FAILED: the argument
 * checker did not load). Every call fails alike whatever the arguments, so no reply of the model
 * mends them. A TOOL node fails with any failure; an LLM node fails with these too, instead of
 * showing them to the model and completing.
 */
const REQUEST_FAILURES: ReadonlySet<ErrorCode> = new Set([
  'INVALID_TOOL_DEFINITION',
  'NODE_EXECUTION_FAILED',
]);

export function failsTheRequest(error: ToolError): boolean {
  return REQUEST_FAILURES.has(error.code);
}
