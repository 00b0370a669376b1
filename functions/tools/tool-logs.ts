/**
 * What `code` tools print (`console.*`): each call's captured lines, as the sandbox bounds them, and
 * the console output of an LLM node's step, its tool calls' output one after another, each under a
 * line naming the tool and the call. The step's whole output keeps to the bounds a CODE node's
 * output has (guest-harness.ts), so a step record holds no more however many tools the model calls.
 */
import type { NodeLogs } from '../../engine/thread/types.ts';
import { MAX_LOG_ENTRIES, MAX_LOG_TOTAL_CHARS } from '../sandbox/guest-harness.ts';
import type { SandboxResult } from '../sandbox/index.ts';

/** A sandbox run's captured lines and cut counts; undefined when the code printed nothing. */
export function sandboxLogsOf(result: Pick<SandboxResult, 'logs' | 'logsCut'>): NodeLogs | undefined {
  const { logs, logsCut } = result;
  if (logs.length === 0 && logsCut === undefined) return undefined;
  return { lines: [...logs], ...(logsCut ? { cut: { lines: logsCut.lines, chars: logsCut.chars } } : {}) };
}

/** The line heading one tool call's output in its step's output. */
export function toolCallHeading(toolName: string, callId: string): string {
  return `[tool ${toolName}, call ${callId}]`;
}

/**
 * Collects the output of the tool calls of one step, in the order they ran. Headings count toward
 * the bounds: they are lines of the record like the others.
 */
export class ToolCallLogs {
  private readonly lines: string[] = [];
  private chars = 0;
  private cut = { lines: 0, chars: 0 };

  /** Adds one call's output under its heading; what no longer fits is counted as cut. */
  add(toolName: string, callId: string, logs: NodeLogs): void {
    this.cut.lines += logs.cut?.lines ?? 0;
    this.cut.chars += logs.cut?.chars ?? 0;
    for (const line of [toolCallHeading(toolName, callId), ...logs.lines]) this.keep(line);
  }

  /** The step's output so far, or undefined when no call printed. */
  logs(): NodeLogs | undefined {
    if (this.lines.length === 0 && this.cut.lines === 0 && this.cut.chars === 0) return undefined;
    const cut = this.cut.lines > 0 || this.cut.chars > 0 ? { cut: { ...this.cut } } : {};
    return { lines: [...this.lines], ...cut };
  }

  private keep(line: string): void {
    const room = MAX_LOG_TOTAL_CHARS - this.chars;
    if (this.lines.length >= MAX_LOG_ENTRIES || room <= 0) {
      this.cut.lines += 1;
      return;
    }
    let kept = line;
    if (line.length > room) {
      // As the sandbox cuts a line: the ellipsis takes the last character of the room.
      this.cut.chars += line.length - (room - 1);
      kept = `${line.slice(0, room - 1)}…`;
    }
    this.chars += kept.length;
    this.lines.push(kept);
  }
}
