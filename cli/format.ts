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
  return visible(where ? `${error.code} (${where}): ${message}` : `${error.code}: ${message}`);
}

/**
 * `text` with control characters written as `\u001b`: a message may quote a hostile file (a JSON
 * parse error shows its text), whose escape sequences would otherwise reach the terminal.
 */
export function visible(text: string): string {
  return text.replace(/\p{Cc}/gu, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The `--json` report shape: exactly these keys, optional ones only when present. */
export function jsonReport(
  valid: boolean,
  errors: readonly CodedError[],
  warnings: readonly CodedError[] = [],
): string {
  const shape = (error: CodedError) => ({
    code: error.code,
    message: error.message,
    ...(error.nodeId !== undefined ? { nodeId: error.nodeId } : {}),
    ...(error.path !== undefined ? { path: error.path } : {}),
  });
  const report = {
    valid,
    errors: errors.map(shape),
    // Only when there are some: what runs locally but a deploy refuses.
    ...(warnings.length > 0 ? { warnings: warnings.map(shape) } : {}),
  };
  return `${JSON.stringify(report, null, 2)}\n`;
}

/** A table's lines, header first: each column as wide as its widest cell, two spaces apart. */
export function tableLines(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) =>
    `${cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()}\n`;
  return [header, ...rows].map(line);
}
