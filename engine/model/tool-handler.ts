/**
 * A tool's `handler` in one normalised shape: the short string forms (`lambda:<arn>`,
 * `module:<path>#<export>`, `builtin:<name>`) and the object forms become the same value, and a
 * `lambda` handler always names at least one target.
 */
import {
  BUILTIN_TOOLS,
  type BuiltinToolName,
  type CodeToolHandler,
  type HttpToolHandler,
  type McpToolHandler,
  type ToolDefinition,
} from './schema.ts';

/** The export called when a module handler names none (the Lambda convention). */
export const DEFAULT_MODULE_EXPORT = 'handler';

export interface ModuleReference {
  /** As written: relative to the workflow file's folder, or absolute. */
  path: string;
  exportName: string;
}

/** A Lambda function (by ARN, on AWS), a local module (embedded runtime), or both. */
export type LambdaTarget =
  | { arn: string; module?: ModuleReference }
  | { arn?: undefined; module: ModuleReference };

export type ToolHandler =
  | ({ kind: 'lambda'; timeoutMs?: number } & LambdaTarget)
  | HttpToolHandler
  | CodeToolHandler
  | McpToolHandler
  | { kind: 'builtin'; name: BuiltinToolName };

export type ToolHandlerParse = { ok: true; handler: ToolHandler } | { ok: false; message: string };

const EXPORT_NAME = /^[A-Za-z_$][\w$]*$/;

export function parseToolHandler(handler: ToolDefinition['handler']): ToolHandlerParse {
  return typeof handler === 'string' ? parseHandlerString(handler) : parseHandlerObject(handler);
}

function parseHandlerString(text: string): ToolHandlerParse {
  const colon = text.indexOf(':');
  const scheme = colon === -1 ? text : text.slice(0, colon);
  const rest = colon === -1 ? '' : text.slice(colon + 1);
  switch (scheme) {
    case 'lambda':
      return rest === ''
        ? fail('"lambda:" must be followed by a function ARN')
        : { ok: true, handler: { kind: 'lambda', arn: rest } };
    case 'module': {
      const hash = rest.lastIndexOf('#');
      const module = moduleReference(
        hash === -1 ? rest : rest.slice(0, hash),
        hash === -1 ? undefined : rest.slice(hash + 1),
      );
      return typeof module === 'string' ? fail(module) : { ok: true, handler: { kind: 'lambda', module } };
    }
    case 'builtin':
      return isBuiltin(rest)
        ? { ok: true, handler: { kind: 'builtin', name: rest } }
        : fail(`unknown builtin tool "${rest}" (known: ${BUILTIN_TOOLS.join(', ')})`);
    default:
      return fail(
        `handler "${text}" is not "lambda:<arn>", "module:<path>#<export>" or "builtin:<name>", nor an object with a "kind"`,
      );
  }
}

function parseHandlerObject(handler: Exclude<ToolDefinition['handler'], string>): ToolHandlerParse {
  if (handler.kind !== 'lambda') return { ok: true, handler };
  const { arn, timeoutMs } = handler;
  const timeout = timeoutMs === undefined ? {} : { timeoutMs };
  if (handler.module === undefined) {
    if (handler.export !== undefined) return fail('"export" needs "module"');
    return arn === undefined
      ? fail('a lambda handler needs "arn" (on AWS) or "module" (locally), or both')
      : { ok: true, handler: { kind: 'lambda', arn, ...timeout } };
  }
  const module = moduleReference(handler.module, handler.export);
  if (typeof module === 'string') return fail(module);
  return { ok: true, handler: { kind: 'lambda', module, ...(arn === undefined ? {} : { arn }), ...timeout } };
}

/** The reference, or what is wrong with it. */
function moduleReference(path: string, exportName: string | undefined): ModuleReference | string {
  if (path.trim() === '') return 'a module handler needs a path';
  const name = exportName ?? DEFAULT_MODULE_EXPORT;
  if (!EXPORT_NAME.test(name)) return `"${name}" is not a valid export name`;
  return { path, exportName: name };
}

function isBuiltin(name: string): name is BuiltinToolName {
  return (BUILTIN_TOOLS as readonly string[]).includes(name);
}

function fail(message: string): ToolHandlerParse {
  return { ok: false, message };
}
