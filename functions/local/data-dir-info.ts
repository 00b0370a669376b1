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

export async function readServerInfo(dataDir: string): Promise<ServerInfo | undefined> {
  try {
    return JSON.parse(await readFile(join(dataDir, SERVER_FILE), 'utf8')) as ServerInfo;
  } catch {
    return undefined;
  }
}
