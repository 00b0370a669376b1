// s3rver ships no type declarations; this covers the part stepthread uses.
declare module 's3rver' {
  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
    configureBuckets?: { name: string; configs?: (string | Uint8Array)[] }[];
  }
  class S3rver {
    constructor(options?: S3rverOptions);
    run(): Promise<import('node:net').AddressInfo>;
    close(): Promise<void>;
    reset(): void;
    httpServer?: import('node:http').Server;
    /** The store requests use (`ctx.store` reads it from `context`). */
    store: unknown;
    /** The Koa context prototype. */
    readonly context: { store: unknown };
    /** Its winston logger (the request logger middleware and the controllers log through it). */
    readonly logger: { silent: boolean };
    /** The Koa middleware, in order: s3rver's request logger first. */
    readonly middleware: ((...args: never[]) => unknown)[];
  }
  export default S3rver;
}

declare module 's3rver/lib/stores/filesystem.js' {
  /** s3rver's store: objects as files under `<directory>/<bucket>/`, each with .md5 and metadata.json. */
  class FilesystemStore {
    constructor(rootDirectory: string);
    readonly rootDirectory: string;
    getBucketPath(bucket: string): string;
    getResourcePath(bucket: string, key: string | undefined, resource: string): string;
    getBucket(bucket: string): Promise<unknown>;
    /** Makes the bucket's directory; returns the bucket. */
    putBucket(bucket: string): Promise<unknown>;
    deleteBucket(bucket: string): Promise<void>;
    reset(): void;
    existsObject(bucket: string, key: string): Promise<boolean>;
    getMetadata(bucket: string, key: string): Promise<Record<string, unknown>>;
    putMetadata(
      bucket: string,
      key: string,
      metadata: Readonly<Record<string, unknown>>,
      md5?: string,
    ): Promise<void>;
    putObject(object: unknown): Promise<{ size: number; md5: string }>;
    getSubresource(bucket: string, key: string | undefined, resourceType: string): Promise<unknown>;
    putSubresource(bucket: string, key: string | undefined, resource: { type: string }): Promise<void>;
    deleteSubresource(bucket: string, key: string | undefined, resourceType: string): Promise<void>;
  }
  export default FilesystemStore;
}

declare module 's3rver/lib/models/object.js' {
  const S3Object: {
    /** The metadata headers s3rver stores with an object (besides x-amz-meta-*). */
    readonly ALLOWED_METADATA: readonly string[];
  };
  export default S3Object;
}

declare module 's3rver/lib/models/bucket.js' {
  class S3Bucket {
    constructor(name: string, creationDate: Date);
  }
  export default S3Bucket;
}
