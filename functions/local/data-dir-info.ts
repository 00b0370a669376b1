/** What a data directory's store server and its clients share: its file and its ready line. */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CodedError } from '../../engine/errors.ts';
import type { ResourceNames } from '../aws/target.ts';

export const SERVER_FILE = 'stepthread.server.json';

/** The server's second argument for a standby start (data-dir-daemon.ts, ServeOptions.standby). */
export const STANDBY_FLAG = '--standby';

/** The server entries' arguments: `<dataDir> [--standby]`. */
export function serveArguments(argv: readonly string[]): { dataDir?: string; standby: boolean } {
  const [dataDir, flag] = argv;
  return { ...(dataDir === undefined ? {} : { dataDir }), standby: flag === STANDBY_FLAG };
}

export interface ServerInfo {
  readonly pid: number;
  readonly dynamoEndpoint: string;
  readonly s3Endpoint: string;
  readonly controlPort: number;
  readonly names: ResourceNames;
}

/** The daemon's one line to the process that started it. */
export type ReadyLine = { ready: ServerInfo } | { locked: true } | { error: CodedError };

/**
 * The server `<dataDir>/stepthread.server.json` describes; undefined when there is none, or it is not
 * one a server wrote (truncated, edited, of another version): such a file is stale, and the next
 * server replaces it. Read as it was, it made every command fail with Node's own "port" argument error.
 */
export async function readServerInfo(dataDir: string): Promise<ServerInfo | undefined> {
  try {
    const info: unknown = JSON.parse(await readFile(join(dataDir, SERVER_FILE), 'utf8'));
    return isServerInfo(info) ? info : undefined;
  } catch {
    return undefined;
  }
}

function isServerInfo(value: unknown): value is ServerInfo {
  if (typeof value !== 'object' || value === null) return false;
  const info = value as Partial<Record<keyof ServerInfo, unknown>>;
  const names = info.names as Partial<Record<keyof ResourceNames, unknown>> | null | undefined;
  return (
    Number.isInteger(info.pid) &&
    (info.pid as number) > 0 &&
    Number.isInteger(info.controlPort) &&
    (info.controlPort as number) > 0 &&
    (info.controlPort as number) < 65536 &&
    isLoopbackUrl(info.dynamoEndpoint) &&
    isLoopbackUrl(info.s3Endpoint) &&
    typeof names === 'object' &&
    names !== null &&
    typeof names.tableName === 'string' &&
    typeof names.bucketName === 'string'
  );
}

function isLoopbackUrl(value: unknown): boolean {
  return typeof value === 'string' && /^http:\/\/127\.0\.0\.1:\d{1,5}$/.test(value);
}
