/**
 * s3rver's filesystem store, with the same files in the same layout (an existing data directory reads
 * as before), written and read with synchronous calls on the paths every request takes.
 *
 * s3rver's own store made about a dozen sequential round trips through libuv's thread pool per PUT
 * (stat the bucket, look for a CORS and a website configuration, mkdir, open/write/close the object,
 * then its .md5 and its metadata.json), each a hop to another thread and back: most of an S3 PUT's
 * wall time on loopback was this process waiting for them. The store serves one process (the data
 * directory's server, or a test's ephemeral services), so the calls are made in place, and bucket
 * configurations — which only the S3 API changes, through this store — are read once.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Readable } from 'node:stream';
import S3Bucket from 's3rver/lib/models/bucket.js';
import S3Object from 's3rver/lib/models/object.js';
import FilesystemStore from 's3rver/lib/stores/filesystem.js';

interface StoredObject {
  readonly bucket: string;
  readonly key: string;
  readonly content: Buffer | Readable;
  readonly metadata: Readonly<Record<string, unknown>>;
}

function bytesOf(content: Buffer | Readable): Promise<Buffer> {
  if (Buffer.isBuffer(content)) return Promise.resolve(content);
  // Events, not `for await`: the async iterator costs more than the few chunks it would carry.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    content.on('data', (chunk: Buffer | string) =>
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk)),
    );
    content.once('end', () => resolve(Buffer.concat(chunks)));
    content.once('error', reject);
  });
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

/** What s3rver keeps of an object's metadata (its putMetadata: allowed headers and x-amz-meta-*). */
function storedMetadata(metadata: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const name of S3Object.ALLOWED_METADATA) if (name in metadata) kept[name] = metadata[name];
  for (const [name, value] of Object.entries(metadata))
    if (name.startsWith('x-amz-meta-')) kept[name] = value;
  return kept;
}

export class LoopbackFilesystemStore extends FilesystemStore {
  /** Bucket and object configurations (CORS, website, ACL) by file path; null: none. */
  readonly #subresources = new Map<string, unknown>();

  override async getBucket(bucket: string): Promise<unknown> {
    try {
      const stat = statSync(this.getBucketPath(bucket));
      return stat.isDirectory() ? new S3Bucket(bucket, stat.birthtime) : null;
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  override async deleteBucket(bucket: string): Promise<void> {
    this.#subresources.clear();
    await super.deleteBucket(bucket);
  }

  override reset(): void {
    this.#subresources.clear();
    super.reset();
  }

  override async existsObject(bucket: string, key: string): Promise<boolean> {
    try {
      statSync(this.getResourcePath(bucket, key, 'object'));
      return true;
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
  }

  override async getMetadata(bucket: string, key: string): Promise<Record<string, unknown>> {
    const objectPath = this.getResourcePath(bucket, key, 'object');
    // Throws ENOENT for a missing object, as s3rver's does.
    const stat = statSync(objectPath);
    let stored: Record<string, unknown> | undefined;
    try {
      stored = JSON.parse(readFileSync(this.getResourcePath(bucket, key, 'metadata.json'), 'utf8'));
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
    let md5: string;
    try {
      md5 = readFileSync(`${objectPath}.md5`, 'utf8');
    } catch (error) {
      if (!isMissing(error)) throw error;
      md5 = createHash('md5').update(readFileSync(objectPath)).digest('hex');
      writeFileSync(`${objectPath}.md5`, md5);
    }
    return {
      ...stored,
      etag: JSON.stringify(md5),
      'last-modified': stat.mtime.toUTCString(),
      'content-length': stat.size,
    };
  }

  override async putMetadata(
    bucket: string,
    key: string,
    metadata: Readonly<Record<string, unknown>>,
    md5?: string,
  ): Promise<void> {
    if (md5) writeFileSync(this.getResourcePath(bucket, key, 'object.md5'), md5);
    writeFileSync(
      this.getResourcePath(bucket, key, 'metadata.json'),
      JSON.stringify(storedMetadata(metadata), null, 2),
    );
  }

  override async putObject(object: StoredObject): Promise<{ size: number; md5: string }> {
    const content = await bytesOf(object.content);
    const objectPath = this.getResourcePath(object.bucket, object.key, 'object');
    try {
      writeFileSync(objectPath, content);
    } catch (error) {
      // The key's first object under a prefix with no directory yet.
      if (!isMissing(error)) throw error;
      mkdirSync(dirname(objectPath), { recursive: true });
      writeFileSync(objectPath, content);
    }
    const md5 = createHash('md5').update(content).digest('hex');
    await this.putMetadata(object.bucket, object.key, object.metadata, md5);
    return { size: content.length, md5 };
  }

  override async getSubresource(
    bucket: string,
    key: string | undefined,
    resourceType: string,
  ): Promise<unknown> {
    const path = this.getResourcePath(bucket, key, `${resourceType}.xml`);
    if (this.#subresources.has(path)) return this.#subresources.get(path);
    const found = await super.getSubresource(bucket, key, resourceType);
    this.#subresources.set(path, found);
    return found;
  }

  override async putSubresource(
    bucket: string,
    key: string | undefined,
    resource: { type: string },
  ): Promise<void> {
    const path = this.getResourcePath(bucket, key, `${resource.type}.xml`);
    this.#subresources.delete(path);
    await super.putSubresource(bucket, key, resource);
    this.#subresources.delete(path);
  }

  override async deleteSubresource(
    bucket: string,
    key: string | undefined,
    resourceType: string,
  ): Promise<void> {
    const path = this.getResourcePath(bucket, key, `${resourceType}.xml`);
    this.#subresources.delete(path);
    await super.deleteSubresource(bucket, key, resourceType);
    this.#subresources.delete(path);
  }
}
