/** Human-readable rendering of coded errors: one line each. */
import type { CodedError } from '../engine/errors.ts';

export function formatCodedError(error: CodedError): string {
  const where = [error.path, error.nodeId !== undefined ? `node ${error.nodeId}` : undefined]
    .filter((part) => part !== undefined)
    .join(', ');
  // The path is shown already; keep each error on one line.
  const text =
    error.path && error.message.startsWith(`${error.path}: `)
      ? error.message.slice(error.path.length + 2)
      : error.message;
  const message = text.replace(/\s*\n\s*/g, ' ');
  return where ? `${error.code} (${where}): ${message}` : `${error.code}: ${message}`;
}

/** The `--json` report shape: exactly these keys, optional ones only when present. */
export function jsonReport(valid: boolean, errors: readonly CodedError[]): string {
  const report = {
    valid,
    errors: errors.map((error) => ({
      code: error.code,
      message: error.message,
      ...(error.nodeId !== undefined ? { nodeId: error.nodeId } : {}),
      ...(error.path !== undefined ? { path: error.path } : {}),
    })),
  };
  return `${JSON.stringify(report, null, 2)}\n`;
}
