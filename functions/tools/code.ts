/**
 * `code` tools: JavaScript in the CODE sandbox with `input` = the arguments; its errors keep their
 * codes. What the code printed goes to `onLogs`, whether it returned or threw.
 */
import type { CodeToolHandler } from '../../engine/model/schema.ts';
import type { NodeLogs } from '../../engine/thread/types.ts';
import { runCode, type SandboxRequest } from '../sandbox/index.ts';
import { ToolFailure } from './failure.ts';
import { sandboxLogsOf } from './tool-logs.ts';
import type { ToolEnvironment } from './types.ts';

export async function callCodeTool(
  toolName: string,
  handler: CodeToolHandler,
  args: unknown,
  env: ToolEnvironment,
  maxOutputBytes: number,
  onLogs: (logs: NodeLogs) => void,
): Promise<unknown> {
  const request: SandboxRequest = {
    code: handler.code,
    input: args,
    maxOutputBytes,
    ...(handler.timeoutMs === undefined ? {} : { timeoutMs: handler.timeoutMs }),
    ...(handler.memoryLimitMb === undefined ? {} : { memoryLimitMb: handler.memoryLimitMb }),
  };
  const result = await (env.sandbox ? env.sandbox.run(request) : runCode(request));
  // Prints before a throw explain it: kept either way.
  const logs = sandboxLogsOf(result);
  if (logs) onLogs(logs);
  if (result.ok) return result.output;
  // The sandbox's message already names the line.
  throw new ToolFailure(result.error.code, `tool "${toolName}": ${result.error.message}`);
}
