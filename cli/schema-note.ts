/**
 * What `validate` says about a workflow's `$schema` that names no file: an example copied from the
 * repository keeps `../engine/model/workflow.schema.json`, which exists only beside the checkout's
 * examples/. The note gives the value that reaches this stepthread's schema from the file's folder
 * (in a project, the one under node_modules/stepthread), for the editor's completion and checking.
 * A URL, or a path that exists, is left alone: stepthread itself never reads `$schema`.
 */
import { existsSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import { WORKFLOW_SCHEMA_PATH } from '../engine/model/json-schema.ts';
import { packageRoot } from './package-info.ts';

/** The note for the workflow `file` (resolved from `cwd`) read as `data`, or undefined when none is due. */
export function schemaReferenceNote(file: string, data: unknown, cwd: string): string | undefined {
  if (typeof data !== 'object' || data === null || !('$schema' in data)) return undefined;
  const reference = data.$schema;
  // A URL (https:, file:, …) is the editor's to fetch.
  if (typeof reference !== 'string' || /^[a-z][a-z0-9+.-]+:/i.test(reference)) return undefined;
  const folder = dirname(resolve(cwd, file));
  if (existsSync(resolve(folder, reference))) return undefined;
  const schema = resolve(packageRoot(), WORKFLOW_SCHEMA_PATH);
  const reaching = relative(folder, schema).split(sep).join('/');
  const value = reaching.startsWith('.') ? reaching : `./${reaching}`;
  return `note: ${file}: "$schema": ${JSON.stringify(reference)} names no file from its folder; stepthread's schema is "$schema": ${JSON.stringify(value)}`;
}
