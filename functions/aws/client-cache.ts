/**
 * The clients clients.ts caches per target and resource names. Kept apart and free of SDK imports, so
 * what only ends a target (local services closing, a data directory's client letting go) does not load
 * the SDK for it.
 */
import type { AwsTarget } from './target.ts';

interface Entry {
  readonly clients: unknown;
  destroy(): void;
}

const cache = new Map<string, Entry>();

/** The clients cached under `key`, made (and remembered with how to destroy them) on first use. */
export function cachedClients<T>(key: string, make: () => T, destroy: (clients: T) => void): T {
  const cached = cache.get(key);
  if (cached) return cached.clients as T;
  const clients = make();
  cache.set(key, { clients, destroy: () => destroy(clients) });
  return clients;
}

/** Destroys and forgets the cached clients of one target (its endpoints are going away). */
export function releaseAwsClients(target: AwsTarget): void {
  const prefix = JSON.stringify([target]).slice(0, -1);
  for (const [key, entry] of cache) {
    if (!key.startsWith(`${prefix},`)) continue;
    entry.destroy();
    cache.delete(key);
  }
}
