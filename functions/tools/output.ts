/** A tool's return value as JSON data (it is stored in node results) and as text for the model. */
import { MAX_VALUE_DEPTH, valueDepth } from '../../engine/model/json-values.ts';
import { maxValueBytes } from '../stores/value-refs.ts';
import { ToolFailure } from './failure.ts';

/** Outputs are stored by reference, so the limit is the one on any stored value (default 50 MB). */
export const DEFAULT_MAX_OUTPUT_BYTES = maxValueBytes();

/**
 * The value as plain JSON data: `undefined` becomes null, class instances become their JSON form.
 * Values JSON cannot hold (cycles, BigInt) and outputs over `maxBytes` are the tool's failure.
 */
export function toJsonOutput(toolName: string, value: unknown, maxBytes: number): unknown {
  // Checked first: serialising a value thousands of levels deep would overflow the stack.
  if (valueDepth(value) > MAX_VALUE_DEPTH) {
    throw new ToolFailure(
      'VALUE_TOO_DEEP',
      `tool "${toolName}" returned a value nesting arrays and objects more than ${MAX_VALUE_DEPTH} levels deep`,
    );
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ToolFailure('TOOL_FAILED', `tool "${toolName}" returned a value that is not JSON: ${reason}`);
  }
  if (json === undefined) return null;
  const bytes = new TextEncoder().encode(json).byteLength;
  if (bytes > maxBytes) {
    throw new ToolFailure(
      'TOOL_FAILED',
      `tool "${toolName}" returned ${bytes} bytes of output, more than the ${maxBytes} allowed`,
    );
  }
  return JSON.parse(json);
}

/** Text for the model: a string output as it is, anything else as JSON. */
export function contentOf(output: unknown): string {
  return typeof output === 'string' ? output : JSON.stringify(output);
}
