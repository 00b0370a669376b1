/** Building coded errors with formatted paths. */
import type { CodedError, ErrorCode } from '../errors.ts';
import { formatPath, type Path } from '../model/paths.ts';

export function codedError(code: ErrorCode, message: string, path: Path, nodeId?: string): CodedError {
  const formatted = formatPath(path);
  return {
    code,
    message,
    ...(nodeId !== undefined ? { nodeId } : {}),
    ...(formatted ? { path: formatted } : {}),
  };
}
